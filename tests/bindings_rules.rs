//! Rules the bindings once made and now only translate (#35), pinned natively: what the
//! `onEvent` hook is told.
#![cfg(not(target_arch = "wasm32"))]

use odds_gate::core::base::json::write_json;
use odds_gate::core::gate::action::Event;
use odds_gate::core::gates::hook::told;
use odds_gate::core::rules::learn::Estimate;
use odds_gate::core::rules::policy::Reason;

/// What the hook gets, as JSON (times as they are: the bindings make them `Date`s).
fn json(event: Event) -> Option<String> {
    let told = told("scope-a", &event, || 64, |at| at)?;
    let mut out = String::new();
    write_json(&told, usize::MAX, &mut |piece| out.push_str(piece)).unwrap();
    Some(out)
}

#[test]
fn the_hook_is_told_each_event_in_the_words_users_see() {
    let call = Default::default();
    assert_eq!(json(Event::Admitted { call, wait_ms: 5.0 }), None);
    let said = [
        (
            Event::Throttled {
                call,
                retry_after_ms: None,
            },
            r#"{"type":"throttled","scope":"scope-a","retryAfterMs":null}"#,
        ),
        (
            Event::Retry {
                call,
                attempt: 2,
                delay_ms: 250.0,
                server_delay: true,
            },
            r#"{"type":"retry","scope":"scope-a","attempt":2,"delayMs":250,"serverDelay":true}"#,
        ),
        (
            Event::Abandoned {
                call,
                reason: Reason::Attempts,
                attempts: 3,
            },
            r#"{"type":"abandoned","scope":"scope-a","reason":"attempts","attempts":3}"#,
        ),
        (
            Event::QuotaProbe {
                exhausted: true,
                answered: false,
            },
            r#"{"type":"quota-probe","scope":"scope-a","exhausted":true,"answered":false}"#,
        ),
        (
            Event::StoreDown,
            r#"{"type":"store-down","scope":"scope-a"}"#,
        ),
        (Event::StoreUp, r#"{"type":"store-up","scope":"scope-a"}"#),
        (
            Event::NoRoom,
            r#"{"type":"shared-memory-full","scope":"scope-a","slots":64}"#,
        ),
    ];
    for (event, json_said) in said {
        assert_eq!(json(event).as_deref(), Some(json_said));
    }
    let learned = json(Event::Learned(Estimate {
        burst: Some(5.0),
        per_second: 2.0,
        at_least: 1.5,
        confidence: 0.75,
        last_throttle: Some(10.0),
    }));
    let expected = r#"{"type":"learned","scope":"scope-a","learned":{"burst":5,"perSecond":2,"atLeast":1.5,"confidence":0.75,"lastThrottle":10}}"#;
    assert_eq!(learned.as_deref(), Some(expected));
}

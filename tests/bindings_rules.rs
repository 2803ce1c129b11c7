//! Rules the bindings once made and now only translate (#35), pinned natively: what the
//! `onEvent` hook is told, the options' defaults and a lane's retry budget, which ends of a led
//! request are the gate's refusals (for the cache), and the typed errors' messages, and
//! `quota` as given to `createFetch`, and
//! what an attempt's end means, the cache's key and numbers for `cache.js`, and which unread
//! bodies are drained, what the metrics' histograms record, who shares a cache, a request's
//! kind of body, and where the quota probe asks.
#![cfg(not(target_arch = "wasm32"))]

use odds_gate::core::base::histogram::bounds_seconds;
use odds_gate::core::gate::action::{Event, Measured};
use odds_gate::core::gate::respond::drains;
use odds_gate::core::gates::hook::told;
use odds_gate::core::gates::profile::{LaneAsks, THREADS, TYPED_ERRORS};
use odds_gate::core::gates::scope::{request_key, Scope};
use odds_gate::core::rules::cache::Refusal;
use odds_gate::core::rules::cache_flow::{CacheAction, How};
use odds_gate::core::rules::cache_request::CacheRequest;
use odds_gate::core::rules::classify::Body;
use odds_gate::core::rules::classify::{Ended, Failure, Outcome};
use odds_gate::core::rules::credits::{Spread, SpreadGiven};
use odds_gate::core::rules::learn::Estimate;
use odds_gate::core::rules::policy::{Abandoned, Reason};
use odds_gate::core::rules::quota::exhausted_message;
use odds_gate::core::rules::quota::probe_url;
use odds_gate::core::rules::shared_cache::Sharing;

/// What the hook gets, as JSON (times as they are: the bindings make them `Date`s; a float
/// keeps serde_json's `.0`, which JavaScript's numbers do not show).
fn json(event: Event) -> Option<String> {
    let told = told("scope-a", &event, || 64, |at| at)?;
    Some(serde_json::to_string(&told).unwrap())
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
            r#"{"type":"retry","scope":"scope-a","attempt":2,"delayMs":250.0,"serverDelay":true}"#,
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
    let expected = r#"{"type":"learned","scope":"scope-a","learned":{"burst":5.0,"perSecond":2.0,"atLeast":1.5,"confidence":0.75,"lastThrottle":10.0}}"#;
    assert_eq!(learned.as_deref(), Some(expected));
}

#[test]
fn threads_share_and_errors_are_the_servers_where_left_out() {
    const { assert!(THREADS) };
    const { assert!(!TYPED_ERRORS) };
}

#[test]
fn a_lanes_retries_draw_on_its_wrappers_budget() {
    assert_eq!(LaneAsks::own_retry(false), Ok(()));
    let refused = LaneAsks::own_retry(true).unwrap_err();
    assert!(refused.is_shape(), "a TypeError");
    assert_eq!(
        refused.message(|n| n.to_string()),
        "A lane's retries draw on its wrapper's retry budget: set `retry.budget` in \
         createFetch, not in lane()"
    );
}

#[test]
fn a_response_is_the_gates_refusal_only_when_marked_as_the_quotas_answer_given_again() {
    assert_eq!(
        Refusal::marked(Some("quota-exhausted")),
        Some(Refusal::Quota)
    );
    assert_eq!(Refusal::marked(None), None, "a plain response");
    assert_eq!(Refusal::marked(Some("other")), None);
}

#[test]
fn typed_errors_say_why_and_how_far() {
    let mut a = Abandoned {
        reason: Reason::Attempts,
        attempts: 3,
        status: Some(503),
        retry_after_ms: None,
    };
    assert_eq!(
        a.message(),
        "odds-gate gave up on the request (attempts) after 3 attempt(s), last status 503"
    );
    a.status = None;
    assert_eq!(
        a.message(),
        "odds-gate gave up on the request (attempts) after 3 attempt(s)"
    );
    assert_eq!(
        exhausted_message(Some("2026-12-31T00:00:00.000Z")),
        "The API key's monthly quota is spent (until 2026-12-31T00:00:00.000Z); calls fail fast \
         instead of waiting"
    );
    assert_eq!(
        exhausted_message(None),
        "The API key's monthly quota is spent (until reset); calls fail fast instead of waiting"
    );
}

#[test]
fn quota_as_given_reads_its_costs_then_means_what_the_core_says() {
    let read = |raw: &str| -> Result<Vec<(String, f64)>, String> {
        match raw {
            "" => Ok(Vec::new()),
            "history" => Ok(vec![("/odds/history".into(), 5.0)]),
            _ => Err(format!("not costs: {raw}")),
        }
    };
    let given = SpreadGiven {
        spread: Some(true),
        costs: "history",
        ..SpreadGiven::default()
    };
    let (settings, _) = given.costs(read).unwrap().spread().unwrap().unwrap();
    assert_eq!(settings, Spread::DEFAULT, "the defaults fill in");
    let off = SpreadGiven {
        costs: "",
        ..SpreadGiven::default()
    };
    assert_eq!(
        off.costs(read).unwrap().spread().unwrap(),
        None,
        "no spread where left out"
    );
    let bad = SpreadGiven {
        reserve: Some(1.0),
        costs: "",
        ..SpreadGiven::default()
    };
    assert!(
        bad.costs(read).unwrap().spread().is_err(),
        "checked even when off"
    );
    let wrong = SpreadGiven {
        costs: "five",
        ..SpreadGiven::default()
    };
    assert_eq!(wrong.costs(read).unwrap_err(), "not costs: five");
}

#[test]
fn an_attempts_end_is_a_response_a_failure_or_the_callers_abort() {
    let ends = [0, 1, 2, 3, 4, 9].map(Ended::from_code);
    let expected = [
        Ended::Response,
        Ended::Failed,
        Ended::TimedOut,
        Ended::CallerAborted,
        Ended::Invalid,
        Ended::Failed,
    ];
    assert_eq!(ends, expected);
    let outcomes = expected.map(|e| e.failure().map(Failure::outcome));
    let said = [
        None,
        Some(Outcome::Network),
        Some(Outcome::Timeout),
        None,
        Some(Outcome::Invalid),
        Some(Outcome::Network),
    ];
    assert_eq!(outcomes, said);
    assert_eq!(
        Failure::UNSENT.outcome(),
        Outcome::Network,
        "unsent: as the network"
    );
}

#[test]
fn the_cache_keys_a_get_without_a_body_and_answers_cache_js_in_numbers() {
    let asked = CacheRequest::new("", [("X-API-Key", "k1"), ("Accept", "*/*")]);
    let by = (&asked, &[][..]);
    let key = request_key((Some("k1"), None), ("GET", Body::None), "/a".into(), by);
    let scope = Scope::of(Some("k1"), None);
    let identity = asked.identity("/a", &[]).expect("a credential");
    assert_eq!(key, Some((scope, "/a".to_string(), identity)));
    for (method, body) in [
        ("POST", Body::None),
        ("GET", Body::Reusable),
        ("HEAD", Body::None),
    ] {
        let key = request_key((Some("k1"), None), (method, body), "/a".into(), by);
        assert_eq!(key, None, "{method} {body:?}");
    }
    let stale = CacheAction::Answer {
        call: 3,
        entry: 7,
        how: How::Stale,
        age_s: 12.0,
    };
    assert_eq!(stale.words(), [2.0, 3.0, 7.0, 12.0]);
    let take = CacheAction::Take {
        leader: 4,
        give: true,
        ttl: false,
    };
    assert_eq!(take.words(), [9.0, 4.0, 1.0, 0.0]);
    let put = CacheAction::Put {
        leader: 4,
        fresh_ms: 500.0,
        age_s: 3.0,
    };
    assert_eq!(put.words(), [12.0, 4.0, 500.0, 3.0]);
    assert_eq!(
        CacheAction::Done { leader: 4 }.words(),
        [16.0, 4.0, 0.0, 0.0]
    );
}

#[test]
fn a_body_nobody_reads_is_drained_up_to_64_kib_and_cancelled_past() {
    assert!(drains(0));
    assert!(drains(64 * 1024));
    assert!(!drains(64 * 1024 + 1));
}

#[test]
fn the_histograms_record_waits_and_the_gates_own_backoffs_in_seconds() {
    let call = Default::default();
    let wait = Event::Admitted {
        call,
        wait_ms: 250.0,
    };
    assert_eq!(wait.measured(), Some(Measured::Wait(0.25)));
    let retry = |server_delay| Event::Retry {
        call,
        attempt: 2,
        delay_ms: 1_500.0,
        server_delay,
    };
    assert_eq!(retry(false).measured(), Some(Measured::Backoff(1.5)));
    assert_eq!(retry(true).measured(), None, "a Retry-After is a cooldown");
    assert_eq!(Event::StoreDown.measured(), None);
    let bounds = bounds_seconds();
    assert_eq!(bounds.len(), 14);
    assert!(bounds.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn who_shares_a_cache_what_body_a_request_has_and_where_the_probe_asks() {
    let codes = [
        Sharing::code(false, true, true),
        Sharing::code(true, false, false),
        Sharing::code(true, false, true),
        Sharing::code(true, true, false),
    ];
    assert_eq!(codes, [0, 0, 1, 2]);
    let bodies = ["r", "s", "o", "", "x"].map(Body::from_letter);
    let expected = [
        Body::Reusable,
        Body::Stream,
        Body::OneShot,
        Body::None,
        Body::None,
    ];
    assert_eq!(bodies, expected);
    let request = "https://api.odds-api.net/v1/events/1/odds/snapshot";
    let derived = Some("https://api.odds-api.net/v1/usage".to_string());
    assert_eq!(probe_url(None, request), derived);
    let given = Some("http://127.0.0.1:9/usage".to_string());
    assert_eq!(
        probe_url(given.as_deref(), request),
        given,
        "the option wins"
    );
    assert_eq!(probe_url(None, "not a url"), None);
}

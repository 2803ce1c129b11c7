//! The monthly quota: bare 429s and a body naming the quota start the `/usage` probe, the queue
//! stops for it, account calls pass, and probes that confirm nothing are spaced out.

use odds_gate::core::gate::action::GateAction;
use odds_gate::core::gate::ids::CallId;
use odds_gate::core::gate::respond::BodyFacts;
use odds_gate::core::parse::feedback::Feedback;
use odds_gate::core::rules::quota::Usage;

use super::*;

#[test]
fn three_bare_429s_start_one_probe_and_a_spent_quota_fails_everyone_fast() {
    let mut h = Harness::new(
        gate(10.0, 10.0, None),
        Box::new(|_, _, _| Reply::status(429, &[])),
    );
    h.usage = Some(Usage {
        used: 5.0,
        limit: 5.0,
        period_end: Some(1e9),
    });
    for _ in 0..8 {
        h.start_at(0.0, defaults());
    }
    h.run();
    let probes = h.sent().iter().filter(|s| s.probe).count();
    assert_eq!(probes, 1, "one diagnostic call for the whole gate");
    assert!((0..8).all(|i| h.end(i) == Some(End::Exhausted { until: Some(1e9) })));
    let before = h.sent().len();
    h.start_at(h.now, defaults());
    h.run();
    assert_eq!(h.end(8), Some(End::Exhausted { until: Some(1e9) }));
    assert_eq!(
        h.sent().len(),
        before,
        "new calls fail fast without a request"
    );
    let now = h.now;
    h.gate().reset_quota(now);
    assert!(matches!(
        h.figures().quota,
        Some(odds_gate::core::rules::quota::QuotaState::Open)
    ));
}

#[test]
fn a_429_body_naming_the_quota_starts_the_probe_at_once() {
    let mut h = Harness::new(
        gate(10.0, 10.0, None),
        scripted(vec![Reply::status(429, &[("Retry-After", "1")])
            .saying("quota_exceeded", "Monthly API credits exhausted")]),
    );
    h.usage = Some(Usage {
        used: 1.0,
        limit: 1.0,
        period_end: None,
    });
    h.start_at(0.0, defaults());
    h.run();
    assert_eq!(h.end(0), Some(End::Exhausted { until: None }));
}

#[test]
fn the_line_stops_at_the_first_quota_answer_until_the_probe_has_spoken() {
    // Burst 1 at 2/s: four calls wait in the queue behind the first, whose answer names the quota.
    let quota = || {
        Reply::status(429, &[])
            .saying("quota_exceeded", "Monthly API credits exhausted")
            .after(10.0)
    };
    for spent in [true, false] {
        let mut h = Harness::new(gate(1.0, 2.0, None), scripted(vec![quota()]));
        h.usage = Some(Usage {
            used: if spent { 5.0 } else { 1.0 },
            limit: 5.0,
            period_end: None,
        });
        for _ in 0..5 {
            h.start_at(0.0, defaults());
        }
        h.run();
        let sent: Vec<bool> = h.sent().iter().map(|s| s.probe).collect();
        if spent {
            // The probe goes next, ahead of the four; its answer fails them all unsent.
            assert_eq!(sent, vec![false, true]);
            assert!((0..5).all(|i| h.end(i) == Some(End::Exhausted { until: None })));
        } else {
            // Not spent: the queue goes on behind the probe, in call order.
            assert_eq!(sent[..2], [false, true]);
            assert_eq!(
                h.sent().len(),
                2 + 4 + 1,
                "four waiting, and the first's retry"
            );
            assert!((0..5).all(|i| h.end(i) == Some(End::Deliver)));
        }
    }
}

/// Every action `gate` has at `now`, in order.
fn actions(gate: &mut Gate, now: Millis) -> Vec<GateAction> {
    std::iter::from_fn(|| gate.poll_action(now)).collect()
}

#[test]
fn the_kept_quota_answer_is_given_again_until_the_quota_takes_an_answer_or_is_reset() {
    let mut g = gate(10.0, 10.0, None);
    let names_quota = BodyFacts {
        code: Some("quota_exceeded".into()),
        detail: None,
    };
    let call = g.start(0.0, defaults(), 0);
    assert!(matches!(
        actions(&mut g, 0.0)[..],
        [GateAction::Send { .. }]
    ));
    g.responded_with(1.0, call, 429, Feedback::default());
    assert!(matches!(
        actions(&mut g, 1.0)[..],
        [.., GateAction::Dispose { read: true, .. }]
    ));
    // The driver read the 429 whole: the gate keeps it, and the body starts the probe.
    assert!(g.keeps_answer(&names_quota));
    g.disposed(2.0, call, Some(names_quota.clone()));
    let probe = match actions(&mut g, 2.0)[..] {
        [GateAction::StartProbe { probe, .. }, GateAction::Send { call: sent, .. }]
            if sent == probe =>
        {
            probe
        }
        ref other => panic!("{other:?}"),
    };
    // The probe's own 200 spends no quota: the answer stays.
    g.responded_with(3.0, probe, 200, Feedback::default());
    assert!(!actions(&mut g, 3.0).contains(&GateAction::DropAnswer));
    let spent = Usage {
        used: 5.0,
        limit: 5.0,
        period_end: None,
    };
    g.usage(4.0, probe, Some(spent));
    let exhausted = End::Exhausted { until: None };
    let settled = |actions: Vec<GateAction>| -> Vec<(CallId, End, bool)> {
        let settle = |a| match a {
            GateAction::Settle { call, end, again } => Some((call, end, again)),
            _ => None,
        };
        actions.into_iter().filter_map(settle).collect()
    };
    assert_eq!(
        settled(actions(&mut g, 4.0)),
        [(call, exhausted, true), (probe, End::Deliver, false)]
    );
    // A newcomer is refused with it too (with `typedErrors`, a `QuotaExhaustedError`), until
    // the quota is declared back.
    let late = g.start(5.0, defaults(), 1);
    let typed = CallSpec {
        typed_errors: true,
        ..CallSpec::default()
    };
    let typed = g.start(5.0, typed, 2);
    assert_eq!(
        settled(actions(&mut g, 5.0)),
        [(late, exhausted, true), (typed, exhausted, false)]
    );
    g.reset_quota(6.0);
    assert_eq!(actions(&mut g, 6.0), [GateAction::DropAnswer]);
    // A 429 that names nothing is kept when none is; the quota's next answer lets it go.
    let mut g = gate(10.0, 10.0, None);
    assert!(g.keeps_answer(&BodyFacts::default()));
    assert!(!g.keeps_answer(&BodyFacts::default()), "the first stays");
    let call = g.start(0.0, defaults(), 0);
    actions(&mut g, 0.0);
    g.responded_with(1.0, call, 200, Feedback::default());
    let after = actions(&mut g, 1.0);
    assert_eq!(after[0], GateAction::DropAnswer);
    assert_eq!(settled(after), [(call, End::Deliver, false)]);
}

#[test]
fn account_calls_pass_a_spent_quota_through_the_queue() {
    // Three bare 429s; the probe finds the quota spent. Then a GET /usage (call 3) is admitted
    // and answered, while a snapshot (call 4) fails fast, unsent.
    let mut h = Harness::new(
        gate(1.0, 2.0, None),
        Box::new(|_, i, _| match i {
            3 => Reply::ok(),
            _ => Reply::status(429, &[]),
        }),
    );
    h.usage = Some(Usage {
        used: 5.0,
        limit: 5.0,
        period_end: None,
    });
    for _ in 0..3 {
        h.start_at(0.0, defaults());
    }
    h.run();
    assert!((0..3).all(|i| h.end(i) == Some(End::Exhausted { until: None })));
    let account = CallSpec {
        account: true,
        ..defaults()
    };
    let at = h.now;
    h.start_at(at, account.clone());
    h.start_at(at, defaults());
    h.run();
    assert_eq!(h.end(3), Some(End::Deliver));
    assert_eq!(h.attempts_of(3).len(), 1, "through the queue, one token");
    assert_eq!(h.end(4), Some(End::Exhausted { until: None }));
    assert!(h.attempts_of(4).is_empty());
    // Calls waiting in the queue when the quota closes: the account call stays and goes.
    let mut h = Harness::new(
        gate(1.0, 1.0, None),
        Box::new(|_, i, _| match i {
            4 => Reply::ok(),
            _ => Reply::status(429, &[]),
        }),
    );
    h.usage = Some(Usage {
        used: 5.0,
        limit: 5.0,
        period_end: None,
    });
    for _ in 0..3 {
        h.start_at(0.0, defaults());
    }
    h.start_at(0.0, defaults());
    h.start_at(0.0, account);
    h.run();
    assert_eq!(h.end(3), Some(End::Exhausted { until: None }));
    assert_eq!(h.end(4), Some(End::Deliver));
}

#[test]
fn probes_that_confirm_nothing_are_spaced_by_the_backoff() {
    // 429s without Retry-After for 20 s, and /usage failing every time.
    let mut h = Harness::new(
        gate(50.0, 50.0, None),
        Box::new(|_, _, _| Reply::status(429, &[]).after(5.0)),
    );
    let policy = RetryPolicy {
        max_attempts: 100,
        backoff: Backoff::new(50.0, 100.0).unwrap(),
        time_budget_ms: 20_000.0,
        ..RetryPolicy::default()
    };
    for i in 0..20 {
        h.start_at(f64::from(i) * 10.0, retrying(policy.clone()));
    }
    h.run();
    let probes: Vec<Millis> = h.sent().iter().filter(|s| s.probe).map(|s| s.at).collect();
    // 2 s, 4 s, 8 s apart (and the next 429, 20 to 25 ms later): four in 20 s, however many
    // 429s came.
    assert_eq!(probes.len(), 4, "{probes:?}");
    for (pair, gap) in probes.windows(2).zip([2_000.0, 4_000.0, 8_000.0]) {
        let after = pair[1] - pair[0] - gap;
        assert!((0.0..30.0).contains(&after), "{probes:?}");
    }
}

//! Failures that hold the whole gate (see `Streak`) and cooldowns: before any answer, the third
//! in a row, the server's delay instead, and a `Retry-After` too large to hold.

use odds_gate::core::gate::action::GateAction;
use odds_gate::core::parse::feedback::{Feedback, MAX_DELAY_MS};
use odds_gate::core::rules::classify::Failure;

use super::*;

/// Sends one call with `spec` on `gate` at `now`, or as soon after as the gate lets it go,
/// and answers it with `status` (and `retry_after_ms`), or fails it when `status` is `None`.
/// The call must not retry (no policy, or one attempt). When it went.
fn answered(
    gate: &mut Gate,
    now: Millis,
    spec: CallSpec,
    status: Option<u16>,
    retry_after_ms: Option<Millis>,
) -> Millis {
    let now = now.max(gate.cooldown_until());
    let rank = gate.figures(now).requests;
    let call = gate.start(now, spec, rank);
    while let Some(action) = gate.poll_action(now) {
        assert!(
            !matches!(action, GateAction::Send { call: c, .. } if c != call),
            "only the new call goes"
        );
    }
    assert!(gate.in_flight(call), "sent at {now}");
    match status {
        Some(status) => {
            let feedback = Feedback {
                retry_after_ms,
                ..Feedback::default()
            };
            gate.responded_with(now, call, status, feedback);
        }
        None => gate.failed(now, call, NETWORK),
    }
    while let Some(action) = gate.poll_action(now) {
        if let GateAction::Dispose { call, .. } = action {
            gate.disposed(now, call, None);
        }
    }
    now
}

/// A call that tries once: its policy's backoff is the one the gate holds with.
fn once(base_ms: Millis, cap_ms: Millis) -> CallSpec {
    retrying(RetryPolicy {
        max_attempts: 1,
        backoff: Backoff::new(base_ms, cap_ms).unwrap(),
        ..RetryPolicy::default()
    })
}

const NETWORK: Failure = Failure::Rejected {
    request_valid: true,
};

#[test]
fn before_any_answer_a_failure_holds_the_whole_gate_and_the_held_spend_no_attempt() {
    let mut h = Harness::new(
        gate(10.0, 10.0, None),
        scripted(vec![Reply::status(503, &[])]),
    );
    for _ in 0..4 {
        h.start_at(0.0, defaults());
    }
    h.run();
    // The first 503 held the gate for uniform(0, 2 s): the other three went when it ended, as
    // first attempts, and call 0's retry no earlier.
    let held_until = h.attempts_of(1)[0];
    assert!((1.0..2_000.0).contains(&held_until), "{held_until}");
    for i in 1..4 {
        assert_eq!(h.attempts_of(i), [held_until], "call {i}");
        assert_eq!(h.end(i), Some(End::Deliver));
    }
    assert!(h.attempts_of(0)[1] >= held_until);
    assert_eq!(h.end(0), Some(End::Deliver));
}

#[test]
fn once_answered_only_the_third_failure_in_a_row_holds_and_an_answer_ends_the_run() {
    let mut g = gate(100.0, 100.0, None);
    let mut now = answered(&mut g, 0.0, once(100.0, 60_000.0), Some(200), None);
    for status in [Some(503), None] {
        now = answered(&mut g, now + 10.0, once(100.0, 60_000.0), status, None);
        assert_eq!(g.cooldown_until(), 0.0, "failure {status:?} holds nothing");
    }
    // The third in a row holds uniform(0, base), the fourth uniform(0, 2 base), ...
    for ceiling in [100.0, 200.0, 400.0, 800.0] {
        now = answered(&mut g, now + 10.0, once(100.0, 60_000.0), Some(502), None);
        let hold = g.cooldown_until() - now;
        assert!(hold > 0.0 && hold < ceiling, "{hold} under {ceiling}");
    }
    // An answer that is not a failure (a 404, a 429: the server is up) ends the run.
    for status in [404, 429] {
        now = answered(
            &mut g,
            now + 10.0,
            once(100.0, 60_000.0),
            Some(status),
            None,
        );
        let held = g.cooldown_until();
        for _ in 0..2 {
            now = answered(&mut g, now + 10.0, once(100.0, 60_000.0), Some(503), None);
            assert_eq!(g.cooldown_until(), held, "after a {status}");
        }
        now = answered(&mut g, now + 10.0, once(100.0, 60_000.0), Some(503), None);
        assert!(
            g.cooldown_until() > now,
            "the third again, after a {status}"
        );
    }
}

#[test]
fn a_run_holds_for_the_servers_retry_after_instead_and_never_past_the_cap() {
    let mut g = gate(100.0, 100.0, None);
    let mut now = answered(&mut g, 0.0, once(100.0, 250.0), Some(200), None);
    for _ in 0..12 {
        now = answered(&mut g, now + 10.0, once(100.0, 250.0), Some(504), None);
        assert!(g.cooldown_until() < now + 250.0, "capMs caps the cooldown");
    }
    // A 503's Retry-After is the cooldown, exactly: not jittered, not capped.
    now = answered(
        &mut g,
        now + 10.0,
        once(100.0, 250.0),
        Some(503),
        Some(5_000.0),
    );
    assert_eq!(g.cooldown_until(), now + 5_000.0);
}

#[test]
fn a_call_with_no_retry_policy_holds_with_the_default_backoff() {
    // A `retry: false` call, or the quota's probe: 2 s, doubling, up to 60 s.
    let mut g = gate(100.0, 100.0, None);
    let now = answered(&mut g, 0.0, CallSpec::default(), Some(503), None);
    let hold = g.cooldown_until() - now;
    assert!(hold > 0.0 && hold < 2_000.0, "{hold}");
    let now = answered(&mut g, now, CallSpec::default(), None, None);
    let hold = g.cooldown_until() - now;
    assert!(hold > 0.0 && hold < 4_000.0, "{hold}");
}

#[test]
fn failures_of_requests_out_together_are_one_failure_and_a_bad_request_is_none() {
    let mut g = gate(100.0, 100.0, None);
    let calls: Vec<_> = (0..3).map(|rank| g.start(0.0, defaults(), rank)).collect();
    while g.poll_action(0.0).is_some() {}
    assert!(calls.iter().all(|&c| g.in_flight(c)));
    let invalid = Failure::Rejected {
        request_valid: false,
    };
    g.failed(5.0, calls[0], invalid);
    assert_eq!(
        g.cooldown_until(),
        0.0,
        "the request's fault, not the server's"
    );
    g.failed(10.0, calls[1], NETWORK);
    // Held for uniform(0, 2 s), the default backoff's first step.
    let held = g.cooldown_until();
    assert!(held > 10.0 && held < 10.0 + 2_000.0, "{held}");
    g.failed(20.0, calls[2], NETWORK);
    assert_eq!(
        g.cooldown_until(),
        held,
        "sent before the first came back: the same failure"
    );
}

#[test]
fn without_retries_the_response_comes_back_but_a_429_still_holds_the_gate() {
    let mut h = Harness::new(
        gate(5.0, 5.0, None),
        scripted(vec![Reply::status(429, &[("Retry-After", "2")])]),
    );
    let observe = CallSpec::default();
    h.start_at(0.0, observe.clone());
    h.start_at(10.0, observe);
    h.run();
    assert_eq!(h.end(0), Some(End::Deliver));
    assert_eq!(h.attempts_of(1), [2_000.0]);
}

#[test]
fn later_responses_extend_a_cooldown_but_never_shorten_it() {
    let mut h = Harness::new(
        gate(5.0, 5.0, None),
        scripted(vec![
            Reply::status(429, &[("Retry-After", "5")]).after(1.0),
            Reply::status(429, &[("Retry-After", "1")]).after(100.0),
        ]),
    );
    // Both go at 0; the first answer (at 1 ms) asks for 5 s, the second (at 100 ms) for 1 s.
    h.start_at(0.0, CallSpec::default());
    h.start_at(0.0, CallSpec::default());
    h.start_at(200.0, CallSpec::default());
    h.run();
    assert_eq!(h.gate().cooldown_until(), 5_001.0);
    assert_eq!(h.attempts_of(2), [5_001.0]);
}

#[test]
fn a_retry_after_too_large_to_hold_fails_the_call_and_holds_the_gate_until_cleared() {
    let mut h = Harness::new(
        gate(5.0, 5.0, None),
        scripted(vec![Reply::status(
            429,
            &[("Retry-After", "99999999999999999999")],
        )]),
    );
    h.start_at(0.0, defaults());
    h.start_at(1.0, defaults());
    h.run_until(10_000.0);
    assert_eq!(h.end(0), Some(End::RetryAfterTooLarge));
    assert_eq!(h.gate().cooldown_until(), MAX_DELAY_MS as Millis);
    assert!(h.attempts_of(1).is_empty(), "never a shorter wait");
    let now = h.now;
    h.gate().clear_cooldown(now);
    h.gate().handle_timeout(now);
    h.start_at(h.now, defaults());
    h.run_until(10_001.0);
    assert_eq!(h.end(1), Some(End::Deliver));
}

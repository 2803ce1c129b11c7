//! Retries: a jittered backoff, the server's `Retry-After` waited exactly, attempts and the
//! time budget bounding a call, hung attempts cut off, and what is never retried.

use super::*;

#[test]
fn a_503_is_retried_after_a_jittered_backoff_under_its_ceiling() {
    let mut seconds = Vec::new();
    for seed in 0..40 {
        let g = Gate::new(rate(10.0, 10.0), None, 0.0, Box::new(Seeded::new(seed)));
        let mut h = Harness::new(g, scripted(vec![Reply::status(503, &[])]));
        h.start_at(0.0, defaults());
        h.run();
        assert_eq!(h.end(0), Some(End::Deliver));
        let times = h.attempts_of(0);
        assert_eq!(times.len(), 2);
        assert!((0.0..2000.0).contains(&times[1]), "{times:?}");
        seconds.push(times[1] as u64);
    }
    seconds.sort_unstable();
    seconds.dedup();
    assert_eq!(seconds.len(), 39, "jittered, not fixed: {seconds:?}");
}

#[test]
fn retry_after_is_waited_exactly_and_holds_every_call_on_the_gate() {
    let mut h = Harness::new(
        gate(5.0, 5.0, None),
        scripted(vec![Reply::status(429, &[("Retry-After", "30")])]),
    );
    h.start_at(0.0, defaults());
    h.start_at(100.0, defaults());
    h.run();
    assert_eq!(h.attempts_of(0), [0.0, 30_000.0]);
    assert_eq!(
        h.attempts_of(1),
        [30_000.0],
        "the cooldown holds newcomers too"
    );
    let retry = h.events().iter().find_map(|(_, e)| match e {
        Event::Retry {
            delay_ms,
            server_delay,
            ..
        } => Some((*delay_ms, *server_delay)),
        _ => None,
    });
    assert_eq!(retry, Some((30_000.0, true)));
    assert_eq!(h.figures().backoff.count(), 0, "no jitter on it");
}

#[test]
fn a_retry_after_longer_than_the_time_left_gives_up_at_once() {
    let policy = RetryPolicy {
        time_budget_ms: 10_000.0,
        ..RetryPolicy::default()
    };
    let mut h = Harness::new(
        gate(2.0, 2.0, None),
        scripted(vec![
            Reply::status(429, &[("Retry-After", "30")]).after(40.0)
        ]),
    );
    h.start_at(0.0, retrying(policy));
    h.run();
    assert_eq!(
        abandoned(h.end(0)),
        (Reason::RetryAfterExceedsDeadline, 1, Some(429))
    );
    assert_eq!(h.ended_at(0), 40.0, "not after waiting");
    match h.end(0) {
        Some(End::Abandoned { abandoned, .. }) => {
            assert_eq!(abandoned.retry_after_ms, Some(30_000.0))
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn attempts_are_bounded_per_call_and_the_last_response_comes_back_unread() {
    for typed_errors in [false, true] {
        let spec = CallSpec {
            typed_errors,
            ..defaults()
        };
        let mut h = Harness::new(
            gate(10.0, 10.0, None),
            Box::new(|_, _, _| Reply::status(503, &[])),
        );
        h.start_at(0.0, spec);
        h.run();
        assert_eq!(abandoned(h.end(0)), (Reason::Attempts, 3, Some(503)));
        assert_eq!(h.attempts_of(0).len(), 3);
        assert!(matches!(h.end(0), Some(End::Abandoned { as_is, .. }) if as_is != typed_errors));
        // The retried answers' bodies are disposed of; the last one's too only when the caller
        // gets a typed error instead.
        let disposed = if typed_errors { 3 } else { 2 };
        assert_eq!(h.log.disposed, vec![0; disposed], "typed: {typed_errors}");
        assert_eq!(h.figures().abandoned[Reason::Attempts.index()], 1);
    }
}

#[test]
fn network_failures_are_retried_and_the_last_one_is_the_callers() {
    for typed_errors in [false, true] {
        let spec = CallSpec {
            typed_errors,
            ..defaults()
        };
        let mut h = Harness::new(
            gate(10.0, 10.0, None),
            Box::new(|_, _, _| Reply::Fail { latency: 1.0 }),
        );
        h.start_at(0.0, spec);
        h.run();
        match h.end(0) {
            Some(End::Abandoned {
                abandoned,
                cause,
                as_is,
            }) => {
                assert_eq!(
                    (abandoned.reason, abandoned.attempts),
                    (Reason::Attempts, 3)
                );
                assert!(cause, "the last rejection is the error's cause");
                assert_eq!(as_is, !typed_errors, "or the caller's rejection itself");
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn a_hung_attempt_is_cut_off_at_its_timeout_and_retried() {
    let policy = RetryPolicy {
        attempt_timeout_ms: 200.0,
        ..RetryPolicy::default()
    };
    let mut h = Harness::new(gate(10.0, 10.0, None), scripted(vec![Reply::Hang]));
    h.start_at(0.0, retrying(policy));
    h.run();
    assert_eq!(h.end(0), Some(End::Deliver));
    // Cut off at 200 ms, retried after the default backoff's uniform(0, 2 s).
    let times = h.attempts_of(0);
    assert!(
        times.len() == 2 && (200.0..2_200.0).contains(&times[1]),
        "{times:?}"
    );
    assert_eq!(h.figures().retries.timeout, 1);
}

#[test]
fn an_attempt_never_outlives_the_time_budget() {
    let policy = RetryPolicy {
        time_budget_ms: 1_000.0,
        attempt_timeout_ms: 30_000.0,
        ..RetryPolicy::default()
    };
    let mut h = Harness::new(gate(10.0, 10.0, None), scripted(vec![Reply::Hang]));
    h.start_at(0.0, retrying(policy));
    h.run();
    assert_eq!(abandoned(h.end(0)).0, Reason::TimeBudget);
    assert_eq!(h.ended_at(0), 1_000.0);
}

#[test]
fn a_bare_post_is_sent_once_and_delivered_as_it_is() {
    let mut h = Harness::new(
        gate(10.0, 10.0, None),
        Box::new(|_, _, _| Reply::status(503, &[])),
    );
    h.start_at(
        0.0,
        CallSpec {
            replayable: false,
            ..defaults()
        },
    );
    h.run();
    assert_eq!(h.end(0), Some(End::Deliver));
    assert_eq!(h.attempts_of(0).len(), 1);
}

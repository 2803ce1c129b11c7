//! Calls waiting in the queue: `maxWaitMs` and `maxWaiting` refusals, aborts, and when a gate is
//! idle.

use super::*;

#[test]
fn max_wait_refuses_at_once_what_cannot_be_admitted_in_time() {
    let mut h = Harness::new(gate(2.0, 2.0, None), server(2.0, 2.0));
    let spec = CallSpec {
        max_wait_ms: Some(1_000.0),
        ..defaults()
    };
    for _ in 0..6 {
        h.start_at(0.0, spec.clone());
    }
    h.run();
    // Admissions at 0, 0, 500 and 1000 fit; the others would wait longer.
    assert!((0..4).all(|i| h.end(i) == Some(End::Deliver)));
    for i in 4..6 {
        assert_eq!(abandoned(h.end(i)), (Reason::QueueWait, 0, None));
        assert_eq!(h.ended_at(i), 0.0, "refused at once");
    }
    assert_eq!(h.attempt_times().len(), 4, "no token spent on them");
}

#[test]
fn max_wait_lets_go_of_a_waiter_that_a_new_cooldown_makes_hopeless() {
    let mut h = Harness::new(
        gate(1.0, 1.0, None),
        scripted(vec![Reply::status(429, &[("Retry-After", "5")])]),
    );
    h.start_at(0.0, defaults());
    h.start_at(
        0.0,
        CallSpec {
            max_wait_ms: Some(2_000.0),
            ..defaults()
        },
    );
    h.run();
    assert_eq!(abandoned(h.end(1)), (Reason::QueueWait, 0, None));
    assert_eq!(h.ended_at(1), 0.0);
}

#[test]
fn max_waiting_refuses_a_call_that_would_make_the_queue_longer() {
    let mut h = Harness::new(gate(1.0, 1.0, None), server(1.0, 1.0));
    let spec = CallSpec {
        max_waiting: Some(2),
        ..defaults()
    };
    for _ in 0..4 {
        h.start_at(0.0, spec.clone());
    }
    h.run();
    assert!((0..3).all(|i| h.end(i) == Some(End::Deliver)));
    assert_eq!(abandoned(h.end(3)), (Reason::QueueFull, 0, None));
    let f = h.figures();
    assert_eq!(f.abandoned[Reason::QueueFull.index()], 1);
}

#[test]
fn an_aborted_waiter_spends_no_token_and_the_next_one_takes_its_turn() {
    let mut h = Harness::new(gate(1.0, 1.0, None), server(1.0, 1.0));
    for _ in 0..3 {
        h.start_at(0.0, defaults());
    }
    h.abort_at(10.0, 1);
    h.run();
    assert_eq!(h.attempt_times(), [0.0, 1_000.0]);
    assert_eq!(h.end(2), Some(End::Deliver));
    assert!(h.log.aborted.contains_key(&1));
    assert_eq!(h.figures().cancelled, 1);
}

#[test]
fn an_abort_during_a_backoff_ends_the_call_without_another_attempt() {
    let mut h = Harness::new(
        gate(10.0, 10.0, None),
        Box::new(|_, _, _| Reply::status(503, &[])),
    );
    h.start_at(0.0, defaults());
    h.run_until(0.0);
    h.abort_at(0.5, 0);
    h.run();
    assert_eq!(h.attempts_of(0), [0.0]);
    assert!(h.is_quiet());
}

#[test]
fn a_gate_is_idle_once_nothing_in_it_is_worth_keeping() {
    let mut h = Harness::new(
        gate(2.0, 2.0, Some(RefillingConfig::DEFAULT)),
        scripted(vec![Reply::status(429, &[("Retry-After", "3")])]),
    );
    assert!(h.gate().idle(0.0), "a new gate");
    h.start_at(0.0, defaults());
    h.run_until(0.0);
    assert!(!h.gate().idle(0.0), "a call in it");
    h.run();
    let end = h.ended_at(0);
    assert!(!h.gate().idle(end), "the bucket is not full again yet");
    assert!(
        !h.gate().idle(2_999.0),
        "the cooldown holds, and the retry cost 5 of the budget"
    );
    // The retry's success refunded its cost; the bucket refills half a second later.
    assert!(h.gate().idle(end + 500.0));
}

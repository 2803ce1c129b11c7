//! Admission at the allowance: the floor without a 429, the refill after a burst, waits
//! reported to the calls that ask, and pacing by responses rather than by timer ticks.

use super::*;

#[test]
fn eight_workers_at_the_exact_allowance_go_at_the_floor_without_a_429() {
    let mut h = Harness::new(gate(2.0, 2.0, None), server(2.0, 2.0));
    for _ in 0..8 {
        h.start_at(0.0, defaults());
    }
    h.run();
    assert_eq!(
        h.attempt_times(),
        [0.0, 0.0, 500.0, 1000.0, 1500.0, 2000.0, 2500.0, 3000.0]
    );
    assert!((0..8).all(|i| h.end(i) == Some(End::Deliver)));
    assert_eq!(h.figures().throttled, 0);
}

#[test]
fn admissions_report_their_wait_only_to_a_call_that_asks() {
    // Eight calls at 2/s behind a burst of 2 go at 0, 0, 500, ..., 3000 ms. Only the calls
    // whose spec asks (a metered wrapper's: calls 0, 2, 4, 6) cost an event.
    let mut h = Harness::new(gate(2.0, 2.0, None), server(2.0, 2.0));
    for i in 0..8 {
        let spec = CallSpec {
            reports_wait: i % 2 == 0,
            ..defaults()
        };
        h.start_at(0.0, spec);
    }
    h.run();
    let waits: Vec<(Millis, Millis)> = h
        .events()
        .iter()
        .filter_map(|(at, e)| match *e {
            Event::Admitted { call, wait_ms } => {
                assert!((0..8).step_by(2).any(|i| h.call(i) == call));
                Some((*at, wait_ms))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        waits,
        [
            (0.0, 0.0),
            (500.0, 500.0),
            (1500.0, 1500.0),
            (2500.0, 2500.0)
        ]
    );
    // The gate's own histogram counts every admission either way.
    assert_eq!(h.figures().admission_wait.count(), 8);
}

#[test]
fn the_refill_after_a_burst_waits_for_its_first_response() {
    // 30 ms of latency: the server's refill starts when the burst arrives, ours when its first
    // response is back, so the third attempt goes at 530, not 500.
    let mut h = Harness::new(
        gate(2.0, 2.0, None),
        Box::new(|_, _, _| Reply::ok().after(30.0)),
    );
    for _ in 0..3 {
        h.start_at(0.0, defaults());
    }
    h.run();
    assert_eq!(h.attempt_times(), [0.0, 0.0, 530.0]);
}

#[test]
fn waiting_in_line_is_not_retrying_256_calls_at_2_per_second_all_complete() {
    let mut h = Harness::new(gate(2.0, 2.0, None), server(2.0, 2.0));
    for _ in 0..256 {
        h.start_at(0.0, defaults());
    }
    h.run();
    assert!((0..256).all(|i| h.end(i) == Some(End::Deliver)));
    assert_eq!(h.attempt_times().last(), Some(&127_000.0));
    assert_eq!(h.figures().throttled, 0);
}

#[test]
fn after_a_cooldown_only_the_burst_goes_then_the_rest_wait_their_turn() {
    let mut h = Harness::new(
        gate(2.0, 2.0, None),
        scripted(vec![Reply::status(429, &[("Retry-After", "2")])]),
    );
    h.start_at(0.0, CallSpec::default());
    for _ in 0..8 {
        h.start_at(1.0, defaults());
    }
    h.run();
    let times = h.attempt_times();
    assert_eq!(
        times,
        [0.0, 2_000.0, 2_000.0, 2_500.0, 3_000.0, 3_500.0, 4_000.0, 4_500.0, 5_000.0]
    );
}

#[test]
fn burst_one_at_a_high_rate_is_paced_by_responses_not_by_timer_ticks() {
    let mut h = Harness::new(
        gate(1.0, 100_000.0, None),
        Box::new(|_, _, _| Reply::ok().after(0.05)),
    );
    for _ in 0..1_000 {
        h.start_at(0.0, defaults());
    }
    h.run();
    assert!((0..1_000).all(|i| h.end(i) == Some(End::Deliver)));
    // One after another, each as the one before answers (0.05 ms): no timer between them.
    let last = *h.attempt_times().last().unwrap();
    assert!(
        (last - 999.0 * 0.05).abs() < 1e-6,
        "1,000 calls took {last} ms"
    );
    assert_eq!(h.log.wakeups, 0, "timer wake-ups");
}

//! The call machine's policy on a virtual clock: retries, the server's delay, budgets, quota,
//! deadlines, aborts, cooldowns, and a shared store that fails. Every test drives the
//! production `Gate` through `harness`, which jumps time to the next event.
#![cfg(not(target_arch = "wasm32"))]

mod harness;

use std::cell::RefCell;
use std::rc::Rc;

use harness::{FakeStore, Harness, Reply};
use odds_gate::core::authority::fair::Turn;
use odds_gate::core::authority::store::StoreAuthority;
use odds_gate::core::authority::{Authority, Immediate, Op};
use odds_gate::core::base::random::Seeded;
use odds_gate::core::gate::action::{Action, End, Event};
use odds_gate::core::gate::call::CallSpec;
use odds_gate::core::gate::store_link::{OnFailure, StoreSettings};
use odds_gate::core::gate::Gate;
use odds_gate::core::gates::scope::Scope;
use odds_gate::core::parse::feedback::{Feedback, MAX_DELAY_MS};
use odds_gate::core::rules::allowance::Rate;
use odds_gate::core::rules::backoff::Backoff;
use odds_gate::core::rules::batch::Batch;
use odds_gate::core::rules::bucket::TokenBucket;
use odds_gate::core::rules::budget::{BatchBudget, RefillingConfig};
use odds_gate::core::rules::classify::Failure;
use odds_gate::core::rules::policy::{Reason, RetryPolicy};
use odds_gate::core::rules::quota::Usage;
use odds_gate::core::Millis;

fn rate(burst: f64, per_second: f64) -> Rate {
    Rate::new(burst, per_second).unwrap()
}

fn gate(burst: f64, per_second: f64, budget: Option<RefillingConfig>) -> Gate {
    Gate::new(
        rate(burst, per_second),
        budget,
        0.0,
        Box::new(Seeded::new(7)),
    )
}

fn retrying(policy: RetryPolicy) -> CallSpec {
    CallSpec {
        policy: Some(Rc::new(policy)),
        replayable: true,
        ..CallSpec::default()
    }
}

fn defaults() -> CallSpec {
    retrying(RetryPolicy::default())
}

/// A server with the given allowance: 200 while it has a token, else 429 `Retry-After: 1`.
fn server(burst: f64, per_second: f64) -> harness::Server {
    let mut bucket = TokenBucket::new(rate(burst, per_second), 0.0);
    Box::new(move |now, _, _| {
        if bucket.take(now) {
            Reply::ok()
        } else {
            Reply::status(429, &[("Retry-After", "1")])
        }
    })
}

/// A server that answers each attempt from `script` in order, then 200s.
fn scripted(script: Vec<Reply>) -> harness::Server {
    let mut script = script.into_iter();
    Box::new(move |_, _, _| script.next().unwrap_or_else(Reply::ok))
}

fn abandoned(end: Option<End>) -> (Reason, u32, Option<u16>) {
    match end {
        Some(End::Abandoned { abandoned, .. }) => {
            (abandoned.reason, abandoned.attempts, abandoned.status)
        }
        other => panic!("expected abandonment, got {other:?}"),
    }
}

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
        let policy = RetryPolicy {
            typed_errors,
            ..RetryPolicy::default()
        };
        let mut h = Harness::new(
            gate(10.0, 10.0, None),
            Box::new(|_, _, _| Reply::status(503, &[])),
        );
        h.start_at(0.0, retrying(policy));
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
        let policy = RetryPolicy {
            typed_errors,
            ..RetryPolicy::default()
        };
        let mut h = Harness::new(
            gate(10.0, 10.0, None),
            Box::new(|_, _, _| Reply::Fail { latency: 1.0 }),
        );
        h.start_at(0.0, retrying(policy));
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
            !matches!(action, Action::Send { call: c, .. } if c != call),
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
        if let Action::Dispose { call, .. } = action {
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
        assert!(g.cooldown_until() < now + 250.0, "capMs caps the hold");
    }
    // A 503's Retry-After is the hold, exactly: not jittered, not capped.
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
fn max_waiting_refuses_a_call_that_would_make_the_line_longer() {
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
fn a_batch_deadline_refuses_before_anything_is_sent() {
    let mut h = Harness::new(gate(2.0, 2.0, None), server(2.0, 2.0));
    let batch = Rc::new(RefCell::new(Batch {
        deadline: 1_200.0,
        budget: Some(BatchBudget::new(2)),
    }));
    for _ in 0..8 {
        h.start_at(
            0.0,
            CallSpec {
                batch: Some(batch.clone()),
                ..defaults()
            },
        );
    }
    h.run();
    assert!((0..4).all(|i| h.end(i) == Some(End::Deliver)));
    assert!((4..8).all(|i| abandoned(h.end(i)) == (Reason::Deadline, 0, None)));
    assert_eq!(h.attempt_times().len(), 4);
    assert_eq!(batch.borrow().budget.as_ref().unwrap().left(), 2);
}

#[test]
fn a_batch_allowance_bounds_retries_across_all_its_calls() {
    // The eight first attempts are out together before the first 503 comes back (which holds
    // the gate: see `Streak`).
    let mut h = Harness::new(
        gate(20.0, 100.0, None),
        Box::new(|_, _, _| Reply::status(503, &[]).after(10.0)),
    );
    let batch = Rc::new(RefCell::new(Batch {
        deadline: 10_000.0,
        budget: Some(BatchBudget::new(4)),
    }));
    for _ in 0..8 {
        h.start_at(
            0.0,
            CallSpec {
                batch: Some(batch.clone()),
                ..defaults()
            },
        );
    }
    h.run();
    assert_eq!(
        h.attempt_times().len(),
        12,
        "eight first attempts and four retries"
    );
    assert!((0..8).all(|i| matches!(h.end(i), Some(End::Abandoned { .. }))));
}

#[test]
fn the_shared_retry_budget_drains_in_an_outage_and_stops_retries() {
    let budget = RefillingConfig {
        capacity: 30.0,
        ..RefillingConfig::DEFAULT
    };
    let policy = RetryPolicy {
        max_attempts: 5,
        ..RetryPolicy::default()
    };
    let mut h = Harness::new(
        gate(50.0, 1000.0, Some(budget)),
        Box::new(|_, _, _| Reply::status(503, &[])),
    );
    for _ in 0..10 {
        h.start_at(0.0, retrying(policy.clone()));
    }
    h.run();
    assert_eq!(
        h.attempt_times().len(),
        13,
        "ten first attempts, three paid retries"
    );
    assert!((0..10).all(|i| abandoned(h.end(i)).0 == Reason::RetryBudget));
    assert_eq!(h.figures().retry_budget, Some(0.0));
}

#[test]
fn a_success_after_a_retry_refunds_its_cost_and_a_first_time_success_adds_one() {
    let budget = RefillingConfig::DEFAULT;
    // Both out before the first 503 comes back, which holds the gate (see `Streak`).
    let mut h = Harness::new(
        gate(10.0, 10.0, Some(budget)),
        scripted(vec![
            Reply::status(503, &[]).after(1.0),
            Reply::status(503, &[]).after(1.0),
        ]),
    );
    h.start_at(0.0, defaults());
    h.start_at(0.0, defaults());
    h.run_until(1.0);
    assert_eq!(h.figures().retry_budget, Some(480.0));
    h.run();
    assert_eq!(h.figures().retry_budget, Some(500.0));
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
    // Burst 1 at 2/s: four calls wait in line behind the first, whose answer names the quota.
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
            // Not spent: the line goes on behind the probe, in call order.
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

#[test]
fn account_calls_pass_a_spent_quota_through_the_line() {
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
    assert_eq!(h.attempts_of(3).len(), 1, "through the line, one token");
    assert_eq!(h.end(4), Some(End::Exhausted { until: None }));
    assert!(h.attempts_of(4).is_empty());
    // Calls waiting in line when the quota closes: the account call stays and goes.
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

fn store_gate(settings: StoreSettings) -> (Gate, FakeStore) {
    let r = rate(2.0, 2.0);
    let gate = Gate::shared(r, None, settings, 0.0, Box::new(Seeded::new(3)));
    let store = FakeStore {
        latency: 1.0,
        ..FakeStore::default()
    };
    (gate, store)
}

#[test]
fn a_store_wait_for_a_slower_allowance_than_the_gate_now_follows_is_asked_again() {
    // A learning gate's first admission is asked at the opening's pace (one a second) of a
    // store another process has drained; before the "wait" comes back, the gate adopts the
    // fleet's estimate (10 per second). That wait was for the old allowance: it asks again.
    let gate = Gate::shared(
        rate(1.0, 1.0),
        None,
        StoreSettings::DEFAULT,
        0.0,
        Box::new(Seeded::new(3)),
    )
    .learning(None, 0.0);
    let mut h = Harness::new(gate, server(10.0, 10.0));
    h.store = FakeStore {
        latency: 1.0,
        ..FakeStore::default()
    };
    let mut drained = StoreAuthority::new(rate(1.0, 1.0), None, 0.0);
    drained.memory.admit(
        0.0,
        0,
        Turn {
            since: 0.0,
            lane: None,
            waiting: 1,
        },
        false,
    );
    // Its response came: the refill runs (at the opening's pace, a token a second).
    drained.memory.apply(0.0, &Op::Resume { id: 0 });
    let scope = Scope::of(Some("harness"), None);
    h.store.gates.insert(scope, drained);
    h.start_at(0.0, defaults());
    h.run_until(0.5);
    h.gate().adopt_estimate(0.5, rate(10.0, 10.0));
    h.run();
    assert_eq!(h.end(0), Some(End::Deliver));
    // The fleet's token at 10/s, and a store round trip each way: not after the opening's
    // second.
    assert_eq!(h.attempt_times()[0], 103.0);
}

#[test]
fn through_a_store_eight_workers_go_without_a_429() {
    let (gate, store) = store_gate(StoreSettings::DEFAULT);
    let mut h = Harness::new(gate, server(2.0, 2.0));
    h.store = store;
    for _ in 0..8 {
        h.start_at(0.0, defaults());
    }
    h.run();
    assert!((0..8).all(|i| h.end(i) == Some(End::Deliver)));
    assert_eq!(h.figures().throttled, 0);
    // The article's schedule, each a store round trip (1 ms) later; the second waits for
    // the first's answer.
    assert_eq!(
        h.attempt_times(),
        [1.0, 2.0, 503.0, 1_003.0, 1_503.0, 2_003.0, 2_503.0, 3_003.0]
    );
}

#[test]
fn through_a_store_one_round_trip_admits_what_the_line_can_use() {
    let r = rate(10.0, 10.0);
    let gate = Gate::shared(
        r,
        None,
        StoreSettings::DEFAULT,
        0.0,
        Box::new(Seeded::new(3)),
    );
    let mut h = Harness::new(gate, server(10.0, 10.0));
    h.store = FakeStore {
        latency: 1.0,
        ..FakeStore::default()
    };
    for _ in 0..8 {
        h.start_at(0.0, defaults());
    }
    h.run();
    assert!((0..8).all(|i| h.end(i) == Some(End::Deliver)));
    assert_eq!(h.figures().throttled, 0);
    // The first call asks alone; the seven that joined meanwhile go with the next answer,
    // and the first one's response restarts the refill it paused.
    assert_eq!(h.attempt_times(), [1.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0]);
    assert_eq!(h.store.ops, 3, "store operations for 8 admissions");
}

#[test]
fn a_cooldown_seen_through_a_store_holds_the_store_for_everyone() {
    let (gate, store) = store_gate(StoreSettings::DEFAULT);
    let mut h = Harness::new(
        gate,
        scripted(vec![Reply::status(429, &[("Retry-After", "3")])]),
    );
    h.store = store;
    h.start_at(0.0, CallSpec::default());
    h.run();
    let store = h
        .store
        .gates
        .values()
        .next()
        .expect("the gate's state in the store");
    assert_eq!(store.memory.cooldown_until(), 1.0 + 3_000.0);
}

#[test]
fn when_the_store_stops_answering_the_gate_admits_alone_at_its_share() {
    let (gate, mut store) = store_gate(StoreSettings::DEFAULT);
    store.down = true;
    let mut h = Harness::new(gate, server(2.0, 2.0));
    h.store = store;
    for _ in 0..4 {
        h.start_at(0.0, defaults());
    }
    h.run();
    assert!((0..4).all(|i| h.end(i) == Some(End::Deliver)));
    // After the 500 ms time limit, one at once (a quarter of the burst, at least one), then one
    // every 2 s (a quarter of the rate).
    assert_eq!(h.attempt_times(), [500.0, 2_500.0, 4_500.0, 6_500.0]);
    assert!(h.events().iter().any(|(_, e)| *e == Event::StoreDown));
}

#[test]
fn a_gate_that_fails_closed_refuses_while_the_store_is_down() {
    let (gate, mut store) = store_gate(StoreSettings {
        on_failure: OnFailure::Closed,
        ..StoreSettings::DEFAULT
    });
    store.down = true;
    let mut h = Harness::new(gate, server(2.0, 2.0));
    h.store = store;
    h.start_at(0.0, defaults());
    h.start_at(600.0, defaults());
    h.run();
    assert_eq!(abandoned(h.end(0)), (Reason::StoreUnavailable, 0, None));
    assert_eq!(abandoned(h.end(1)), (Reason::StoreUnavailable, 0, None));
    assert!(h.attempt_times().is_empty());
}

#[test]
fn the_store_answering_again_brings_shared_admission_back() {
    let (gate, mut store) = store_gate(StoreSettings::DEFAULT);
    store.down = true;
    let mut h = Harness::new(gate, server(10.0, 10.0));
    h.store = store;
    h.start_at(0.0, defaults());
    h.run();
    h.store.down = false;
    h.start_at(h.now + 5_000.0, defaults());
    h.run();
    assert!(h.events().iter().any(|(_, e)| *e == Event::StoreUp));
    assert_eq!(h.end(1), Some(End::Deliver));
    assert_eq!(h.store.ops, 2, "store operations");
}

#[test]
fn a_charge_the_store_never_answers_is_paid_by_the_fail_safe_budget() {
    let r = rate(10.0, 10.0);
    let budget = Some(RefillingConfig::DEFAULT);
    let gate = Gate::shared(
        r,
        budget,
        StoreSettings::DEFAULT,
        0.0,
        Box::new(Seeded::new(1)),
    );
    let mut h = Harness::new(gate, scripted(vec![Reply::status(503, &[])]));
    h.store = FakeStore {
        latency: 1.0,
        ..FakeStore::default()
    };
    h.start_at(0.0, defaults());
    h.run_until(2.0);
    h.store.down = true;
    h.run();
    assert_eq!(h.end(0), Some(End::Deliver));
    assert_eq!(h.attempts_of(0).len(), 2, "the retry was paid for locally");
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

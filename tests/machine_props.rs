//! Properties of the call machine over random mixes of calls, replies, latencies and aborts, on
//! a virtual clock: every call ends exactly once, attempts stay within their bounds, the gate
//! never admits more than the allowance, and nothing is sent during a server's cooldown.
#![cfg(not(target_arch = "wasm32"))]

mod harness;

use std::cell::RefCell;
use std::rc::Rc;

use harness::{Harness, Reply};
use odds_gate::core::base::random::Seeded;
use odds_gate::core::gate::action::End;
use odds_gate::core::gate::call::CallSpec;
use odds_gate::core::gate::early::EARLY_MS;
use odds_gate::core::gate::queue::Lane;
use odds_gate::core::gate::Gate;
use odds_gate::core::rules::allowance::Rate;
use odds_gate::core::rules::backoff::Backoff;
use odds_gate::core::rules::batch::Batch;
use odds_gate::core::rules::budget::{BatchBudget, RefillingConfig};
use odds_gate::core::rules::policy::RetryPolicy;
use odds_gate::core::Millis;
use proptest::prelude::*;

#[derive(Debug, Clone)]
struct CallPlan {
    at: Millis,
    retry: bool,
    replayable: bool,
    max_wait: Option<Millis>,
    abort_at: Option<Millis>,
    /// Its lane, of three with weights 1, 2.5 and 9.
    lane: u32,
}

#[derive(Debug, Clone)]
struct Scenario {
    burst: f64,
    per_second: f64,
    budget: bool,
    max_attempts: u32,
    time_budget: Millis,
    attempt_timeout: Millis,
    base: Millis,
    batch: Option<(Millis, u32)>,
    calls: Vec<CallPlan>,
    /// (kind, retry-after seconds, latency) per attempt, cycled.
    replies: Vec<(u8, u8, Millis)>,
}

fn reply((kind, seconds, latency): (u8, u8, Millis)) -> Reply {
    let ra = seconds.to_string();
    match kind {
        0..=3 => Reply::ok().after(latency),
        4 => Reply::status(429, &[("Retry-After", ra.as_str())]).after(latency),
        5 => Reply::status(429, &[]).after(latency),
        6 => Reply::status(503, &[]).after(latency),
        7 => Reply::status(503, &[("Retry-After", ra.as_str())]).after(latency),
        8 => Reply::status(404, &[]).after(latency),
        9 => Reply::Fail { latency },
        _ => Reply::Hang,
    }
}

fn scenario() -> impl Strategy<Value = Scenario> {
    let call = (
        0.0..5_000.0f64,
        any::<bool>(),
        prop::bool::weighted(0.8),
        prop::option::weighted(0.2, 100.0..5_000.0f64),
        prop::option::weighted(0.15, 0.0..8_000.0f64),
        0u32..3,
    )
        .prop_map(
            |(at, retry, replayable, max_wait, abort_at, lane)| CallPlan {
                at: at.floor(),
                retry,
                replayable,
                max_wait,
                abort_at,
                lane,
            },
        );
    (
        (1u32..5, prop::sample::select(vec![0.5, 2.0, 10.0, 100.0])),
        any::<bool>(),
        1u32..5,
        500.0..20_000.0f64,
        100.0..5_000.0f64,
        10.0..500.0f64,
        prop::option::weighted(0.3, (500.0..10_000.0f64, 0u32..6)),
        prop::collection::vec(call, 1..30),
        prop::collection::vec((0u8..11, 0u8..4, 0.0..300.0f64), 1..40),
    )
        .prop_map(
            |(
                (burst, per_second),
                budget,
                max_attempts,
                time_budget,
                attempt_timeout,
                base,
                batch,
                calls,
                replies,
            )| {
                Scenario {
                    burst: f64::from(burst),
                    per_second,
                    budget,
                    max_attempts,
                    time_budget,
                    attempt_timeout,
                    base,
                    batch,
                    calls,
                    replies,
                }
            },
        )
}

fn run(s: &Scenario) -> Harness {
    let rate = Rate::new(s.burst, s.per_second).unwrap();
    let budget = s.budget.then_some(RefillingConfig {
        capacity: 40.0,
        ..RefillingConfig::DEFAULT
    });
    let gate = Gate::new(rate, budget, 0.0, Box::new(Seeded::new(11)));
    let replies = s.replies.clone();
    let mut next = 0;
    let server = Box::new(move |_, _, _| {
        let r = reply(replies[next % replies.len()]);
        next += 1;
        r
    });
    let mut h = Harness::new(gate, server);
    let policy = Rc::new(RetryPolicy {
        max_attempts: s.max_attempts,
        time_budget_ms: s.time_budget,
        attempt_timeout_ms: s.attempt_timeout,
        backoff: Backoff::new(s.base, s.base * 8.0).unwrap(),
        ..RetryPolicy::default()
    });
    let batch = s.batch.map(|(deadline, retries)| {
        Rc::new(RefCell::new(Batch {
            deadline,
            budget: Some(BatchBudget::new(retries)),
        }))
    });
    for plan in &s.calls {
        let spec = CallSpec {
            policy: plan.retry.then(|| policy.clone()),
            batch: batch.clone(),
            replayable: plan.replayable,
            max_wait_ms: plan.max_wait,
            max_waiting: None,
            // Every admission also reports its wait: the extra events must change nothing.
            reports_wait: true,
            // Some calls scout their route, waiting at the front of the queue: that must break
            // none of these properties either.
            scout: plan.replayable && !plan.retry,
            account: false,
            behind_scout: false,
            // Lanes share the gate's admissions by weight: the same properties hold.
            lane: Lane {
                id: plan.lane,
                weight: [1.0, 2.5, 9.0][plan.lane as usize],
                reserve: false,
            },
            typed_errors: false,
            route: None,
        };
        let index = h.start_at(plan.at, spec);
        if let Some(at) = plan.abort_at {
            h.abort_at(plan.at + at, index);
        }
    }
    h.run();
    h
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    #[test]
    fn every_call_ends_exactly_once_and_nothing_is_left_behind(s in scenario()) {
        let mut h = run(&s);
        prop_assert!(h.is_quiet());
        for (i, plan) in s.calls.iter().enumerate() {
            let ended = h.log.settled.contains_key(&i) as u8 + h.log.aborted.contains_key(&i) as u8;
            // Without retries nothing but the caller's signal limits an attempt, so one that
            // hangs stays out; every other call ends.
            let expected = if !plan.retry && h.hung(i) { 0 } else { 1 };
            prop_assert_eq!(ended, expected, "call {} ended {} times", i, ended);
        }
        prop_assert_eq!(h.gate().waiting(), 0);
        let now = h.now;
        prop_assert_eq!(h.gate().poll_timeout(now), None, "no timer once idle");
    }

    #[test]
    fn attempts_stay_within_their_bounds(s in scenario()) {
        let h = run(&s);
        for (i, plan) in s.calls.iter().enumerate() {
            let sent = h.attempts_of(i).len() as u32;
            let cap = if plan.retry && plan.replayable { s.max_attempts } else { 1 };
            prop_assert!(sent <= cap, "call {} sent {} attempts, cap {}", i, sent, cap);
            if let Some(End::Abandoned { abandoned, .. }) = h.end(i) {
                prop_assert_eq!(abandoned.attempts, sent);
            }
            // A retrying call is never delivered a failure it could still have retried.
            if plan.retry && plan.replayable && h.end(i) == Some(End::Deliver) {
                let last = h.log.outcomes[&i].last().copied().flatten();
                prop_assert!(matches!(last, Some(s) if ![429, 502, 503, 504].contains(&s)), "{:?}", last);
            }
        }
    }

    #[test]
    fn the_gate_never_admits_more_than_the_allowance(s in scenario()) {
        let h = run(&s);
        let mut times: Vec<Millis> = h.sent().iter().map(|x| x.at).collect();
        times.sort_by(f64::total_cmp);
        for i in 0..times.len() {
            for j in i..times.len() {
                let window = times[j] - times[i] + EARLY_MS;
                let allowed = s.burst + window * s.per_second / 1000.0 + 1e-6;
                prop_assert!(
                    (j - i + 1) as f64 <= allowed,
                    "{} admissions in {} ms (burst {}, {}/s)", j - i + 1, window, s.burst, s.per_second
                );
            }
        }
    }

    #[test]
    fn nothing_is_sent_while_a_throttle_cooldown_holds(s in scenario()) {
        let h = run(&s);
        for &(at, _, status, ref retry_after) in &h.log.responses {
            let Some(seconds) = retry_after.as_ref().and_then(|v| v.parse::<f64>().ok()) else { continue };
            if status != 429 { continue }
            let end = at + seconds * 1000.0;
            let inside = h.sent().iter().find(|x| x.at > at && x.at < end - EARLY_MS);
            prop_assert!(inside.is_none(), "sent at {:?} inside the cooldown {}..{}", inside, at, end);
        }
    }
}

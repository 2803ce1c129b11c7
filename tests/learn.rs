//! Learning an allowance nobody told the gate, on the simulator's virtual clock: 20 workers
//! fetch 10 snapshots each through one learning gate, against servers whose allowance the
//! client does not know, with the counts in the headers and with 429 + `Retry-After` only.

#![cfg(not(target_arch = "wasm32"))]

mod harness;

use std::rc::Rc;

use harness::{Harness, Reply};
use odds_gate::core::base::random::Seeded;
use odds_gate::core::gate::action::{End, Event, GateAction};
use odds_gate::core::gate::call::CallSpec;
use odds_gate::core::gate::Gate;
use odds_gate::core::rules::allowance::Rate;
use odds_gate::core::rules::bucket::TokenBucket;
use odds_gate::core::rules::classify::Failure;
use odds_gate::core::rules::learn::{Estimate, MIN_PACE};
use odds_gate::core::rules::policy::RetryPolicy;
use odds_gate::core::rules::quota::Usage;
use odds_gate::core::rules::routes::LimiterFeedback;
use odds_gate::core::sim::server::Headers;
use odds_gate::core::sim::{simulate, Coordination, SimOptions, SimReport};

const ALLOWANCES: [(f64, f64); 3] = [(5.0, 10.0), (2.0, 2.0), (20.0, 5.0)];
/// From a request's arrival to its response's return: none, loopback, a far region.
const LATENCIES: [f64; 4] = [0.0, 2.0, 20.0, 150.0];

fn run(burst: f64, per_second: f64, headers: bool, latency_ms: f64) -> SimReport {
    simulate(&SimOptions {
        workers: 20,
        snapshots: 10,
        rate: Rate::new(burst, per_second).unwrap(),
        coordination: Coordination::Shared,
        max_attempts: 20,
        learn: true,
        headers: if headers {
            Headers::Always
        } else {
            Headers::Never
        },
        latency_ms,
        ..SimOptions::default()
    })
    .unwrap()
}

/// Wall time over the floor: the time the allowance itself needs for 200 requests from full.
fn ratio(r: &SimReport, burst: f64, per_second: f64) -> f64 {
    let floor_ms = (200.0 - burst) / per_second * 1000.0;
    r.last_attempt_ms / floor_ms
}

/// Runs every allowance at several latencies; each run must stay within `max_throttled` (a
/// share of attempts that are 429s) and `max_ratio` (wall time over the floor).
fn check(headers: bool, max_throttled: f64, max_ratio: f64) {
    let mut failed = Vec::new();
    for (burst, per_second) in ALLOWANCES {
        for latency_ms in LATENCIES {
            let r = run(burst, per_second, headers, latency_ms);
            let throttled = r.throttled as f64 / r.attempts as f64;
            let line = format!(
                "burst {burst} at {per_second}/s, {latency_ms} ms: {} attempts, {} 429s \
                 ({:.1} %), wall {:.3} x floor, estimate {:?}",
                r.attempts,
                r.throttled,
                100.0 * throttled,
                ratio(&r, burst, per_second),
                r.learned.last().map(|(_, e)| e.per_second),
            );
            println!("{line}");
            assert_eq!(r.completed, 200, "{line}");
            if throttled > max_throttled || ratio(&r, burst, per_second) > max_ratio {
                failed.push(line);
            }
        }
    }
    assert!(failed.is_empty(), "missed the targets: {failed:#?}");
}

// Bounds: the worst run the virtual clock measures, rounded up (counts: 2.91 % at 2 @ 2/s and
// 20 ms, at most 1.036 x; Retry-After only: 8.68 % at 20 @ 5/s and 2-20 ms, the window's
// overshoot before the first 429, and 1.275 x, where each 429's second of Retry-After costs a
// bucket of 5 refilling at 10/s half a second).

#[test]
fn with_the_counts_at_most_3_percent_429s_and_1_04_times_the_floor() {
    check(true, 0.03, 1.04);
}

#[test]
fn with_retry_after_only_at_most_8_7_percent_429s_and_1_28_times_the_floor() {
    check(false, 0.087, 1.28);
}

/// `js-tests/learn.test.mjs`'s run with 429 + `Retry-After` only, on the virtual clock: 8
/// workers x 5 snapshots against burst 5 at 10/s, up to 10 attempts, loopback latency. Live,
/// that test checks only the wiring; here the pace is exact: 8/s (measured live: 8.08/s),
/// with no burst learned (no limit header), five 429s, and every call done.
#[test]
fn with_retry_after_only_the_live_tests_run_learns_8_per_second() {
    let r = simulate(&SimOptions {
        workers: 8,
        snapshots: 5,
        rate: Rate::new(5.0, 10.0).unwrap(),
        coordination: Coordination::Shared,
        max_attempts: 10,
        learn: true,
        headers: Headers::Never,
        latency_ms: 2.0,
        ..SimOptions::default()
    })
    .unwrap();
    assert_eq!((r.attempts, r.throttled, r.completed), (45, 5, 40));
    let (_, learned) = r.learned.last().expect("an estimate");
    assert_eq!((learned.burst, learned.per_second), (None, 8.0));
}

/// A retrying call with the default policy.
fn defaults() -> CallSpec {
    CallSpec {
        policy: Some(std::rc::Rc::new(RetryPolicy::default())),
        replayable: true,
        ..CallSpec::default()
    }
}

fn learning_gate() -> Gate {
    let start = Rate::new(1.0, 1000.0).unwrap();
    Gate::new(start, None, 0.0, Box::new(Seeded::new(3))).learning(None, 0.0)
}

/// Four calls at once; the server answers after 50 ms.
fn four_calls(reply: impl Fn(u32) -> Reply + 'static) -> Harness {
    let mut sent = 0;
    let server = Box::new(move |_, _, _| {
        sent += 1;
        reply(sent).after(50.0)
    });
    let mut h = Harness::new(learning_gate(), server);
    for _ in 0..4 {
        h.start_at(0.0, CallSpec::default());
    }
    h.run();
    h
}

#[test]
fn one_request_goes_until_the_first_answer_then_the_counts_lead_a_window_at_a_time() {
    let mut h = four_calls(|n| {
        let left = (5 - n).to_string();
        Reply::status(
            200,
            &[("x-ratelimit-limit", "5"), ("x-ratelimit-remaining", &left)],
        )
    });
    let times: Vec<f64> = h.sent().iter().map(|s| s.at).collect();
    // The first answer says four are left: two go at once (a count is a claim until the
    // counts show the bucket refilling), the last as they answer.
    assert_eq!(times, [0.0, 50.0, 50.0, 100.0]);
    let learned = h.learned().unwrap();
    assert_eq!(learned.burst, Some(5.0));
    assert!(h
        .events()
        .iter()
        .any(|(_, e)| matches!(e, Event::Learned(l) if l.burst == Some(5.0))));
}

#[test]
fn without_the_counts_the_requests_in_flight_grow_with_each_answer() {
    let mut h = four_calls(|_| Reply::ok());
    let times: Vec<f64> = h.sent().iter().map(|s| s.at).collect();
    // One, then two at once (the window's pace does not hold them), then the last as the two
    // answer: nothing paces a server that has not limited yet.
    assert_eq!(times, [0.0, 50.0, 50.0, 100.0]);
    assert_eq!(h.learned().unwrap().burst, None);
}

#[test]
fn an_answer_from_another_bucket_teaches_nothing_and_names_the_bucket() {
    let mut h = four_calls(|n| {
        let bucket = if n == 1 { "snapshot" } else { "events" };
        Reply::status(
            200,
            &[
                ("x-ratelimit-limit", if n == 1 { "2" } else { "10" }),
                ("x-ratelimit-remaining", "1"),
                ("x-ratelimit-bucket", bucket),
            ],
        )
    });
    // The first answer made the gate the snapshot bucket's; the others named `events`.
    assert_eq!(h.gate().limiter(), Some("snapshot"));
    assert_eq!(h.learned().unwrap().burst, Some(2.0));
}

#[test]
fn a_call_that_waits_and_was_never_sent_can_be_withdrawn() {
    let mut gate = learning_gate();
    let first = gate.start(0.0, CallSpec::default(), 1);
    let second = gate.start(0.0, CallSpec::default(), 2);
    while gate.poll_action(0.0).is_some() {}
    // The first went out (one in flight until an answer); the second waits.
    assert!(gate.in_flight(first));
    assert!(gate.withdraw(first).is_none(), "a call already sent stays");
    assert_eq!(gate.waiting(), 1);
    assert!(gate.withdraw(second).is_some());
    assert_eq!(gate.waiting(), 0);
    assert!(gate.withdraw(second).is_none(), "withdrawn once");
    assert_eq!(gate.figures(0.0).requests, 1);
}

#[test]
fn a_scout_goes_first_and_its_route_waits_outside_the_queue_until_released() {
    let mut gate = learning_gate();
    let other = gate.start(0.0, CallSpec::default(), 3);
    let scout = CallSpec {
        scout: true,
        ..CallSpec::default()
    };
    let scout = gate.start(0.0, scout, 4);
    let held = CallSpec {
        behind_scout: true,
        ..CallSpec::default()
    };
    let held = gate.start(0.0, held, 5);
    while gate.poll_action(0.0).is_some() {}
    assert!(
        gate.in_flight(scout),
        "the scout went ahead of the call before it"
    );
    assert!(!gate.in_flight(other));
    assert_eq!(
        gate.waiting(),
        2,
        "the call behind the scout waits beside the queue"
    );
    // The scout failed: how it went is reported, and the held call may go on.
    gate.failed(
        5.0,
        scout,
        Failure::Rejected {
            request_valid: true,
        },
    );
    let mut reported = false;
    while let Some(action) = gate.poll_action(5.0) {
        reported |= action
            == GateAction::Route {
                call: scout,
                heard: LimiterFeedback::Nothing,
                answer: None,
            };
    }
    assert!(reported);
    // Nothing says the server is up: the failure holds the gate (see `Streak`); then the
    // opening's token, back at once, lets the next in the queue go (still one at a time).
    assert!(!gate.in_flight(other));
    // Held for uniform(0, 2 s), the default backoff's first step.
    let held_until = gate.cooldown_until();
    assert!(
        held_until > 5.0 && held_until < 5.0 + 2_000.0,
        "{held_until}"
    );
    while gate.poll_action(held_until).is_some() {}
    assert!(gate.in_flight(other), "the next in the queue went out");
    assert_eq!(gate.waiting(), 1, "the call behind the scout");
    gate.release(5.0, held);
    assert_eq!(gate.waiting(), 1, "now in the queue");
    // A held call moved to another gate comes out as an ordinary call.
    let moved = gate.start(
        5.0,
        CallSpec {
            behind_scout: true,
            scout: true,
            ..CallSpec::default()
        },
        99,
    );
    let moved = gate.withdraw(moved).unwrap();
    assert!(!moved.spec.behind_scout && !moved.spec.scout);
}

#[test]
fn an_estimate_no_learning_could_reach_is_not_a_pace() {
    let mut gate = learning_gate();
    let opening = gate.rate();
    for garbage in [
        Rate::new(1.0, 1e300).unwrap(),
        Rate::new(1e300, 5.0).unwrap(),
    ] {
        gate.adopt_estimate(0.0, garbage);
        assert_eq!(gate.rate(), opening, "{garbage:?} ignored");
    }
    // A plausible one is taken.
    let fleet = Rate::new(5.0, 10.0).unwrap();
    gate.adopt_estimate(0.0, fleet);
    assert_eq!(gate.rate(), fleet);
}

#[test]
fn a_gate_that_heard_nothing_starts_from_what_the_fleet_learned() {
    let fleet = Rate::new(5.0, 10.0).unwrap();
    let mut gate = learning_gate();
    gate.adopt_estimate(0.0, fleet);
    assert_eq!(gate.rate(), fleet);
    // No longer one at a time: the adopted pace admits the next 100 ms later, unanswered.
    let calls: Vec<_> = (0..3)
        .map(|_| gate.start(0.0, CallSpec::default(), 6))
        .collect();
    while gate.poll_action(0.0).is_some() {}
    gate.handle_timeout(100.0);
    while gate.poll_action(100.0).is_some() {}
    assert!(gate.in_flight(calls[0]) && gate.in_flight(calls[1]));
    // A gate that heard an answer keeps what it learned itself.
    let mut heard = learning_gate();
    let call = heard.start(0.0, CallSpec::default(), 7);
    while heard.poll_action(0.0).is_some() {}
    let counts = |name: &str| match name {
        "x-ratelimit-limit" => Some("2".to_string()),
        "x-ratelimit-remaining" => Some("1".to_string()),
        _ => None,
    };
    heard.responded(10.0, &|| 0.0, call, 200, &counts);
    heard.adopt_estimate(10.0, fleet);
    assert_eq!(heard.rate().burst(), 2.0);
}

/// When the server stops taking requests in the tests below.
const SPENT_AT: f64 = 30_000.0;

/// A learning gate paced by the counts of 2 @ 2/s, two calls a second for 40 s, whose server
/// answers every request from [`SPENT_AT`] on with `then` (its latency 20 ms), and `/usage`
/// with `usage`. The estimate just before, and the harness once every call has ended.
fn answers_change(then: Reply, usage: Option<Usage>) -> (Estimate, Harness) {
    let mut bucket = TokenBucket::new(Rate::new(2.0, 2.0).unwrap(), 0.0);
    let server = Box::new(move |now: f64, _, _| {
        if now >= SPENT_AT {
            return then.clone().after(20.0);
        }
        let ok = bucket.take(now);
        let left = bucket.tokens(now).floor().to_string();
        let counts = [("X-RateLimit-Limit", "2"), ("X-RateLimit-Remaining", &left)];
        match ok {
            true => Reply::status(200, &counts),
            false => Reply::status(429, &[("Retry-After", "1")]),
        }
        .after(20.0)
    });
    let mut h = Harness::new(learning_gate(), server);
    h.usage = usage;
    for i in 0..80 {
        h.start_at(f64::from(i) * 500.0, defaults());
    }
    h.run_until(SPENT_AT - 1.0);
    // Measured: 1.965/s.
    let before = h.learned().unwrap();
    assert!(
        before.per_second > 1.96,
        "learned the pace first: {before:?}"
    );
    h.run();
    (before, h)
}

/// `/usage` of a spent quota.
const SPENT: Usage = Usage {
    used: 1_000.0,
    limit: 1_000.0,
    period_end: None,
};

#[test]
fn a_spent_quota_says_nothing_of_the_rate() {
    // The monthly quota is spent: every answer is its 429 (no Retry-After, the body names the
    // quota), and `/usage` says used >= limit. Before, the learner took those 429s for the
    // rate's and the pace fell from 1.96/s to 1.39/s.
    let quota = Reply::status(429, &[]).saying("quota_exceeded", "Monthly API credits exhausted");
    let (before, mut h) = answers_change(quota, Some(SPENT));
    let after = h.learned().unwrap();
    assert_eq!(after.per_second, before.per_second, "{before:?} {after:?}");
    assert_eq!(after.last_throttle, before.last_throttle);
    let starts = h.log.settled.len();
    for i in 0..starts {
        let sent_after = h.attempts_of(i).last().is_some_and(|&at| at >= SPENT_AT);
        let end = h.end(i);
        if sent_after || h.attempts_of(i).is_empty() {
            assert!(
                matches!(end, Some(End::Exhausted { .. })),
                "call {i}: {end:?}"
            );
        } else {
            assert_eq!(end, Some(End::Deliver), "call {i}");
        }
    }
}

#[test]
fn bare_429s_the_quotas_probe_finds_spent_teach_nothing() {
    // No body to read: three bare 429s in a row raise the suspicion, and the probe's answer
    // is the verdict on all of them.
    let (before, mut h) = answers_change(Reply::status(429, &[]), Some(SPENT));
    let after = h.learned().unwrap();
    assert_eq!(after.per_second, before.per_second, "{before:?} {after:?}");
    assert!(h
        .log
        .settled
        .values()
        .any(|(_, end)| matches!(end, End::Exhausted { .. })));
}

#[test]
fn a_bare_429_of_the_rate_still_teaches_once_its_verdict_is_in() {
    // The body names no quota, and the probe finds room: the rate's 429s teach, as before,
    // every answer one from then on, down to the learner's floor.
    let usage = Usage {
        used: 10.0,
        ..SPENT
    };
    let rate = Reply::status(429, &[]).saying("rate_limited", "Rate limit exceeded");
    let (before, mut h) = answers_change(rate, Some(usage));
    let after = h.learned().unwrap();
    assert!(
        after.last_throttle.is_some_and(|at| at >= SPENT_AT),
        "{after:?}"
    );
    assert_eq!(after.per_second, MIN_PACE, "{before:?} {after:?}");
}

/// Six calls at once on a learning gate whose first request never gets an answer; the others
/// answer 200 after 20 ms. `policy`: the calls' retry policy (`None`: `retry: false`).
fn first_request_hangs(policy: Option<Rc<RetryPolicy>>) -> Harness {
    let mut sent = 0;
    let server = Box::new(move |_, _, _| {
        sent += 1;
        match sent {
            1 => Reply::Hang,
            _ => Reply::ok().after(20.0),
        }
    });
    let mut h = Harness::new(learning_gate(), server);
    for _ in 0..6 {
        let spec = CallSpec {
            policy: policy.clone(),
            ..CallSpec::default()
        };
        h.start_at(0.0, spec);
    }
    h.run_until(60_000.0);
    h
}

#[test]
fn a_first_request_that_hangs_holds_the_key_a_second_not_its_time_limit() {
    let retrying = Some(Rc::new(RetryPolicy::default()));
    for policy in [retrying, None] {
        let h = first_request_hangs(policy.clone());
        // The opening's token comes back after a second; the first answer then opens the
        // window: the five others are done at 1,080 ms either way, where they waited for the
        // first attempt's whole time limit (30 s, or for ever without retries).
        let last = (1..6).map(|i| h.ended_at(i)).fold(0.0, f64::max);
        assert_eq!(last, 1_080.0, "done ({policy:?})");
        assert!((1..6).all(|i| h.end(i) == Some(End::Deliver)));
    }
}

/// When the spent quota of [`quota_lifted`]'s server is lifted (a new period).
const LIFTED_AT: f64 = 45_000.0;

/// A learning gate paced by the counts of 2 @ 2/s (two calls a second), whose server answers
/// the quota's 429 from [`SPENT_AT`] to [`LIFTED_AT`] (`/usage`: spent until then) with
/// `spell`, and its own bucket all along without. Eight calls come at once just after, then
/// four a second for 20 s. The estimate before the spell and a second after it, and the
/// server's 429s after it.
fn quota_lifted(spell: bool) -> (Estimate, Estimate, u32) {
    let mut bucket = TokenBucket::new(Rate::new(2.0, 2.0).unwrap(), 0.0);
    let throttled = Rc::new(std::cell::Cell::new(0));
    let count = throttled.clone();
    let quota = Reply::status(429, &[]).saying("quota_exceeded", "Monthly API credits exhausted");
    let server = Box::new(move |now: f64, _, _| {
        if spell && (SPENT_AT..LIFTED_AT).contains(&now) {
            return quota.clone().after(20.0);
        }
        let ok = bucket.take(now);
        let left = bucket.tokens(now).floor().to_string();
        let counts = [("X-RateLimit-Limit", "2"), ("X-RateLimit-Remaining", &left)];
        if !ok && now >= LIFTED_AT {
            count.set(count.get() + 1);
        }
        match ok {
            true => Reply::status(200, &counts),
            false => Reply::status(429, &[("Retry-After", "1")]),
        }
        .after(20.0)
    });
    let mut h = Harness::new(learning_gate(), server);
    h.usage = Some(Usage {
        period_end: Some(LIFTED_AT),
        ..SPENT
    });
    let calm = if spell { SPENT_AT } else { LIFTED_AT };
    for i in 0..(calm / 500.0) as u32 {
        h.start_at(f64::from(i) * 500.0, defaults());
    }
    for _ in 0..8 {
        h.start_at(LIFTED_AT + 100.0, defaults());
    }
    for i in 0..80 {
        h.start_at(LIFTED_AT + 1_000.0 + f64::from(i) * 250.0, defaults());
    }
    h.run_until(SPENT_AT - 1.0);
    let before = h.learned().unwrap();
    h.run_until(LIFTED_AT + 1_000.0);
    let after = h.learned().unwrap();
    h.run();
    (before, after, throttled.get())
}

#[test]
fn a_lifted_quota_leaves_the_pace_where_it_was() {
    // Nothing was spent in the spell, so the server's bucket is full when calls come again:
    // that says nothing of its refill. Before, the first answer after (found full while calls
    // waited) doubled the pace, 1.96/s to 3.93/s, and the server answered more 429s after
    // than it does a gate that never met the quota.
    let (before, after, throttled) = quota_lifted(true);
    let (_, _, without) = quota_lifted(false);
    assert!(
        after.per_second <= before.per_second * 1.02,
        "{before:?} {after:?}"
    );
    assert!(
        throttled <= without,
        "{throttled} 429s after the spell, {without} without it"
    );
}

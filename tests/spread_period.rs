//! The spread at the edges of a period, on a virtual clock (#49): a small plan's first call goes
//! at once and the next at the due pace; when the period turns, calls resume within a second
//! of the new one, and a server late to turn it is read again soon, then less often.
#![cfg(not(target_arch = "wasm32"))]

#[path = "harness/mod.rs"]
mod harness;

use std::cell::RefCell;
use std::rc::Rc;

use harness::{Harness, Reply};
use odds_gate::core::base::random::Seeded;
use odds_gate::core::gate::action::End;
use odds_gate::core::gate::call::CallSpec;
use odds_gate::core::gate::Gate;
use odds_gate::core::rules::allowance::Rate;
use odds_gate::core::rules::credits::{Costs, Spread};
use odds_gate::core::rules::policy::{Reason, RetryPolicy};
use odds_gate::core::rules::quota::Usage;
use odds_gate::core::sim::server::{Arrival, Server};
use odds_gate::core::Millis;

const HOUR: Millis = 3_600_000.0;

/// A server whose periods of `period` ms each give `limit` credits; it turns a period `lag`
/// ms after its end (the end it reports until then is the old one).
struct Periods {
    limit: f64,
    period: Millis,
    lag: Millis,
    end: Millis,
    used: f64,
    /// When each call was counted.
    counted: Vec<Millis>,
}

impl Periods {
    fn turn(&mut self, now: Millis) {
        while now >= self.end + self.lag {
            self.end += self.period;
            self.used = 0.0;
        }
    }
}

struct Turning(Rc<RefCell<Periods>>);

impl Server for Turning {
    fn reply(&mut self, now: Millis, _: &Arrival) -> Reply {
        let mut p = self.0.borrow_mut();
        p.turn(now);
        assert!(p.used < p.limit, "a call past the limit at {now}");
        p.used += 1.0;
        p.counted.push(now);
        Reply::ok()
    }

    fn usage(&mut self, now: Millis) -> Option<Usage> {
        let mut p = self.0.borrow_mut();
        p.turn(now);
        Some(Usage {
            used: p.used,
            limit: p.limit,
            period_end: Some(p.end),
        })
    }
}

/// A harness whose server has `limit` credits a `period`, the first ending at `end`.
fn periods(
    limit: f64,
    period: Millis,
    end: Millis,
    lag: Millis,
) -> (Harness, Rc<RefCell<Periods>>) {
    let server = Rc::new(RefCell::new(Periods {
        limit,
        period,
        lag,
        end,
        used: 0.0,
        counted: Vec::new(),
    }));
    let rate = Rate::new(10.0, 10.0).unwrap();
    let gate = Gate::new(rate, None, 0.0, Box::new(Seeded::new(3)));
    let gate = gate.spreading(Spread::DEFAULT, Costs::default()).unwrap();
    let mut h = Harness::new(gate, Box::new(|_, _, _| Reply::ok()));
    h.world.server = Box::new(Turning(server.clone()));
    (h, server)
}

/// A call that waits for its credit as long as it takes (a background job's: its `maxWaitMs`
/// raises the spread's own bound of a minute).
fn patient() -> CallSpec {
    CallSpec {
        max_wait_ms: Some(30.0 * 24.0 * HOUR),
        ..unbounded()
    }
}

/// A call with no `maxWaitMs` of its own (an SDK caller's).
fn unbounded() -> CallSpec {
    CallSpec {
        policy: Some(Rc::new(RetryPolicy::default())),
        replayable: true,
        ..CallSpec::default()
    }
}

#[test]
fn a_small_plan_sends_its_first_call_at_once_then_one_at_the_due_pace() {
    // 1,000 credits, 25 days left, a fresh process: 950 to spread over 600 hours, one every
    // 37.9 minutes. Before #49 the bucket opened with a quarter hour's refill (0.4 credits):
    // the first call went after 23 minutes.
    let (mut h, server) = periods(1_000.0, 30.0 * 24.0 * HOUR, 600.0 * HOUR, 0.0);
    let calls: Vec<usize> = (0..4).map(|_| h.start_at(0.0, patient())).collect();
    h.run();
    let sent: Vec<Millis> = calls.iter().map(|&i| h.attempts_of(i)[0]).collect();
    assert!(sent[0] < 10.0, "the first at once: {sent:?}");
    let pace = 600.0 * HOUR / 950.0;
    for pair in sent.windows(2) {
        assert!((pair[1] - pair[0] - pace).abs() < 2_000.0, "{sent:?}");
    }
    assert!(calls.iter().all(|&i| h.end(i) == Some(End::Deliver)));
    assert_eq!(server.borrow().counted.len(), 4);
}

/// Calls every minute through two periods of `period` with `limit` credits, the server turning
/// `lag` ms late: when the first call after the first period's end was sent.
fn first_after_the_turn(lag: Millis) -> (Millis, Rc<RefCell<Periods>>) {
    // 24 credits an hour's period, the first ending at 66 minutes (between two readings a
    // refresh apart): the spread's 22.8 a period, demand at 60 an hour (2.6x).
    let (period, end) = (HOUR, 66.0 * 60_000.0);
    let (mut h, server) = periods(24.0, period, end, lag);
    for minute in 0..110 {
        h.start_at(minute as f64 * 60_000.0, patient());
    }
    h.run();
    let counted = server.borrow().counted.clone();
    let before = counted.iter().filter(|&&at| at < end).count();
    assert!((20..=24).contains(&before), "{before} in the first period");
    let first = counted.iter().copied().find(|&at| at >= end).unwrap();
    (first - end, server)
}

#[test]
fn calls_waiting_at_the_periods_end_resume_within_a_second_of_the_new_one() {
    // The reading is due at the end itself; a new period's bucket opens with credit. Before
    // #49: at the next refresh, 9 minutes later.
    let (after, _) = first_after_the_turn(0.0);
    println!("turned on time: the first call {after} ms after");
    assert!(after < 1_000.0, "{after} ms after the turn");
}

#[test]
fn a_server_late_to_turn_its_period_is_read_again_soon_then_less_often() {
    // Turned 3 s late: read at the end (old), then 1 s, 1 s, 2 s later: the new period 1 s
    // after it began. Before #49: a refresh (15 minutes) later.
    let lag = 3_000.0;
    let (after, _) = first_after_the_turn(lag);
    println!("turned {lag} ms late: the first call {after} ms after the end");
    assert!(
        after >= lag && after < lag + 1_100.0,
        "{after} ms after the end"
    );
}

#[test]
fn a_usage_that_never_answers_holds_calls_no_longer_than_their_attempt_time_limit() {
    // `retry.attemptTimeoutMs: 3000`: the first reading ends at 3 s with no answer, and the
    // calls go on unpaced. Before #49 it held them 30 s (the probe's own limit).
    let (mut h, _) = periods(1_000.0, 30.0 * 24.0 * HOUR, 600.0 * HOUR, 0.0);
    h.world.usage_hangs = true;
    let hurried = || CallSpec {
        policy: Some(Rc::new(RetryPolicy {
            attempt_timeout_ms: 3_000.0,
            ..RetryPolicy::default()
        })),
        ..patient()
    };
    let refresh = Spread::DEFAULT.refresh_ms;
    let first: Vec<usize> = (0..3).map(|_| h.start_at(0.0, hurried())).collect();
    // The next reading is due a refresh after the first ended.
    let at = refresh + 10_000.0;
    let later: Vec<usize> = (0..3).map(|_| h.start_at(at, hurried())).collect();
    h.run();
    for i in first {
        let held = h.attempts_of(i)[0];
        // A timed-out request sets the gate's short pause for a failing network first.
        assert!((3_000.0..3_300.0).contains(&held), "held {held} ms");
        assert_eq!(h.end(i), Some(End::Deliver));
    }
    // Calls wait for the first reading only; later ones go on by the last answer (none).
    for i in later {
        assert_eq!(h.attempts_of(i)[0], at);
        assert_eq!(h.end(i), Some(End::Deliver));
    }
    let readings = h.world.log.sent.iter().filter(|s| s.probe).count();
    assert_eq!(readings, 2, "one at the start, one a refresh on");
}

#[test]
fn a_call_with_no_max_wait_waits_a_minute_for_credit_at_most_and_hears_when_it_comes() {
    // Demand at 3x a small plan's pace (1,000 credits, 600 hours: one every 37.9 minutes),
    // calls with no `maxWaitMs`: each waits for credit at most a minute (the spread's own
    // bound), so calls waiting stay few; the others hear `credit-wait` at once, with when.
    // Before #49 they all waited: 11 → 109 waiting in 27 s, 123 pending at the period's end.
    let (mut h, server) = periods(1_000.0, 30.0 * 24.0 * HOUR, 600.0 * HOUR, 0.0);
    let every = 600.0 * HOUR / 950.0 / 3.0;
    let starts: Vec<Millis> = (0..30).map(|n| n as f64 * every).collect();
    let calls: Vec<usize> = starts
        .iter()
        .map(|&at| h.start_at(at, unbounded()))
        .collect();
    h.run();
    let (mut sent, mut refused) = (0, 0);
    for (&i, &started) in calls.iter().zip(&starts) {
        match h.end(i) {
            Some(End::Deliver) => {
                sent += 1;
                let waited = h.attempts_of(i)[0] - started;
                assert!(waited <= 60_000.0, "waited {waited} ms");
            }
            Some(End::Abandoned { abandoned, .. }) => {
                refused += 1;
                assert_eq!(abandoned.reason, Reason::CreditWait);
                assert!(h.ended_at(i) - started < 1.0, "at once");
                let when = abandoned.retry_after_ms.unwrap();
                assert!(
                    when > 60_000.0 && when <= 600.0 * HOUR / 950.0 + 1.0,
                    "{when}"
                );
            }
            other => panic!("{other:?}"),
        }
    }
    println!("3x a small plan, no maxWaitMs: {sent} sent, {refused} refused at once");
    // A credit every third call's arrival: a third sent (the opening credit one more).
    assert!((10..=12).contains(&sent), "{sent}");
    assert_eq!(sent + refused, 30);
    assert_eq!(server.borrow().counted.len(), sent);
}

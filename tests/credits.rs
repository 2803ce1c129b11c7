//! The spread (#37) over a month on a virtual clock: a key's credits paced to the end of its
//! billing period by `rules::credits`, against #37's targets. Each test prints what it
//! measured (`cargo test --test credits -- --nocapture`); its bounds are those figures with a
//! small margin.
//!
//! The month: a 30-day period of 100 000 credits, `/usage` read every `refreshMs` (the server
//! counts at the moment the reading is sent; the answer comes 250 ms later, while calls go on),
//! calls arriving as a Poisson process from a seeded generator. A call waits for its credits in
//! a queue in arrival order, and is dropped after a minute of waiting (`maxWaitMs`): demand
//! above the spread is refused, not queued for days.
#![cfg(not(target_arch = "wasm32"))]

use std::collections::VecDeque;

use odds_gate::core::base::random::{Random, Seeded};
use odds_gate::core::rules::credits::{Costs, CreditBucket, Spread};
use odds_gate::core::rules::quota::Usage;
use odds_gate::core::Millis;
use proptest::prelude::*;

const DAY: Millis = 86_400_000.0;
const DAYS: usize = 30;
const LIMIT: f64 = 100_000.0;
const LATENCY: Millis = 250.0;
const MAX_WAIT: Millis = 60_000.0;
const ROUTE: &str = "GET /*/events/*/odds/history";

/// The credits the spread paces: the limit less the reserve.
fn spread_credits() -> f64 {
    LIMIT * (1.0 - Spread::DEFAULT.reserve)
}

/// What a month asks for.
struct Demand {
    /// Calls as a multiple of what the spread allows, at their true cost.
    times: f64,
    /// What the server charges a call.
    cost: f64,
    /// What the rule is told (`quota.costs`).
    costs: Costs,
    /// Another process's spending on the same key, as a share of the spread's even pace.
    others: f64,
}

/// What a month did.
#[derive(Debug, Default)]
struct Month {
    /// Credits the server counted each day, this process's and others'.
    days: Vec<f64>,
    /// This process's calls admitted, and of those, admitted at once.
    admitted: u64,
    at_once: u64,
    dropped: u64,
    /// The server's `used` at the period's end.
    used: f64,
    /// The last admission.
    last: Millis,
}

impl Month {
    /// Each day's credits over an even day's.
    fn evenness(&self) -> (f64, f64) {
        let even = spread_credits() / DAYS as f64;
        let shares = self.days.iter().map(|d| d / even);
        let low = shares.clone().fold(f64::INFINITY, f64::min);
        (low, shares.fold(0.0, f64::max))
    }

    fn print(&self, name: &str) {
        let (low, high) = self.evenness();
        println!(
            "{name}: used {:.0} of {LIMIT} ({:.2} % of the spread), days {:.3}..{:.3} of even, \
             {} admitted ({} at once), {} dropped, last admission {:.2} h before the end",
            self.used,
            100.0 * self.used / spread_credits(),
            low,
            high,
            self.admitted,
            self.at_once,
            self.dropped,
            (DAYS as f64 * DAY - self.last) / 3_600_000.0,
        );
    }
}

/// The time until the next event of a Poisson process of `per_ms`.
fn gap(random: &mut Seeded, per_ms: f64) -> Millis {
    if per_ms > 0.0 {
        -(1.0 - random.unit()).ln() / per_ms
    } else {
        Millis::INFINITY
    }
}

/// Runs a month of `demand`; panics if a call finds its credits missing at the time `take`
/// gave it, or if the server's `used` passes the limit.
fn month(mut demand: Demand, seed: u64) -> Month {
    let spread = Spread::DEFAULT;
    let end = DAYS as f64 * DAY;
    let even_per_ms = spread_credits() / end;
    let calls_per_ms = demand.times * even_per_ms / demand.cost;
    let others_per_ms = demand.others * even_per_ms;
    let mut random = Seeded::new(seed);
    let reading = |used| Usage {
        used,
        limit: LIMIT,
        period_end: Some(end),
    };
    let mut bucket = CreditBucket::start(spread, 0.0, reading(0.0)).unwrap();
    let mut used = 0.0;
    let mut m = Month {
        days: vec![0.0; DAYS],
        ..Month::default()
    };
    let mut queue: VecDeque<Millis> = VecDeque::new();
    let mut next_call = gap(&mut random, calls_per_ms);
    let mut next_other = gap(&mut random, others_per_ms);
    let mut next_send = spread.refresh_ms;
    let mut answer: Option<(Millis, f64)> = None;
    // When the head of the queue was told its credits would be there, and which call it was.
    let mut promise: Option<(Millis, Millis)> = None;
    loop {
        let head = promise.map_or(Millis::INFINITY, |(at, _)| at);
        let answer_at = answer.map_or(Millis::INFINITY, |(at, _)| at);
        let now = next_call
            .min(next_other)
            .min(next_send)
            .min(answer_at)
            .min(head);
        if now >= end {
            break;
        }
        let day = (now / DAY) as usize;
        if now == next_call {
            queue.push_back(now);
            next_call += gap(&mut random, calls_per_ms);
        } else if now == next_other {
            used += 1.0;
            m.days[day] += 1.0;
            next_other += gap(&mut random, others_per_ms);
            continue;
        } else if now == next_send {
            bucket.sent();
            answer = Some((now + LATENCY, used));
            next_send += spread.refresh_ms;
            continue;
        } else if now == answer_at {
            let (_, counted) = answer.take().unwrap();
            bucket.read(now, reading(counted), &mut demand.costs);
            promise = None;
        }
        // Serve the queue: drop who waited too long, then admit in order.
        while queue.front().is_some_and(|&at| at + MAX_WAIT < now) {
            queue.pop_front();
            m.dropped += 1;
        }
        if promise.is_some_and(|(at, _)| at > now) {
            continue;
        }
        let due = promise.take();
        while let Some(&arrived) = queue.front() {
            let cost = demand.costs.cost(ROUTE);
            match bucket.take(now, cost) {
                Ok(()) => {
                    demand.costs.called(ROUTE);
                    used += demand.cost;
                    assert!(used <= LIMIT, "used {used} past the limit at {now}");
                    m.days[day] += demand.cost;
                    m.admitted += 1;
                    m.at_once += u64::from(arrived == now);
                    m.last = now;
                    queue.pop_front();
                }
                Err(at) => {
                    if let Some((promised, who)) = due {
                        assert!(
                            !(promised == now && who == arrived),
                            "credits missing at {now}, promised for then"
                        );
                    }
                    promise = at.is_finite().then_some((at, arrived));
                    break;
                }
            }
        }
    }
    m.used = used;
    m
}

/// The first bullet's targets: at least 95 % of the spread spent, never exhausted, every day
/// within 10 % of even.
fn spends_the_spread_evenly(m: &Month, share: f64, low: f64, high: f64) {
    assert!(m.used >= share * spread_credits(), "{}", m.used);
    assert!(m.used <= spread_credits(), "{}", m.used);
    assert!(
        DAYS as f64 * DAY - m.last < 3_600_000.0,
        "admits to the last hour"
    );
    let (least, most) = m.evenness();
    assert!(least >= low && most <= high, "days {least}..{most} of even");
}

#[test]
fn demand_three_times_the_quota_spends_it_evenly_to_the_end() {
    let m = month(
        Demand {
            times: 3.0,
            cost: 1.0,
            costs: Costs::default(),
            others: 0.0,
        },
        1,
    );
    m.print("3x");
    spends_the_spread_evenly(&m, 0.995, 0.99, 1.02);
}

#[test]
fn demand_half_the_quota_is_never_held_back() {
    let m = month(
        Demand {
            times: 0.5,
            cost: 1.0,
            costs: Costs::default(),
            others: 0.0,
        },
        2,
    );
    m.print("0.5x");
    assert_eq!(m.at_once, m.admitted, "every call admitted at once");
    assert_eq!(m.dropped, 0);
}

#[test]
fn a_route_stated_to_cost_five_spends_the_same() {
    let costs = Costs::new(vec![("/events/*/odds/history".into(), 5.0)]).unwrap();
    let m = month(
        Demand {
            times: 3.0,
            cost: 5.0,
            costs,
            others: 0.0,
        },
        3,
    );
    m.print("3x at 5 credits, stated");
    spends_the_spread_evenly(&m, 0.995, 0.99, 1.02);
}

#[test]
fn a_route_learned_to_cost_five_spends_the_same() {
    let m = month(
        Demand {
            times: 3.0,
            cost: 5.0,
            costs: Costs::default(),
            others: 0.0,
        },
        4,
    );
    m.print("3x at 5 credits, learned");
    // 0.998..1.009 measured: what calls took for 1 before the delta said 5 is paid then.
    spends_the_spread_evenly(&m, 0.995, 0.99, 1.015);
}

#[test]
fn another_process_spending_the_key_is_accounted_for() {
    // The route's cost is stated, so what the server counted beyond this process's calls is
    // another's (learning would count it as this route's cost instead).
    let costs = Costs::new(vec![("/events/*/odds/history".into(), 1.0)]).unwrap();
    let m = month(
        Demand {
            times: 3.0,
            cost: 1.0,
            costs,
            others: 0.3,
        },
        5,
    );
    m.print("3x with another process at 0.3x");
    spends_the_spread_evenly(&m, 0.995, 0.99, 1.025);
}

/// One step of the property test's run.
#[derive(Debug, Clone)]
enum Step {
    /// Time passes.
    Wait(Millis),
    /// A call of this cost asks, from a lane with `reserve: true` or not.
    Take(f64, bool),
    /// A reading, after others spent this many credits.
    Read(f64),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (0.0..4e6f64).prop_map(Step::Wait),
        (0.0..20.0f64, any::<bool>()).prop_map(|(cost, reserve)| Step::Take(cost, reserve)),
        (0.0..50.0f64).prop_map(Step::Read),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Whatever the settings, readings and calls: a wait `take` gives is never early (the
    /// credits are there then, if nothing else happened), and `used` never passes the limit.
    #[test]
    fn take_never_promises_early_nor_passes_the_limit(
        limit in 10.0..5_000.0f64,
        share_used in 0.0..1.0f64,
        days in 0.01..5.0f64,
        reserve in 0.0..0.5f64,
        burst_ms in 1e3..1e7f64,
        refresh_ms in 1e3..1e7f64,
        steps in proptest::collection::vec(step(), 1..60),
    ) {
        let spread = Spread { reserve, burst_ms, refresh_ms }.validate().unwrap();
        let end = days * DAY;
        let mut used = share_used * limit;
        let reading = |used| Usage { used, limit, period_end: Some(end) };
        let mut bucket = CreditBucket::start(spread, 0.0, reading(used)).unwrap();
        let mut costs = Costs::default();
        let mut now = 0.0;
        for step in steps {
            match step {
                Step::Wait(ms) => now += ms,
                Step::Take(cost, reserved) => {
                    let take = |b: &mut CreditBucket, at, cost| {
                        if reserved { b.take_reserved(at, cost) } else { b.take(at, cost) }
                    };
                    match take(&mut bucket, now, cost) {
                        Ok(()) => {
                            used += cost;
                            prop_assert!(used <= limit + 1e-6, "used {} of {}", used, limit);
                        }
                        Err(at) => {
                            prop_assert!(at > now, "{} at {}", at, now);
                            if at.is_finite() {
                                let mut later = bucket;
                                prop_assert_eq!(take(&mut later, at, cost), Ok(()), "at {}", at);
                            }
                        }
                    }
                }
                Step::Read(others) => {
                    used += others.min(limit - used).max(0.0);
                    bucket.sent();
                    bucket.read(now, reading(used), &mut costs);
                }
            }
        }
    }
}

//! The spread (#37) through the gate on a virtual clock: the `/usage` readings the gate sends,
//! calls waiting for the first, credit taken before the allowance's token, and calls refused at
//! once when their credit comes after their deadline. Each month prints what it measured
//! (`cargo test --test spread -- --nocapture`); the bounds are those figures with a margin.
//!
//! The month: a 30-day period of 100 000 credits, a server that counts what each call costs
//! and answers `/usage` with its count, calls arriving as a Poisson process from a seeded
//! generator, each refused when its admission is predicted more than a minute away
//! (`maxWaitMs`): demand above the spread is refused, not queued for days.
#![cfg(not(target_arch = "wasm32"))]

#[path = "harness/mod.rs"]
mod harness;

use std::cell::RefCell;
use std::rc::Rc;

use harness::{Harness, Reply};
use odds_gate::core::authority::threads::{Settings, Slot, ThreadAuthority, WORDS};
use odds_gate::core::base::random::{Random, Seeded};
use odds_gate::core::gate::action::{End, GateAction};
use odds_gate::core::gate::call::CallSpec;
use odds_gate::core::gate::ids::CallId;
use odds_gate::core::gate::queue::Lane;
use odds_gate::core::gate::store_link::StoreSettings;
use odds_gate::core::gate::Gate;
use odds_gate::core::gates::ids::GateId;
use odds_gate::core::gates::profile::Keeping;
use odds_gate::core::gates::scope::Scope;
use odds_gate::core::gates::Gates;
use odds_gate::core::parse::feedback::Feedback;
use odds_gate::core::rules::allowance::Rate;
use odds_gate::core::rules::batch::Batch;
use odds_gate::core::rules::credits::{Costs, Spread, CREDIT_WAIT_MS};
use odds_gate::core::rules::policy::{Reason, RetryPolicy};
use odds_gate::core::rules::quota::Usage;
use odds_gate::core::sim::home::SimHome;
use odds_gate::core::sim::server::{Arrival, Server};
use odds_gate::core::sim::world::World;
use odds_gate::core::Millis;

const HOUR: Millis = 3_600_000.0;
const DAY: Millis = 24.0 * HOUR;
const DAYS: usize = 30;
const LIMIT: f64 = 100_000.0;
const MAX_WAIT: Millis = 60_000.0;
const ROUTE: &str = "GET /*/events/*/odds/history";

/// What the server counted.
#[derive(Debug)]
struct Meter {
    /// What a call costs.
    cost: f64,
    limit: f64,
    end: Millis,
    used: f64,
    /// Credits spent each day.
    days: Vec<f64>,
    /// Calls refused because the quota was spent.
    exhausted: u64,
}

/// A server that charges each call `cost` credits, and answers `/usage` with its count.
struct Counting(Rc<RefCell<Meter>>);

impl Server for Counting {
    fn reply(&mut self, now: Millis, _: &Arrival) -> Reply {
        let mut m = self.0.borrow_mut();
        if m.used + m.cost > m.limit {
            m.exhausted += 1;
            return Reply::status(429, &[]).saying("quota_exceeded", "Monthly credits spent");
        }
        m.used += m.cost;
        let day = ((now / DAY) as usize).min(m.days.len() - 1);
        let cost = m.cost;
        m.days[day] += cost;
        Reply::ok()
    }

    fn usage(&mut self, _: Millis) -> Option<Usage> {
        let m = self.0.borrow();
        Some(Usage {
            used: m.used,
            limit: m.limit,
            period_end: Some(m.end),
        })
    }
}

/// A gate far above the spread's pace (10 a second), spreading with the defaults.
fn spreading(costs: Costs) -> Gate {
    let rate = Rate::new(10.0, 10.0).unwrap();
    let gate = Gate::new(rate, None, 0.0, Box::new(Seeded::new(7)));
    gate.spreading(Spread::DEFAULT, costs).unwrap()
}

/// A call of the month's route, retrying as by default, refused past `maxWaitMs`.
fn call(max_wait_ms: Option<Millis>) -> CallSpec {
    CallSpec {
        policy: Some(Rc::new(RetryPolicy::default())),
        replayable: true,
        max_wait_ms,
        route: Some(Rc::from(ROUTE)),
        ..CallSpec::default()
    }
}

/// A harness for `gate` whose server charges `cost` a call, out of `limit` credits until `end`.
fn counted(gate: Gate, cost: f64, limit: f64, end: Millis) -> (Harness, Rc<RefCell<Meter>>) {
    let meter = Rc::new(RefCell::new(Meter {
        cost,
        limit,
        end,
        used: 0.0,
        days: vec![0.0; (end / DAY).ceil().max(1.0) as usize],
        exhausted: 0,
    }));
    let mut h = Harness::new(gate, Box::new(|_, _, _| Reply::ok()));
    h.world.server = Box::new(Counting(meter.clone()));
    (h, meter)
}

/// What a month did.
struct Month {
    /// Each day's credits over an even day's, lowest and highest.
    low: f64,
    high: f64,
    /// Credits spent over the spread's.
    spent: f64,
    admitted: usize,
    /// Calls that waited for their admission (1 ms or more).
    held: usize,
    refused: usize,
    /// Refusals that said credit (`credit-wait`), at once.
    for_credit: usize,
    exhausted: u64,
    /// `/usage` readings sent within the period.
    readings: usize,
    /// `/usage` readings sent past the period's end.
    late_readings: usize,
    /// The shortest time between two readings (whichever process sent them) after the
    /// second: the second may be the first bucket's early one.
    gaps: Millis,
}

/// Runs a month of calls `times` what the spread allows at their true `cost`, the gate told
/// `costs`.
fn month(times: f64, cost: f64, costs: Costs, seed: u64) -> Month {
    fleet_month(Fleet::Alone, times, cost, costs, seed)
}

/// Where a month's gates keep their state.
#[derive(Debug, Clone, Copy)]
enum Fleet {
    /// One gate, in one process's memory.
    Alone,
    /// One gate in each of this many processes sharing a store (a millisecond away).
    Store(usize),
    /// One gate in each of this many threads sharing a slot.
    Threads(usize),
}

/// A slot the month's threads share (the simulator runs them in turn: no lock needed).
#[derive(Clone, Default)]
struct Kept(Rc<RefCell<Vec<f64>>>);

impl Slot for Kept {
    fn transact(&mut self, f: &mut dyn FnMut(&mut [f64; WORDS]) -> bool, _: bool) -> bool {
        let mut words = [0.0; WORDS];
        let mut kept = self.0.borrow_mut();
        kept.resize(WORDS, 0.0);
        words.copy_from_slice(&kept);
        if f(&mut words) {
            kept.copy_from_slice(&words);
        }
        true
    }
}

/// The world of a month's `fleet`, their server counting credits.
fn month_world(fleet: Fleet, cost: f64, costs: Costs) -> (World, Vec<GateId>, Rc<RefCell<Meter>>) {
    plan_world(fleet, cost, costs, LIMIT)
}

/// The world of a month of `limit` credits for `fleet`, their server counting credits.
fn plan_world(
    fleet: Fleet,
    cost: f64,
    costs: Costs,
    limit: f64,
) -> (World, Vec<GateId>, Rc<RefCell<Meter>>) {
    let end = DAYS as f64 * DAY;
    let (_, meter) = counted(spreading(Costs::default()), cost, limit, end);
    let scope = Scope::of(Some("month"), None);
    let rate = Rate::new(10.0, 10.0).unwrap();
    let slot = Kept::default();
    let n = match fleet {
        Fleet::Alone => 1,
        Fleet::Store(n) | Fleet::Threads(n) => n,
    };
    let mut processes = Vec::new();
    let mut ids = Vec::new();
    for p in 0..n {
        let random = Box::new(Seeded::new(7 + p as u64));
        let (gate, keeping) = match fleet {
            Fleet::Alone => (
                Gate::new(rate, None, 0.0, random),
                Keeping::Memory { threads: false },
            ),
            Fleet::Store(_) => (
                Gate::shared(rate, None, StoreSettings::DEFAULT, 0.0, random),
                Keeping::Store(0),
            ),
            Fleet::Threads(_) => {
                let settings = Settings {
                    rate,
                    budget: None,
                    learn: false,
                };
                let thread =
                    ThreadAuthority::join(Box::new(slot.clone()), settings, p as u32 + 1, 0.0);
                let thread = thread.unwrap_or_else(|_| panic!("the threads agree"));
                (
                    Gate::threaded(thread, random),
                    Keeping::Memory { threads: true },
                )
            }
        };
        let gate = gate.spreading(Spread::DEFAULT, costs.clone()).unwrap();
        let mut gates = Gates::new(Box::new(SimHome::alone(1 + p as u64)));
        ids.push(gates.insert(scope.clone(), gate, keeping));
        processes.push(gates);
    }
    let mut world = World::new(processes, Box::new(Counting(meter.clone())));
    world.sweeps = false;
    world.store.latency = 1.0;
    (world, ids, meter)
}

/// [`month`] across a `fleet`, each call made in one of its gates at random.
fn fleet_month(fleet: Fleet, times: f64, cost: f64, costs: Costs, seed: u64) -> Month {
    let end = DAYS as f64 * DAY;
    let spread = LIMIT * (1.0 - Spread::DEFAULT.reserve);
    let calls_per_ms = times * spread / end / cost;
    let (mut h, gates, meter) = month_world(fleet, cost, costs);
    let mut random = Seeded::new(seed);
    let mut starts = Vec::new();
    let mut at = 0.0;
    loop {
        at += -(1.0 - random.unit()).ln() / calls_per_ms;
        if at >= end {
            break;
        }
        starts.push(at);
        let p = ((random.unit() * gates.len() as f64) as usize).min(gates.len() - 1);
        h.start_on(at, p, gates[p], call(Some(MAX_WAIT)));
    }
    h.run();
    let sent = &h.log.sent;
    let mut first = vec![None; starts.len()];
    for s in sent.iter().filter(|s| !s.probe) {
        first[s.index].get_or_insert(s.at);
    }
    // Readings within the period; past its end (the counted server never turns it) they
    // come a second, then 2, 4, 8 s... apart while calls wait.
    let readings = sent.iter().filter(|s| s.probe && s.at < end).count();
    let late_readings = sent.iter().filter(|s| s.probe && s.at >= end).count();
    let gaps = sent
        .iter()
        .filter(|s| s.probe && s.at < end)
        .map(|s| s.at)
        .collect::<Vec<_>>()
        .windows(2)
        .skip(1)
        .map(|w| w[1] - w[0])
        .fold(f64::INFINITY, f64::min);
    let (mut admitted, mut held, mut refused, mut for_credit) = (0, 0, 0, 0);
    for (i, &start) in starts.iter().enumerate() {
        match (first[i], h.log.settled.get(&i).map(|(_, end)| *end)) {
            (Some(sent), Some(End::Deliver)) => {
                admitted += 1;
                held += usize::from(sent - start >= 1.0);
            }
            (None, Some(End::Abandoned { abandoned, .. })) => {
                // Credit is what every refusal waits for: said at once when it is known.
                match abandoned.reason {
                    Reason::CreditWait => {
                        for_credit += 1;
                        // None: not before the next reading.
                        let wait = abandoned.retry_after_ms.unwrap_or(f64::INFINITY);
                        assert!(wait > MAX_WAIT, "{wait}");
                    }
                    reason => assert_eq!(reason, Reason::QueueWait),
                }
                refused += 1;
            }
            other => panic!("call {i}: {other:?}"),
        }
    }
    let m = meter.borrow();
    let even = spread / DAYS as f64;
    let shares = m.days.iter().map(|d| d / even);
    Month {
        low: shares.clone().fold(f64::INFINITY, f64::min),
        high: shares.fold(0.0, f64::max),
        spent: m.used / spread,
        admitted,
        held,
        refused,
        for_credit,
        exhausted: m.exhausted,
        readings,
        late_readings,
        gaps,
    }
}

impl Month {
    fn print(&self, name: &str) {
        println!(
            "{name}: {:.2} % of the spread spent, days {:.3}..{:.3} of even, {} admitted \
             ({} held), {} refused ({} for credit), {} readings (at least {:.0} s apart) and {} past the end, {} \
             refused by the server",
            100.0 * self.spent,
            self.low,
            self.high,
            self.admitted,
            self.held,
            self.refused,
            self.for_credit,
            self.readings,
            self.gaps / 1000.0,
            self.late_readings,
            self.exhausted,
        );
    }
}

#[test]
fn demand_at_three_times_the_quota_spends_the_spread_evenly_to_the_end() {
    let m = month(3.0, 1.0, Costs::default(), 1);
    m.print("3x");
    // #37 asks for 95 % and every day within 10 % of even: 100.00 % and 0.999..1.010 measured.
    assert!(m.spent >= 0.999, "{:.4}", m.spent);
    assert!(m.spent <= 1.0 + 1e-9);
    assert_eq!(m.exhausted, 0, "never exhausted");
    let (low, high) = (m.low, m.high);
    assert!(low >= 0.99 && high <= 1.02, "{low:.3}..{high:.3}");
}

#[test]
fn demand_at_half_the_quota_is_never_held() {
    let m = month(0.5, 1.0, Costs::default(), 2);
    m.print("0.5x");
    assert_eq!((m.held, m.refused, m.exhausted), (0, 0, 0));
    // 49.89 % measured: what was asked for.
    assert!((0.49..0.51).contains(&m.spent), "{:.4}", m.spent);
}

#[test]
fn a_route_costing_five_learned_or_stated_spends_the_same() {
    let m = month(3.0, 5.0, Costs::default(), 3);
    m.print("3x, cost 5");
    // 100.00 % and 0.998..1.009 measured: an early reading after its first 5 calls learns it
    // is 5, and what was taken for 1 is paid (0.998..1.041 before #49, learned a refresh on).
    assert!(m.spent >= 0.999, "{:.4}", m.spent);
    assert_eq!(m.exhausted, 0);
    let (low, high) = (m.low, m.high);
    assert!(low >= 0.99 && high <= 1.015, "{low:.3}..{high:.3}");
    let stated = Costs::new(vec![("GET /events/*/odds/history".into(), 5.0)]).unwrap();
    // Stated (`quota.costs`): 100.00 % and 0.999..1.009 measured.
    let told = month(3.0, 5.0, stated, 3);
    told.print("3x, cost 5 stated");
    let (low, high) = (told.low, told.high);
    assert!(told.spent >= 0.999 && told.exhausted == 0);
    assert!(low >= 0.99 && high <= 1.02, "{low:.3}..{high:.3}");
    let half = month(0.5, 5.0, Costs::default(), 4);
    half.print("0.5x, cost 5");
    assert_eq!((half.held, half.refused, half.exhausted), (0, 0, 0));
}

#[test]
fn four_processes_through_a_store_spend_one_spread_with_one_reader() {
    let m = fleet_month(Fleet::Store(4), 3.0, 1.0, Costs::default(), 5);
    m.print("3x, 4 processes");
    m.check_fleet();
}

#[test]
fn four_threads_sharing_a_slot_spend_one_spread_with_one_reader() {
    let m = fleet_month(Fleet::Threads(4), 3.0, 1.0, Costs::default(), 6);
    m.print("3x, 4 threads");
    m.check_fleet();
}

impl Month {
    /// A fleet's month at 3x: #37 asks for 95 % and every day within 10 % of even (100.00 %
    /// and 0.999..1.010 measured, through a store and through threads); one reading a refresh
    /// for the fleet: 2880 in 30 days of 15 minutes, never two closer but the first bucket's
    /// early one (#49: 99 to 568 s after the first, once 10 credits were asked).
    fn check_fleet(&self) {
        assert!(self.spent >= 0.999, "{:.4}", self.spent);
        assert!(self.spent <= 1.0 + 1e-9);
        assert_eq!(self.exhausted, 0, "never exhausted");
        let (low, high) = (self.low, self.high);
        assert!(low >= 0.99 && high <= 1.02, "{low:.3}..{high:.3}");
        let refreshes = (DAYS as f64 * DAY / Spread::DEFAULT.refresh_ms) as usize;
        let readings = self.readings;
        assert!(
            (refreshes..=refreshes + 1).contains(&readings),
            "{readings}"
        );
        // A token due within a timer's tolerance (1 ms) is taken early, readings' too.
        let gaps = self.gaps;
        assert!(gaps >= Spread::DEFAULT.refresh_ms - 1.0, "{gaps}");
        self.check_late_readings();
    }

    /// Past the end, calls wait at most `MAX_WAIT` (60 s): readings at 1, 2, 4... 32 s past
    /// it, one more if a reading at the end itself went out: 7 at most.
    fn check_late_readings(&self) {
        let late = self.late_readings;
        assert!((1..=7).contains(&late), "{late}");
    }
}

/// Every action `gate` has at `now`, in order.
fn actions(gate: &mut Gate, now: Millis) -> Vec<GateAction> {
    std::iter::from_fn(|| gate.poll_action(now)).collect()
}

/// The calls `actions` send.
fn sends(actions: &[GateAction]) -> Vec<CallId> {
    let send = |a: &GateAction| match a {
        GateAction::Send { call, .. } => Some(*call),
        _ => None,
    };
    actions.iter().filter_map(send).collect()
}

#[test]
fn the_first_calls_wait_for_the_first_reading_and_go_unpaced_when_it_has_no_answer_or_no_limit() {
    for (answered, limit) in [(true, 1000.0), (false, 1000.0), (true, -1.0)] {
        let mut g = spreading(Costs::default());
        let first = g.start(0.0, call(None), 0);
        let reading = match actions(&mut g, 0.0)[..] {
            [GateAction::StartProbe { probe, origin }, GateAction::Send { call, .. }]
                if origin == first && call == probe =>
            {
                probe
            }
            ref other => panic!("{other:?}"),
        };
        let second = g.start(3.0, call(None), 1);
        assert!(sends(&actions(&mut g, 3.0)).is_empty(), "both wait");
        g.responded_with(5.0, reading, 200, Feedback::default());
        assert!(matches!(
            actions(&mut g, 5.0)[..],
            [GateAction::ReadUsage { .. }]
        ));
        let usage = answered.then_some(Usage {
            used: 0.0,
            limit,
            period_end: Some(950.0 * HOUR),
        });
        g.usage(6.0, reading, usage);
        let credits = |g: &mut Gate| g.figures(6.0).credits.unwrap();
        if answered && limit > 0.0 {
            // A credit an hour; the bucket opens with one: the first call goes at once, the
            // second waits an hour (the next reading comes first).
            assert_eq!(sends(&actions(&mut g, 6.0)), [first]);
            let figures = credits(&mut g);
            assert_eq!((figures.waiting_for_credit, figures.unpaced), (1, 0));
            assert!((figures.per_hour - 1.0).abs() < 1e-3, "{figures:?}");
            assert_eq!(
                g.poll_timeout(6.0),
                Some(6.0 + 900_000.0),
                "the next reading"
            );
        } else {
            assert_eq!(
                sends(&actions(&mut g, 6.0)),
                [first, second],
                "unpaced, never stuck"
            );
            assert_eq!(credits(&mut g).unpaced, 2);
        }
    }
}

#[test]
fn a_reading_that_finds_the_quota_spent_ends_every_waiting_call_at_once_as_the_quota() {
    // Used past the limit, or a limit of 0: nothing waits for credit that cannot come.
    let end = 950.0 * HOUR;
    for (used, limit) in [(5_000.0, 1_000.0), (0.0, 0.0)] {
        let mut g = spreading(Costs::default());
        let first = g.start(0.0, call(None), 0);
        let reading = match actions(&mut g, 0.0)[..] {
            [GateAction::StartProbe { probe, .. }, GateAction::Send { call, .. }]
                if call == probe =>
            {
                probe
            }
            ref other => panic!("{other:?}"),
        };
        let second = g.start(3.0, call(None), 1);
        actions(&mut g, 3.0);
        g.responded_with(5.0, reading, 200, Feedback::default());
        actions(&mut g, 5.0);
        let spent = Usage {
            used,
            limit,
            period_end: Some(end),
        };
        g.usage(6.0, reading, Some(spent));
        let ended: Vec<(CallId, End)> = (actions(&mut g, 6.0).into_iter())
            .filter_map(|a| match a {
                GateAction::Settle { call, end, .. } if call != reading => Some((call, end)),
                _ => None,
            })
            .collect();
        let quota = End::Exhausted { until: Some(end) };
        assert_eq!(ended, [(first, quota), (second, quota)], "{spent:?}");
        // A later call fails fast too, with no reading and no wait.
        let third = g.start(10.0, call(None), 2);
        let later: Vec<GateAction> = actions(&mut g, 10.0);
        assert!(sends(&later).is_empty(), "{later:?}");
        assert!(
            later.iter().any(|a| matches!(a, GateAction::Settle { call, end, .. } if *call == third && *end == quota)),
            "{later:?}"
        );
    }
}

#[test]
fn a_call_whose_credit_comes_after_its_deadline_is_refused_at_once() {
    // 1000 credits over 950 hours, 50 kept: a credit an hour, one held at the start.
    let (mut h, _) = counted(spreading(Costs::default()), 1.0, 1000.0, 950.0 * HOUR);
    let patient = h.start_at(0.0, call(None));
    let hurried = h.start_at(1_000.0, call(Some(MAX_WAIT)));
    let batch = Rc::new(RefCell::new(Batch {
        deadline: 1_000.0 + MAX_WAIT,
        budget: None,
    }));
    let in_batch = h.start_at(
        1_000.0,
        CallSpec {
            batch: Some(batch),
            ..call(None)
        },
    );
    let waits = h.start_at(1_000.0, call(Some(2.0 * HOUR)));
    h.run();
    // Credit an hour away: `maxWaitMs` says credit, and when it comes; a batch's deadline is
    // its own reason.
    let Some(End::Abandoned { abandoned, .. }) = h.end(hurried) else {
        panic!("{:?}", h.end(hurried));
    };
    let wait = abandoned.retry_after_ms.unwrap();
    assert!((wait - HOUR).abs() < 0.01 * HOUR, "{wait}");
    for (i, reason) in [(hurried, Reason::CreditWait), (in_batch, Reason::Deadline)] {
        assert!(
            matches!(h.end(i), Some(End::Abandoned { abandoned, .. }) if abandoned.reason == reason),
            "{:?}",
            h.end(i)
        );
        assert_eq!(h.ended_at(i), 1_000.0, "at once, not at its deadline");
    }
    // The first credit at once (the bucket opens with one), an hour for the next.
    let sent = |i: usize| h.attempts_of(i)[0] / HOUR;
    assert!(sent(patient) < 0.01, "{}", sent(patient));
    assert!((sent(waits) - 1.0).abs() < 0.01, "{}", sent(waits));
    assert_eq!(h.end(waits), Some(End::Deliver));
}

#[test]
fn a_lane_with_the_reserve_goes_when_the_background_has_spent_the_spread() {
    // 100 credits over 100 hours, 5 kept: 0.95 an hour for the spread.
    let (limit, end) = (100.0, 100.0 * HOUR);
    let (mut h, meter) = counted(spreading(Costs::default()), 1.0, limit, end);
    let lane = |id, reserve| CallSpec {
        lane: Lane {
            id,
            weight: 1.0,
            reserve,
        },
        // As long as it takes (the spread's own bound is a minute for calls that say none).
        ..call(Some(2.0 * end))
    };
    // Background refreshes wanting twice the month at once, waiting as long as it takes.
    for _ in 0..200 {
        h.start_at(0.0, lane(1, false));
    }
    // An hour before the end, live calls: 8 in a lane with the reserve, 1 in a lane without.
    let live_at = end - HOUR;
    let live: Vec<usize> = (0..8).map(|_| h.start_at(live_at, lane(2, true))).collect();
    let plain = h.start_at(live_at, lane(3, false));
    h.run_until(live_at - 1.0);
    let spent_before = meter.borrow().used;
    h.run_until(end + HOUR);
    let m = meter.borrow();
    let at_once = live
        .iter()
        .filter(|&&i| {
            h.attempts_of(i)
                .first()
                .is_some_and(|&t| t - live_at < 1_000.0)
        })
        .count();
    println!(
        "reserve: {spent_before} credits spent by the background before the live calls, \
         {at_once} of 8 live calls sent within a second, {} in all, {} refused by the server",
        m.used, m.exhausted
    );
    // 94 measured: the spread's 95, less what its last hour still holds.
    assert!((93.0..=95.0).contains(&spent_before), "{spent_before}");
    // 6 measured: the reserve's 5 and the spread's last credit, never past the limit.
    assert!(at_once >= 5, "{at_once}");
    assert_eq!(m.used, limit, "the reserve spent, to the limit");
    assert_eq!(m.exhausted, 0, "never past it");
    assert!(
        h.attempts_of(plain).is_empty(),
        "a lane without the reserve waits"
    );
}

#[test]
fn the_spread_checks_its_settings() {
    let bad = Spread {
        reserve: 1.0,
        ..Spread::DEFAULT
    };
    let message = spreading(Costs::default())
        .spreading(bad, Costs::default())
        .unwrap_err()
        .to_string();
    assert!(message.contains("quota.reserve"), "{message}");
}

#[test]
fn four_threads_learn_what_a_route_costing_five_not_stated_costs() {
    // Each call asks 1 credit and spends 5: the shared state learns a scale of 5 from the
    // readings' deltas (each taking 1 until the first reading after the first).
    let m = fleet_month(Fleet::Threads(4), 3.0, 5.0, Costs::default(), 7);
    m.print("3x, cost 5 not stated, 4 threads");
    m.check_weighted();
    // Half the spread's demand is never held (49.75 % spent).
    let half = fleet_month(Fleet::Threads(4), 0.5, 5.0, Costs::default(), 9);
    half.print("0.5x, cost 5 not stated, 4 threads");
    assert_eq!((half.held, half.refused, half.exhausted), (0, 0, 0));
}

#[test]
fn four_processes_through_a_store_learn_what_a_route_costing_five_not_stated_costs() {
    let m = fleet_month(Fleet::Store(4), 3.0, 5.0, Costs::default(), 8);
    m.print("3x, cost 5 not stated, 4 processes");
    m.check_weighted();
    // Never refused (49.53 % spent); every call through a store waits its millisecond.
    let half = fleet_month(Fleet::Store(4), 0.5, 5.0, Costs::default(), 10);
    half.print("0.5x, cost 5 not stated, 4 processes");
    assert_eq!((half.refused, half.exhausted), (0, 0));
}

impl Month {
    /// A fleet's month at 3x of calls costing 5, not stated: #37 asks for the same as at cost
    /// 1 (95 %, never exhausted, every day within 10 % of even). Measured: 100.00 % and days
    /// 0.998..1.009 (threads), 0.996..1.007 (a store): calls take 1 credit until the first
    /// delta teaches the scale, and what they cost beyond it is paid then (1.028 and 1.029
    /// before #49); with no scale learned, 0.238..1.528.
    fn check_weighted(&self) {
        assert!(self.spent >= 0.999, "{:.4}", self.spent);
        assert!(self.spent <= 1.0 + 1e-9);
        assert_eq!(self.exhausted, 0, "never exhausted");
        let (low, high) = (self.low, self.high);
        assert!(low >= 0.99 && high <= 1.015, "{low:.3}..{high:.3}");
        let gaps = self.gaps;
        assert!(gaps >= Spread::DEFAULT.refresh_ms - 1.0, "{gaps}");
        self.check_late_readings();
    }
}

#[test]
fn a_call_whose_credit_is_hours_away_is_refused_at_once_for_credit_alone_in_threads_and_through_a_store(
) {
    // 100 credits a month, 95 spread: one every 7.6 hours. The first call takes the bucket's
    // opening credit; the second waits for the next (its `maxWaitMs` is a day); a third with
    // `maxWaitMs: 3000` is refused at once, for credit, saying when to look again.
    let credit_every = DAYS as f64 * DAY / 95.0;
    for fleet in [Fleet::Alone, Fleet::Threads(2), Fleet::Store(2)] {
        let (mut h, gates, _) = plan_world(fleet, 1.0, Costs::default(), 100.0);
        let first = h.start_on(0.0, 0, gates[0], call(None));
        let second = h.start_on(10_000.0, 0, gates[0], call(Some(DAY)));
        let hurried = h.start_on(20_000.0, 0, gates[0], call(Some(3_000.0)));
        // No `maxWaitMs` of its own: the spread's bound (a minute) refuses it at once too.
        let unbounded = h.start_on(30_000.0, 0, gates[0], call(None));
        h.run_until(HOUR);
        let (at, end) = h.log.settled[&unbounded];
        assert!(
            matches!(end, End::Abandoned { abandoned, .. } if abandoned.reason == Reason::CreditWait),
            "{fleet:?}: {end:?}"
        );
        assert!(at - 30_000.0 < 10.0, "{fleet:?}: {at}");
        let sent = |i: usize| {
            h.log
                .sent
                .iter()
                .filter(|s| !s.probe && s.index == i)
                .count()
        };
        assert_eq!((sent(first), sent(second)), (1, 0), "{fleet:?}");
        let (at, end) = h.log.settled[&hurried];
        let Some(End::Abandoned { abandoned, .. }) = Some(end) else {
            panic!("{fleet:?}: {end:?}");
        };
        assert_eq!(abandoned.reason, Reason::CreditWait, "{fleet:?} at {at}");
        assert!(
            at - 20_000.0 < 10.0,
            "{fleet:?}: at once, not at its deadline: {at}"
        );
        let wait = abandoned.retry_after_ms.unwrap();
        println!(
            "{fleet:?}: refused after {} ms, look again in {wait} ms",
            at - 20_000.0
        );
        // Alone, when its credit comes (the second's comes first); shared, when the head
        // looks again (the next reading at the latest).
        match fleet {
            Fleet::Alone => assert!((wait - (2.0 * credit_every - 20_000.0)).abs() < 1_000.0),
            _ => assert!(wait > 3_000.0 && wait <= credit_every, "{fleet:?}: {wait}"),
        }
    }
}

#[test]
fn a_head_with_no_max_wait_told_to_wait_for_credit_past_a_minute_hears_so_in_threads_and_through_a_store(
) {
    // As above: the second call waits for a credit 7.6 hours away; with no `maxWaitMs` of its
    // own it is refused as soon as the shared state tells it to wait past a minute.
    for fleet in [Fleet::Threads(2), Fleet::Store(2)] {
        let (mut h, gates, _) = plan_world(fleet, 1.0, Costs::default(), 100.0);
        h.start_on(0.0, 0, gates[0], call(None));
        let second = h.start_on(10_000.0, 0, gates[0], call(None));
        h.run_until(HOUR);
        let (at, end) = h.log.settled[&second];
        let End::Abandoned { abandoned, .. } = end else {
            panic!("{fleet:?}: {end:?}");
        };
        assert_eq!(abandoned.reason, Reason::CreditWait, "{fleet:?}");
        assert!(at - 10_000.0 < 10.0, "{fleet:?}: refused at {at}");
        let wait = abandoned.retry_after_ms.unwrap();
        assert!(
            wait > CREDIT_WAIT_MS && wait <= Spread::DEFAULT.refresh_ms,
            "{wait}"
        );
    }
}

#[test]
fn a_route_costing_five_not_stated_is_measured_before_it_can_overspend() {
    // 100,000 credits over 30 days: 132 an hour, a quarter hour's (33) held at the start. A
    // route costing 5, not stated, is taken for 1 until a reading's delta says otherwise: the
    // reading due after its first 5 calls (a second after the first) measures it. Before #49
    // the first 33 calls went on the opening's credit (165 credits, 5x the due line) and the
    // next reading came a refresh later.
    let (mut h, meter) = counted(spreading(Costs::default()), 5.0, LIMIT, DAYS as f64 * DAY);
    for n in 0..60 {
        h.start_at(n as f64 * 100.0, call(Some(DAY)));
    }
    h.run_until(60_000.0);
    let spent = meter.borrow().used;
    let readings = h.log.sent.iter().filter(|s| s.probe).count();
    println!("cost 5 not stated: {spent} credits spent in the first minute, {readings} readings");
    // 50 measured: the 10 calls sent before the early reading (a second after the first).
    assert!(spent <= 55.0, "{spent}");
    assert_eq!(readings, 2, "the first, and the early one");
}

#[test]
fn a_route_costing_five_not_stated_is_measured_early_where_threads_or_a_store_share_the_spread() {
    // As above, with the spread shared (the default, threads; or a store): once 10 credits
    // were asked at no stated cost after the first reading, a reading is due a second after
    // it, once a bucket. Before, the scale was learned a refresh (15 minutes) on, and the
    // first minute spent 5 credits a call on the opening's credit: 175, where 33 were due.
    for fleet in [Fleet::Threads(2), Fleet::Store(2)] {
        let (mut h, gates, meter) = plan_world(fleet, 5.0, Costs::default(), LIMIT);
        for n in 0..60 {
            h.start_on(
                f64::from(n) * 100.0,
                n as usize % 2,
                gates[n as usize % 2],
                call(Some(DAY)),
            );
        }
        h.run_until(60_000.0);
        let spent = meter.borrow().used;
        let readings = h.log.sent.iter().filter(|s| s.probe).count();
        println!("{fleet:?}, cost 5 not stated: {spent} credits in the first minute, {readings} readings");
        // Measured: 50 through threads, 55 through a store (the calls before the early
        // reading's answer), then the scale's debt holds the rest.
        assert!(spent <= 60.0, "{fleet:?}: {spent}");
        assert_eq!(readings, 2, "{fleet:?}: the first, and the early one");
    }
}

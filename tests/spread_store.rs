//! The spread through a store (#49), on a virtual clock: every member sees the fleet's figures,
//! not only the one that read `/usage`; and while the store is down, each member spends its
//! share of the pace (`localShare`), not the allowance's share unpaced. Each run prints what
//! it measured (`cargo test --test spread_store -- --nocapture`); the bounds are those figures
//! with a margin.
#![cfg(not(target_arch = "wasm32"))]

use std::cell::RefCell;
use std::rc::Rc;

use odds_gate::core::base::random::{Random, Seeded};
use odds_gate::core::gate::call::CallSpec;
use odds_gate::core::gate::store_link::StoreSettings;
use odds_gate::core::gate::Gate;
use odds_gate::core::gates::ids::GateId;
use odds_gate::core::gates::profile::Keeping;
use odds_gate::core::gates::scope::Scope;
use odds_gate::core::gates::Gates;
use odds_gate::core::rules::allowance::Rate;
use odds_gate::core::rules::credits::{Costs, Spread};
use odds_gate::core::rules::policy::RetryPolicy;
use odds_gate::core::rules::quota::Usage;
use odds_gate::core::sim::home::SimHome;
use odds_gate::core::sim::server::{Arrival, Reply, Server};
use odds_gate::core::sim::world::World;
use odds_gate::core::Millis;

const HOUR: Millis = 3_600_000.0;

/// A period of `LIMIT` credits ending at `END`: 95,000 spread over 30 days, 132 an hour.
const LIMIT: f64 = 100_000.0;
const END: Millis = 30.0 * 24.0 * HOUR;

/// The spread's pace, in credits per millisecond.
fn pace() -> f64 {
    LIMIT * (1.0 - Spread::DEFAULT.reserve) / END
}

/// A server that charges a credit a call, and answers `/usage` with its count; `log` keeps
/// when each call was counted.
struct Counting(Rc<RefCell<Vec<Millis>>>);

impl Server for Counting {
    fn reply(&mut self, now: Millis, _: &Arrival) -> Reply {
        self.0.borrow_mut().push(now);
        Reply::ok()
    }

    fn usage(&mut self, _: Millis) -> Option<Usage> {
        Some(Usage {
            used: self.0.borrow().len() as f64,
            limit: LIMIT,
            period_end: Some(END),
        })
    }
}

/// `n` processes, one spreading gate each, sharing a store a millisecond away: the world,
/// their gates, and the server's count.
fn fleet(n: usize) -> (World, Vec<GateId>, Rc<RefCell<Vec<Millis>>>, Scope) {
    let scope = Scope::of(Some("fleet"), None);
    let rate = Rate::new(10.0, 10.0).unwrap();
    let (mut processes, mut ids) = (Vec::new(), Vec::new());
    for p in 0..n {
        let random = Box::new(Seeded::new(11 + p as u64));
        let gate = Gate::shared(rate, None, StoreSettings::DEFAULT, 0.0, random);
        let gate = gate.spreading(Spread::DEFAULT, Costs::default()).unwrap();
        let mut gates = Gates::new(Box::new(SimHome::alone(1 + p as u64)));
        ids.push(gates.insert(scope.clone(), gate, Keeping::Store(0)));
        processes.push(gates);
    }
    let counted = Rc::new(RefCell::new(Vec::new()));
    let mut world = World::new(processes, Box::new(Counting(counted.clone())));
    world.sweeps = false;
    world.store.latency = 1.0;
    (world, ids, counted, scope)
}

/// A call refused when its admission is predicted more than 5 s away.
fn call() -> CallSpec {
    CallSpec {
        policy: Some(Rc::new(RetryPolicy::default())),
        replayable: true,
        max_wait_ms: Some(5_000.0),
        route: Some(Rc::from("GET /*/events/*/odds")),
        ..CallSpec::default()
    }
}

#[test]
fn every_member_shows_the_fleets_figures_not_only_the_one_that_read() {
    let (mut w, gates, counted, scope) = fleet(2);
    // Process 0 calls first, so it claims and sends every reading; process 1 only calls.
    for i in 0..40 {
        w.start_on(
            f64::from(i) * 500.0,
            i as usize % 2,
            gates[i as usize % 2],
            call(),
        );
    }
    w.run_until(30_000.0);
    let readers: Vec<usize> = (w.log.sent.iter())
        .filter(|s| s.probe)
        .map(|s| s.process)
        .collect();
    assert!(
        !readers.is_empty() && readers.iter().all(|&p| p == 0),
        "{readers:?}"
    );
    let now = w.now;
    let used = counted.borrow().len() as f64;
    let figures = |w: &mut World, p: usize| {
        let gate = w.processes[p].gates.gate_mut(&scope).unwrap();
        gate.figures(now).credits.expect("it spreads")
    };
    let (reader, other) = (figures(&mut w, 0), figures(&mut w, 1));
    println!(
        "the reader: used {} of {}, {:.0}/h, ends {:?}; the other: used {} of {}, {:.0}/h, ends \
         {:?}; the server counted {used}",
        reader.used,
        reader.limit,
        reader.per_hour,
        reader.period_end,
        other.used,
        other.limit,
        other.per_hour,
        other.period_end,
    );
    // Before, the other process showed 0 of 0 and no period end: it never read.
    assert_eq!(other.limit, LIMIT);
    assert_eq!(other.used, used, "the store's count, every member's calls");
    assert!((other.per_hour - reader.per_hour).abs() < 1.0);
    let end = other.period_end.expect("the period's end");
    assert!((end - END).abs() < 5.0, "{end}");
}

#[test]
fn with_the_store_down_each_member_spends_its_share_of_the_pace() {
    // Four processes asked 3 times the pace in all, for 14 hours; the store is down from hour
    // 2 to hour 8.
    let (mut w, gates, counted, _) = fleet(4);
    let mut random = Seeded::new(5);
    let (down_from, down_until, end) = (2.0 * HOUR, 8.0 * HOUR, 14.0 * HOUR);
    let mut at = 0.0;
    loop {
        at += -(1.0 - random.unit()).ln() / (3.0 * pace());
        if at >= end {
            break;
        }
        let p = ((random.unit() * 4.0) as usize).min(3);
        w.start_on(at, p, gates[p], call());
    }
    w.run_until(down_from);
    w.store.down = true;
    w.run_until(down_until);
    w.store.down = false;
    w.run_until(end + 10_000.0);
    let counted = counted.borrow();
    let within = |from: Millis, to: Millis| {
        let n = counted.iter().filter(|&&t| t >= from && t < to).count();
        n as f64 / (pace() * (to - from))
    };
    let (before, down, after) = (
        within(0.0, down_from),
        within(down_from, down_until),
        within(down_until, end),
    );
    let whole = within(0.0, end);
    println!(
        "store down 6 h of 14: spent over due {before:.2}x before, {down:.2}x while down, \
         {after:.2}x after, {whole:.2}x in all"
    );
    // Before #49 the members admitted unpaced while the store was down: all of the 3x asked.
    // Measured: 1.12x before (the opening credit), 0.96x while down, 0.98x after (what each
    // spent alone is told to the store when it is back, and teaches its scale nothing), 0.99x
    // in all.
    assert!((0.9..=1.05).contains(&down), "{down}");
    assert!((0.9..=1.05).contains(&after), "{after}");
    assert!(whole <= 1.05, "{whole}");
}

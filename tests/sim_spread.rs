//! The spread (#37) through `simulate({ quota })` and the cache: a 30-day month at 3x the
//! quota's demand with and without the spread, and a cache answering from a stale entry when
//! the spread has no credit left. Each run prints what it measured (`cargo test --test
//! sim_spread -- --nocapture`); the bounds are those figures with a margin.
#![cfg(not(target_arch = "wasm32"))]

use std::cell::RefCell;
use std::rc::Rc;

use odds_gate::core::gate::store_link::StoreSettings;
use odds_gate::core::gates::profile::{Keeping, Profile};
use odds_gate::core::gates::Gates;
use odds_gate::core::rules::allowance::{Allowance, Rate};
use odds_gate::core::rules::cache::CacheConfig;
use odds_gate::core::rules::credits::{Costs, Spread};
use odds_gate::core::rules::policy::RetryPolicy;
use odds_gate::core::rules::quota::Usage;
use odds_gate::core::sim::home::SimHome;
use odds_gate::core::sim::month::DAY_MS;
use odds_gate::core::sim::server::{Arrival, Reply, Server};
use odds_gate::core::sim::world::{SimCall, World};
use odds_gate::core::sim::{
    simulate, Coordination, MonthReport, Served, SimCache, SimOptions, SimQuotaGiven,
};
use odds_gate::core::Millis;

const LIMIT: f64 = 10_000.0;

/// One worker polling a snapshot 3 x the spread's calls over 30 days, evenly.
fn month(spread: bool) -> MonthReport {
    let polls = (3.0 * LIMIT * (1.0 - Spread::DEFAULT.reserve)) as u32;
    let quota = SimQuotaGiven {
        limit: Some(LIMIT),
        days: Some(30.0),
        spread: Some(spread),
        ..SimQuotaGiven::default()
    };
    let options = SimOptions {
        workers: 1,
        polls,
        poll_every_ms: 30.0 * DAY_MS / f64::from(polls),
        coordination: Coordination::Shared,
        quota: Some(quota.quota().unwrap()),
        ..SimOptions::default()
    };
    let report = simulate(&options).unwrap();
    let month = report.quota.unwrap();
    let (low, high) = shares(&month);
    println!(
        "3x, spread {spread}: {:.2} % of the limit spent, exhausted on day {:?}, days \
         {low:.3}..{high:.3} of even, {} readings, {} refused, {} held, {} waiting at the end; \
         {} attempts",
        100.0 * month.used / LIMIT,
        month
            .exhausted_at_ms
            .map(|at| (at / DAY_MS * 100.0).round() / 100.0),
        month.readings,
        month.refused,
        month.held,
        month.waiting,
        report.attempts,
    );
    month
}

/// Each day's credits over an even day's, lowest and highest.
fn shares(month: &MonthReport) -> (f64, f64) {
    let shares = month.spent.iter().map(|d| d / month.even);
    let low = shares.clone().fold(f64::INFINITY, f64::min);
    (low, shares.fold(0.0, f64::max))
}

#[test]
fn a_month_at_three_times_the_quota_runs_dry_on_day_ten_without_the_spread_and_never_with_it() {
    let plain = month(false);
    assert_eq!(plain.spent.len(), 30);
    // The whole limit, gone on day 10.5 (10.53 measured); every later poll refused.
    assert_eq!(plain.used, LIMIT);
    let day = plain.exhausted_at_ms.unwrap() / DAY_MS;
    assert!((10.4..10.7).contains(&day), "{day}");
    assert!(plain.refused > 18_000, "{}", plain.refused);
    assert!(plain.spent[20..].iter().all(|&d| d == 0.0));
    let spread = month(true);
    // #37's targets: at least 95 % of limit x (1 - reserve), never exhausted, every day
    // within 10 % of even.
    let share = spread.used / (LIMIT * (1.0 - Spread::DEFAULT.reserve));
    assert!((0.95..=1.0 + 1e-9).contains(&share), "{share}");
    assert_eq!((spread.exhausted_at_ms, spread.refused), (None, 0));
    let (low, high) = shares(&spread);
    assert!(low >= 0.9 && high <= 1.1, "{low:.3}..{high:.3}");
    assert!(spread.held > 0 && spread.readings > 2_000);
}

/// A server that answers every call, counting `limit` credits over `end` ms.
struct Counting(Rc<RefCell<f64>>, f64, Millis);

impl Server for Counting {
    fn reply(&mut self, _: Millis, _: &Arrival) -> Reply {
        *self.0.borrow_mut() += 1.0;
        Reply::ok().after(5.0)
    }

    fn usage(&mut self, _: Millis) -> Option<Usage> {
        Some(Usage {
            used: *self.0.borrow(),
            limit: self.1,
            period_end: Some(self.2),
        })
    }
}

#[test]
fn with_no_credit_left_in_the_spread_a_stale_entry_answers_at_once_alone_and_through_a_store() {
    for store in [false, true] {
        stale_on_credit(store);
    }
}

/// 100 credits over 20 s, refreshed every second: 4.75 a second for the spread. One worker
/// polls one snapshot every 50 ms for 10 s, fresh for 100 ms: 100 requests wanted. Through a
/// store (a millisecond away), each admission's answer says when a call's credits come next.
fn stale_on_credit(through_store: bool) {
    let used = Rc::new(RefCell::new(0.0));
    let server = Counting(used.clone(), 100.0, 20_000.0);
    let spread = Spread {
        refresh_ms: 1_000.0,
        ..Spread::DEFAULT
    };
    let profile = Profile {
        allowance: Allowance::Fixed(Rate::new(10.0, 10.0).unwrap()),
        budget: None,
        keeping: Keeping::Memory { threads: false },
        policy: Some(Rc::new(RetryPolicy::default())),
        max_wait_ms: None,
        max_waiting: None,
        reports_wait: false,
        typed_errors: false,
        spread: Some((spread, Costs::default())),
    };
    let mut gates = Gates::new(Box::new(SimHome::alone(1)));
    let profile = match through_store {
        true => Profile {
            keeping: Keeping::Store(gates.store("fleet", StoreSettings::DEFAULT)),
            ..profile
        },
        false => profile,
    };
    let wrapper = gates.wrapper(profile);
    let mut w = World::new(vec![gates], Box::new(server));
    w.store.latency = 1.0;
    w.cache(CacheConfig {
        default_ttl_ms: 100.0,
        stale_for_ms: 600_000.0,
        ..CacheConfig::DEFAULT
    });
    let snapshot = "http://api/v1/events/e1/odds/snapshot";
    let poll = || SimCall::get(0, wrapper, "key-1", snapshot);
    let mut index = w.start_at(0.0, poll());
    for i in 1..200 {
        index = w.start_after_at(index, f64::from(i) * 50.0, poll());
    }
    w.run_until(10_000.0);
    let stale = w.log.cached.values().filter(|c| c.1 == Served::Stale);
    let stale = stale.count();
    let sent = w.log.sent.iter().filter(|s| !s.probe).count();
    // Every poll ends the instant it starts: fresh, stale, or its request's 5 ms.
    let took = (w.log.started.iter()).map(|(i, at)| {
        let ended = w.log.settled.get(&i).map(|s| s.0);
        let ended = ended.or_else(|| w.log.cached.get(&i).map(|c| c.0));
        ended.expect("every poll ended") - at
    });
    let took: Vec<Millis> = took.collect();
    let slowest = took.iter().copied().fold(0.0, f64::max);
    let slow = took.iter().filter(|&&ms| ms > 8.0).count();
    println!(
        "stale on credit (through a store: {through_store}): {sent} requests, {stale} stale \
         answers, slowest poll {slowest} ms, {slow} over 8 ms"
    );
    assert_eq!(w.log.started.len(), 200);
    // A request takes 5 ms; through a store, its admission up to 3 more (round trips). There,
    // the poll whose admission claims a reading (one every 1.1 s) waits for it and for the
    // credit it finds: 8 polls, 43-59 ms. Before the store said when credit comes, polls
    // waited up to 120 ms and none was answered stale.
    match through_store {
        false => assert!(slowest <= 5.0, "{slowest}"),
        true => assert!(slowest <= 65.0 && slow <= 9, "{slowest} {slow}"),
    }
    // Within the spread: what it held at the start (a second's refill) and 4.75 a second for
    // 10 s; 50 requests measured, 51 polls answered stale (of the 100 a ttl of 100 ms wants),
    // the others fresh; through a store, 49 and 52. Before the store said when credit comes,
    // 0 were stale there and polls waited up to 120 ms.
    assert!((45..=53).contains(&sent), "{sent}");
    assert!(stale >= 45, "{stale}");
    assert_eq!(w.log.cached.len() + sent, 200);
}

#[test]
fn once_the_quota_is_spent_a_kept_snapshot_answers_every_poll_stale() {
    // 50 credits for a day; 2 workers polling the same snapshot 1000 times each, fresh for a
    // minute and kept stale for a day: the credits last about 50 minutes.
    let quota = SimQuotaGiven {
        limit: Some(50.0),
        days: Some(1.0),
        ..SimQuotaGiven::default()
    };
    let run = |stale_for_ms| {
        let options = SimOptions {
            workers: 2,
            polls: 1_000,
            poll_every_ms: DAY_MS / 1_000.0,
            coordination: Coordination::Shared,
            cache: Some(SimCache {
                ttl_ms: 60_000.0,
                stale_for_ms,
            }),
            quota: Some(quota.clone().quota().unwrap()),
            ..SimOptions::default()
        };
        simulate(&options).unwrap()
    };
    let r = run(DAY_MS);
    let month = r.quota.as_ref().unwrap();
    let stale = r.timeline.iter().filter(|a| a.cache == Some(Served::Stale));
    let stale_from = stale.clone().map(|a| a.at).fold(f64::INFINITY, f64::min);
    println!(
        "quota and cache: {} requests, {} hits, {} coalesced, {} stale (from {} ms), {} refused, \
         ran out at {:?} ms",
        r.attempts,
        r.hits.unwrap(),
        r.coalesced.unwrap(),
        r.stale.unwrap(),
        stale_from,
        month.refused,
        month.exhausted_at_ms,
    );
    // 50 requests, one a minute, then one the server refuses: its callers and every later poll
    // are answered from the kept snapshot, and none is refused.
    assert_eq!(month.used, 50.0);
    assert_eq!((r.attempts, month.refused, r.completed), (51, 0, 2_000));
    assert_eq!(r.stale, Some(stale.count() as u64));
    assert!(stale_from >= month.exhausted_at_ms.unwrap());
    assert!(r.stale.unwrap() > 1_800, "{:?}", r.stale);
    // Not kept stale: the calls after the quota is spent are refused.
    let none = run(0.0);
    let refused = none.quota.unwrap().refused;
    assert_eq!(none.stale, Some(0));
    assert!(refused > 1_800, "{refused}");
}

/// One worker polling `polls` times, evenly over the run, through `simulate({ quota })`.
fn run(quota: SimQuotaGiven, polls: u32) -> MonthReport {
    let quota = quota.quota().unwrap();
    let options = SimOptions {
        workers: 1,
        polls,
        poll_every_ms: quota.run_ms() / f64::from(polls),
        coordination: Coordination::Shared,
        quota: Some(quota),
        ..SimOptions::default()
    };
    simulate(&options).unwrap().quota.unwrap()
}

#[test]
fn a_small_plan_starts_at_once_and_keeps_the_due_pace() {
    // 1,000 credits, 25 days left (#49): a fresh process's first call goes at once, then one
    // every 38 minutes (950 over 25 days), a poll every 12 minutes wanted.
    let month = run(
        SimQuotaGiven {
            limit: Some(1_000.0),
            days: Some(25.0),
            spread: Some(true),
            ..SimQuotaGiven::default()
        },
        3_000,
    );
    let (low, high) = shares(&month);
    println!(
        "small plan: {} of {} calls sent, the first at {:?} ms; {} credits, days {low:.3}..{high:.3} \
         of even, {} readings",
        month.sent, month.wanted, month.first_sent_ms, month.used, month.readings
    );
    // Before #49 the first call went after 22.9 minutes.
    assert_eq!(month.first_sent_ms, Some(0.0));
    // 950 measured: the spread's whole share, never out.
    assert!((945.0..=950.0).contains(&month.used), "{}", month.used);
    assert_eq!(
        (month.exhausted_at_ms, month.sent),
        (None, month.used as usize)
    );
    assert!(low >= 0.9 && high <= 1.1, "{low:.3}..{high:.3}");
}

#[test]
fn at_the_period_s_turn_calls_resume_within_a_second() {
    // Two 1-day periods of 100 credits, a poll every 29 s (30x demand): a poll is always
    // waiting for credit (a minute at most) at the end of the first, and the reading due at its
    // end finds the new one.
    let month = run(
        SimQuotaGiven {
            limit: Some(100.0),
            days: Some(1.0),
            periods: Some(2.0),
            spread: Some(true),
            ..SimQuotaGiven::default()
        },
        6_000,
    );
    println!(
        "rollover: {} of {} calls sent; the second period's first call waited {:?} ms in it; \
         {} credits in the last period, {} readings",
        month.sent, month.wanted, month.resumed_ms, month.used, month.readings
    );
    let resumed = month.resumed_ms[0].expect("the second period's calls went");
    // Measured: 0 ms (the poll waiting at the turn goes with the reading's answer); #49 asks
    // within a second. Before #49 no call went for 11 s after a new period began.
    assert!(resumed < 1_000.0, "{resumed}");
    assert!((93.0..=95.0).contains(&month.used), "{}", month.used);
    assert_eq!(month.exhausted_at_ms, None);
    let bad = SimQuotaGiven {
        limit: Some(100.0),
        periods: Some(1.5),
        ..SimQuotaGiven::default()
    };
    let error = bad.quota().unwrap_err().to_string();
    assert!(
        error.contains("quota.periods") && error.contains("1.5"),
        "{error}"
    );
}

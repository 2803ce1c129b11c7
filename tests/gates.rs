//! The rules between gates, on the virtual clock: routing calls to their limiter's gate,
//! scouting a new route, moving the calls behind a scout (the same calls, with their deadlines
//! and their place), forgetting idle gates, the rules between wrappers that share a credential,
//! and what a fleet's gates share through their store. Every test drives the production
//! [`Gates`] through the simulator's own driver, [`World`].
#![cfg(not(target_arch = "wasm32"))]

mod profiles;

use std::rc::Rc;

use odds_gate::core::gate::action::{End, Event};
use odds_gate::core::gate::store_link::StoreSettings;
use odds_gate::core::gates::action::{Action, Refused};
use odds_gate::core::gates::fleet::Shared;
use odds_gate::core::gates::ids::WrapperId;
use odds_gate::core::gates::profile::{Keeping, LaneAsks, Profile, Request};
use odds_gate::core::gates::scope::Scope;
use odds_gate::core::gates::{Gates, SWEEP_AT_LEAST, SWEEP_EVERY_MS};
use odds_gate::core::parse::feedback::Feedback;
use odds_gate::core::rules::allowance::{Allowance, Rate};
use odds_gate::core::rules::bucket::TokenBucket;
use odds_gate::core::rules::budget::RefillingConfig;
use odds_gate::core::rules::classify::Body;
use odds_gate::core::rules::credits::{Costs, Spread};
use odds_gate::core::rules::policy::{Reason, RetryPolicy};
use odds_gate::core::rules::quota::Usage;
use odds_gate::core::rules::routes::MAX_LIMITERS;
use odds_gate::core::sim::home::{SharedMemory, SimHome};
use odds_gate::core::sim::server::{Arrival, Reply, Server};
use odds_gate::core::sim::world::{SimCall, World};
use odds_gate::core::Millis;

const KEY: &str = "key-1";
const SNAPSHOT: &str = "http://api/v1/events/e1/odds/snapshot";

fn lookup(i: usize) -> String {
    format!("http://api/v1/events/e{i}")
}

fn profile(allowance: Allowance) -> Profile {
    profiles::profile(allowance, Keeping::Memory { threads: false })
}

fn learning() -> Profile {
    profile(Allowance::Learned(None))
}

/// One process with one wrapper of `profile`, answered by `server`.
fn world(profile: Profile, server: impl Server + 'static) -> (World, WrapperId) {
    let mut gates = Gates::new(Box::new(SimHome::alone(1)));
    let wrapper = gates.wrapper(profile);
    (World::new(vec![gates], Box::new(server)), wrapper)
}

/// A 200 from `bucket` (limit 10, nine left), after `latency` ms.
fn from(bucket: &str, latency: Millis) -> Reply {
    Reply::status(
        200,
        &[
            ("x-ratelimit-limit", "10"),
            ("x-ratelimit-remaining", "9"),
            ("x-ratelimit-bucket", bucket),
        ],
    )
    .after(latency)
}

/// Snapshots answered from `snapshot`, event lookups from `events`, after `latency` ms.
fn two_buckets(latency: Millis) -> impl Server {
    move |_: Millis, a: &Arrival| match a.url.contains("/odds/") {
        true => from("snapshot", latency),
        false => from("events", latency),
    }
}

fn credential() -> Scope {
    Scope::of(Some(KEY), None)
}

#[test]
fn a_route_heard_from_another_bucket_moves_the_calls_behind_its_scout_there() {
    let (mut w, wrapper) = world(learning(), two_buckets(50.0));
    w.start_at(0.0, SimCall::get(0, wrapper, KEY, SNAPSHOT));
    // The snapshot's answer named its bucket; then six lookups of a route nobody heard from.
    for i in 0..6 {
        w.start_at(100.0, SimCall::get(0, wrapper, KEY, &lookup(i)));
    }
    w.run();
    assert!((0..7).all(|i| w.log.settled[&i].1 == End::Deliver));
    let gates = &mut w.processes[0].gates;
    let events = gates
        .find(&credential().in_limiter("events"))
        .expect("the events bucket's gate");
    let snapshot = gates.find(&credential()).expect("the credential's gate");
    // The first lookup scouted through the credential's gate; the five behind it moved.
    let admitted = |gates: &mut Gates, g| gates.view(0.0, g).unwrap().figures.admitted;
    assert_eq!(admitted(gates, snapshot), 2, "the snapshot and the scout");
    assert_eq!(admitted(gates, events), 5, "the lookups behind the scout");
    let mut known = gates.gates_of(wrapper);
    known.sort_unstable();
    let mut both = [events, snapshot];
    both.sort_unstable();
    assert_eq!(known, both, "the wrapper knows both");
    // Later lookups of the route go straight to their bucket's gate.
    let later = w.start_at(w.now + 1_000.0, SimCall::get(0, wrapper, KEY, &lookup(9)));
    w.run();
    assert_eq!(w.log.settled[&later].1, End::Deliver);
    let gates = &mut w.processes[0].gates;
    assert_eq!(admitted(gates, events), 6);
}

/// A wrapper with a fixed rate tells no limiters apart, but when it spreads its quota each call's
/// route says what it costs: a snapshot stated at 5 credits takes 5, a lookup 1.
#[test]
fn a_fixed_rate_wrapper_that_spreads_knows_each_calls_route_for_its_cost() {
    let costs = Costs::new(vec![("GET /events/*/odds/snapshot".into(), 5.0)]).unwrap();
    let profile = Profile {
        spread: Some((Spread::DEFAULT, costs)),
        ..profile(Allowance::Fixed(Rate::ARTICLE))
    };
    let (mut w, wrapper) = world(profile, |_: Millis, _: &Arrival| Reply::ok());
    w.usage = Some(Usage {
        used: 100.0,
        limit: 1_000_000.0,
        period_end: Some(30.0 * 86_400_000.0),
    });
    w.start_at(0.0, SimCall::get(0, wrapper, KEY, SNAPSHOT));
    w.start_at(0.0, SimCall::get(0, wrapper, KEY, &lookup(1)));
    w.run();
    assert!((0..2).all(|i| w.log.settled[&i].1 == End::Deliver));
    let now = w.now;
    let gates = &mut w.processes[0].gates;
    let gate = gates.find(&credential()).expect("the credential's gate");
    let credits = gates.view(now, gate).unwrap().figures.credits.unwrap();
    assert_eq!(
        credits.used, 106.0,
        "the reading's 100, 5 for the snapshot, 1 for the lookup"
    );
    assert_eq!(credits.unpaced, 0);
}

#[test]
fn a_moved_call_keeps_its_max_wait_from_when_it_was_made() {
    let mut lookups = 0;
    let server = move |_: Millis, a: &Arrival| {
        if a.url.contains("/odds/") {
            return from("snapshot", 10.0);
        }
        lookups += 1;
        match lookups {
            // The scout's answer names the route's bucket after 900 ms.
            1 => from("events", 900.0),
            // The first call moved there is throttled for a second.
            2 => Reply::status(
                429,
                &[("retry-after", "1"), ("x-ratelimit-bucket", "events")],
            )
            .after(100.0),
            _ => from("events", 10.0),
        }
    };
    let profile = Profile {
        max_wait_ms: Some(1_500.0),
        ..learning()
    };
    let (mut w, wrapper) = world(profile, server);
    w.start_at(0.0, SimCall::get(0, wrapper, KEY, SNAPSHOT));
    for i in 0..5 {
        w.start_at(20.0, SimCall::get(0, wrapper, KEY, &lookup(i)));
    }
    w.run();
    // Moved at 920 ms; the 429 at 1020 holds the events gate until 2020, past 20 + 1500: the
    // three still waiting are let go then, counted from when they were made (counted from the
    // move they would have waited until 2020 and gone).
    for i in 3..6 {
        match w.log.settled[&i] {
            (at, End::Abandoned { abandoned, .. }) => {
                assert_eq!(
                    (abandoned.reason, abandoned.attempts),
                    (Reason::QueueWait, 0)
                );
                assert_eq!(at, 1_020.0, "let go when the cooldown made them hopeless");
            }
            other => panic!("call {i}: {other:?}"),
        }
    }
    assert_eq!(
        w.log.settled[&2].1,
        End::Deliver,
        "the throttled call retried"
    );
}

#[test]
fn max_waiting_holds_for_a_route_nobody_has_heard_from() {
    let profile = Profile {
        max_waiting: Some(3),
        ..learning()
    };
    let (mut w, wrapper) = world(profile, two_buckets(100.0));
    for _ in 0..20 {
        w.start_at(0.0, SimCall::get(0, wrapper, KEY, SNAPSHOT));
    }
    w.run();
    // The scout went at once; three waited behind it; the other sixteen were refused at once.
    let refused: Vec<usize> = (0..20)
        .filter(|i| {
            matches!(w.log.settled[i], (0.0, End::Abandoned { abandoned, .. })
                if abandoned.reason == Reason::QueueFull && abandoned.attempts == 0)
        })
        .collect();
    assert_eq!(refused, (4..20).collect::<Vec<_>>());
    assert!((0..4).all(|i| w.log.settled[&i].1 == End::Deliver));
    let gates = &mut w.processes[0].gates;
    let gate = gates.find(&credential()).unwrap();
    assert_eq!(gates.view(w.now, gate).unwrap().figures.peak_waiting, 3);
}

#[test]
fn a_scout_whose_caller_gives_up_frees_its_route() {
    // The first lookup scouts its route; its caller aborts while the attempt is out. The
    // route's next call must not wait behind a scout that is gone (it waited for ever: the
    // scout's end was dropped with the call).
    let (mut w, wrapper) = world(learning(), two_buckets(100.0));
    w.start_at(0.0, SimCall::get(0, wrapper, KEY, SNAPSHOT));
    let scout = w.start_at(200.0, SimCall::get(0, wrapper, KEY, &lookup(1)));
    w.abort_at(250.0, scout);
    let next = w.start_at(400.0, SimCall::get(0, wrapper, KEY, &lookup(2)));
    w.run();
    assert!(w.log.aborted.contains_key(&scout));
    assert_eq!(w.log.settled[&next].1, End::Deliver);
    assert!(w.is_quiet());
}

#[test]
fn a_learning_gate_under_a_ceiling_takes_back_no_token_the_ceiling_has_not_refilled() {
    // Until the first answer a learning gate sends one request at a time, and an attempt that
    // took no token (a 503, a failure) gives the opening's token back. Under a configured
    // ceiling of burst 1 at 1/s, that token still comes from the ceiling's bucket.
    let ceiling = Rate::new(1.0, 1.0).unwrap();
    let (mut w, wrapper) = world(
        profile(Allowance::Learned(Some(ceiling))),
        |_: Millis, _: &Arrival| Reply::status(503, &[]).after(5.0),
    );
    for _ in 0..3 {
        w.start_at(0.0, SimCall::get(0, wrapper, KEY, SNAPSHOT));
    }
    w.run_until(2_500.0);
    // Two in 2.5 s (measured: the failure's hold, a random draw, sends the second at 1.14 s),
    // never closer than the ceiling's second.
    let sent: Vec<Millis> = w.log.sent.iter().map(|s| s.at).collect();
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert!(sent[1] - sent[0] >= 1_000.0 - 1.0, "{sent:?}");
}

#[test]
fn max_wait_admits_a_call_within_it_or_refuses_it_at_once_even_when_timers_fire_late() {
    // Burst 2 at 2/s, `maxWaitMs` 1000: tokens at 0, 0, 500 and 1000 ms fit; the rest are
    // refused at once. A busy event loop's timers fire late: the call whose token comes at
    // the very end of its wait still goes (it was refused after waiting the whole second).
    // In this thread's memory, and in the memory the process's threads share.
    for (late, threads) in [(0.0, false), (1.0, false), (30.0, false), (30.0, true)] {
        let profile = Profile {
            max_wait_ms: Some(1_000.0),
            keeping: Keeping::Memory { threads },
            ..profile(Allowance::Fixed(Rate::ARTICLE))
        };
        let home = match threads {
            true => SimHome::sharing(1, 1, SharedMemory::default()),
            false => SimHome::alone(1),
        };
        let mut gates = Gates::new(Box::new(home));
        let wrapper = gates.wrapper(profile);
        let server = |_: Millis, _: &Arrival| Reply::ok();
        let mut w = World::new(vec![gates], Box::new(server));
        w.timer_late_ms = late;
        for _ in 0..10 {
            w.start_at(0.0, SimCall::get(0, wrapper, KEY, SNAPSHOT));
        }
        w.run();
        let sent: Vec<Millis> = w.log.sent.iter().map(|s| s.at).collect();
        assert_eq!(
            sent,
            [0.0, 0.0, 500.0 + late, 1_000.0 + late],
            "late {late}"
        );
        for i in 0..4 {
            assert_eq!(w.log.settled[&i].1, End::Deliver, "late {late}");
        }
        for i in 4..10 {
            assert!(
                matches!(w.log.settled[&i], (0.0, End::Abandoned { abandoned, .. })
                    if abandoned.reason == Reason::QueueWait && abandoned.attempts == 0),
                "late {late}: call {i} {:?}",
                w.log.settled[&i]
            );
        }
    }
}

#[test]
fn calls_keep_call_order_where_the_api_names_no_bucket() {
    // Counts on every answer, no bucket's name: every route draws from one allowance.
    let server = |_: Millis, _: &Arrival| {
        Reply::status(
            200,
            &[("x-ratelimit-limit", "2"), ("x-ratelimit-remaining", "0")],
        )
        .after(20.0)
    };
    let (mut w, wrapper) = world(learning(), server);
    for _ in 0..20 {
        w.start_at(0.0, SimCall::get(0, wrapper, KEY, SNAPSHOT));
    }
    // Ten late calls, each of a route of its own, while the backlog waits.
    for i in 0..10 {
        w.start_at(
            500.0,
            SimCall::get(0, wrapper, KEY, &format!("http://api/v1/r{i}/x")),
        );
    }
    w.run();
    let order: Vec<usize> = w.log.sent.iter().map(|s| s.index).collect();
    assert_eq!(
        order,
        (0..30).collect::<Vec<_>>(),
        "no late call overtook the backlog"
    );
}

#[test]
fn every_gate_a_move_makes_is_the_wrappers() {
    // Each route's answers come from a bucket of its own.
    let server = |_: Millis, a: &Arrival| {
        let bucket = a.url.rsplit('/').nth(1).unwrap_or("x").to_owned();
        from(&bucket, 10.0)
    };
    let (mut w, wrapper) = world(learning(), server);
    w.start_at(0.0, SimCall::get(0, wrapper, KEY, SNAPSHOT));
    for name in ["alpha", "beta", "gamma", "delta", "epsilon"] {
        for _ in 0..3 {
            w.start_at(
                100.0,
                SimCall::get(0, wrapper, KEY, &format!("http://api/v1/{name}/x")),
            );
        }
    }
    w.run();
    assert!((0..16).all(|i| w.log.settled[&i].1 == End::Deliver));
    let gates = &w.processes[0].gates;
    assert_eq!(gates.len(), 6, "the credential's gate and one per bucket");
    assert_eq!(
        gates.gates_of(wrapper).len(),
        gates.len(),
        "stats() lists every one"
    );
}

#[test]
fn a_limiter_name_per_resource_makes_no_more_limiter_gates_than_the_cap() {
    // Each event's lookups answered by a limiter of its own name (`event-<id>`), 200 events one
    // after another: past the cap, their calls go to one more gate, shared. Bursts of 1,000
    // let them all go within half a second, before any of those gates has its token back (an
    // idle one would be forgotten).
    let (w, wrapper) = lookups_in_turn(true, 1000);
    // One after another, each answered in 1 ms.
    assert_eq!(w.log.settled[&200].0, 201.0, "when the last settled");
    let gates = &w.processes[0].gates;
    assert_eq!(
        gates.len(),
        1 + MAX_LIMITERS + 1,
        "the credential's gate, the cap's and the one past it"
    );
    assert_eq!(
        gates.gates_of(wrapper).len(),
        gates.len(),
        "stats() lists every one"
    );
}

#[test]
fn idle_gates_are_forgotten_and_their_figures_stay_in_the_totals() {
    let (mut w, wrapper) = world(
        profile(Allowance::Fixed(Rate::ARTICLE)),
        |_: Millis, _: &Arrival| Reply::ok().after(10.0),
    );
    for k in 0..50 {
        w.start_at(0.0, SimCall::get(0, wrapper, &format!("key-{k}"), SNAPSHOT));
    }
    w.run();
    assert_eq!(w.processes[0].gates.len(), 50);
    // Later every bucket is full again: new keys' gates sweep the old ones away.
    let later = w.now + 2_000.0;
    for k in 50..100 {
        w.start_at(
            later,
            SimCall::get(0, wrapper, &format!("key-{k}"), SNAPSHOT),
        );
    }
    w.run();
    assert!((0..100).all(|i| w.log.settled[&i].1 == End::Deliver));
    let gates = &mut w.processes[0].gates;
    assert_eq!(gates.len(), 50, "only the new keys' gates alive");
    let live: u64 = gates
        .gates_of(wrapper)
        .into_iter()
        .map(|g| gates.view(w.now, g).unwrap().figures.admitted)
        .sum();
    assert_eq!(live + gates.retired(wrapper).admitted, 100);
    // A forgotten key is made anew as it was.
    let again = w.start_at(w.now, SimCall::get(0, wrapper, "key-0", SNAPSHOT));
    w.run();
    assert_eq!(w.log.settled[&again].1, End::Deliver);
}

#[test]
fn idle_learning_gates_are_forgotten_and_a_returning_key_goes_on_from_its_estimates() {
    let (mut w, wrapper) = world(learning(), two_buckets(5.0));
    let events = credential().in_limiter("events");
    // The key learns both limiters: burst 10 each, its lookups' route drawing from `events`.
    w.start_at(0.0, SimCall::get(0, wrapper, KEY, SNAPSHOT));
    w.start_at(100.0, SimCall::get(0, wrapper, KEY, &lookup(0)));
    w.run();
    let gates = &mut w.processes[0].gates;
    let before = |gates: &mut Gates, scope: &Scope| {
        let gate = gates.find(scope).expect("made");
        gates.view(w.now, gate).unwrap().learned.unwrap()
    };
    let (key_learned, events_learned) = (before(gates, &credential()), before(gates, &events));
    assert_eq!(key_learned.burst, Some(10.0));
    assert_eq!(events_learned.burst, Some(10.0));
    // Once their buckets are full again, other keys' gates sweep both away.
    let at = w.now + 20_000.0;
    for k in 0..60 {
        w.start_at(
            at,
            SimCall::get(0, wrapper, &format!("other-{k}"), SNAPSHOT),
        );
    }
    w.run();
    let gates = &w.processes[0].gates;
    assert!(gates.find(&credential()).is_none() && gates.find(&events).is_none());
    assert_eq!(gates.len(), 60, "only the other keys' gates alive");
    // The key returns with a lookup: its routes went with its gates, so the lookup scouts on the
    // credential's gate, which starts from its estimate (not from the opening's one token).
    let at = w.now + 20_000.0;
    let back = w.start_at(at, SimCall::get(0, wrapper, KEY, &lookup(1)));
    w.run_until(at + 1.0);
    let gates = &mut w.processes[0].gates;
    let key = gates.find(&credential()).expect("made anew");
    let view = gates.view(w.now, key).unwrap();
    assert_eq!(view.figures.admitted, 1, "the lookup scouts");
    assert_eq!(view.rate.burst(), 10.0);
    assert_eq!(view.rate.per_second(), key_learned.per_second);
    // Its answer names `events`: that gate too goes on from what it had learned.
    w.run();
    assert_eq!(w.log.settled[&back].1, End::Deliver);
    let gates = &mut w.processes[0].gates;
    let gate = gates.find(&events).expect("made anew for the route");
    let view = gates.view(w.now, gate).unwrap();
    assert_eq!(view.rate.burst(), 10.0);
    assert_eq!(view.learned.unwrap().burst, Some(10.0));
}

#[test]
fn with_no_new_gates_a_timed_sweep_forgets_idle_gates_a_sixth_at_least_at_a_time() {
    let (mut w, wrapper) = world(learning(), two_buckets(5.0));
    for k in 0..3_000 {
        w.start_at(0.0, SimCall::get(0, wrapper, &format!("key-{k}"), SNAPSHOT));
    }
    // Only the sweep timer is left once every call is done: it holds nothing open.
    w.run();
    assert!(w.is_quiet());
    assert!((0..3_000).all(|i| w.log.settled[&i].1 == End::Deliver));
    // (The clock may have gone on to a wake-up the gates no longer wanted: a scout's.)
    let done = w
        .log
        .settled
        .values()
        .map(|(at, _)| *at)
        .fold(0.0, f64::max);
    assert_eq!(w.processes[0].gates.len(), 3_000);
    // The process stays up (a server, say) with no more calls: every 10 s a sweep looks at a
    // sixth of the gates, at least SWEEP_AT_LEAST, and forgets the idle ones.
    let first = 10_000.0;
    w.run_until(first + 1.0);
    assert_eq!(w.processes[0].gates.len(), 3_000 - SWEEP_AT_LEAST);
    w.run_until(first + SWEEP_EVERY_MS + 1.0);
    assert_eq!(w.processes[0].gates.len(), 3_000 - 2 * SWEEP_AT_LEAST);
    w.run_until(first + 2.0 * SWEEP_EVERY_MS + 1.0);
    let gates = &mut w.processes[0].gates;
    assert_eq!(gates.len(), 0);
    assert_eq!(gates.retired(wrapper).admitted, 3_000);
    // With no gate left there is no sweep timer either.
    assert_eq!(gates.sweep_timeout(w.now), None);
    assert_eq!(done, 5.0, "every call answered at once, in 5 ms");
    // A returning key goes on from its estimate (burst 10), not from one token.
    let at = w.now + 1.0;
    let back = w.start_at(at, SimCall::get(0, wrapper, "key-7", SNAPSHOT));
    w.run_until(at + 1.0);
    let gates = &mut w.processes[0].gates;
    let gate = gates
        .find(&Scope::of(Some("key-7"), None))
        .expect("made anew");
    assert_eq!(gates.view(w.now, gate).unwrap().rate.burst(), 10.0);
    w.run();
    assert_eq!(w.log.settled[&back].1, End::Deliver);
}

#[test]
fn a_timed_sweep_reaches_every_idle_gate_within_a_minute_however_many_there_are() {
    // 12,000 idle gates: each of a minute's six sweeps looks at a sixth of those there when the
    // minute began (2,000), not a sixth of those left, which would leave 12,000 x (5/6)^6 (4,019)
    // after the minute.
    let (mut w, wrapper) = world(learning(), two_buckets(5.0));
    for k in 0..12_000 {
        w.start_at(0.0, SimCall::get(0, wrapper, &format!("key-{k}"), SNAPSHOT));
    }
    w.run();
    assert_eq!(w.processes[0].gates.len(), 12_000);
    for sweep in 1..=6 {
        w.run_until(f64::from(sweep) * SWEEP_EVERY_MS + 1.0);
        let left = 12_000 - 2_000 * sweep as usize;
        assert_eq!(w.processes[0].gates.len(), left, "after sweep {sweep}");
    }
}

#[test]
fn a_timed_sweep_keeps_a_gate_until_it_is_idle() {
    // A 429 with Retry-After: 25 keeps the key's call waiting (and its gate cooling down) past
    // two sweeps.
    let (mut w, wrapper) = world(
        profile(Allowance::Fixed(Rate::ARTICLE)),
        |_: Millis, a: &Arrival| match a.number {
            1 => Reply::status(429, &[("retry-after", "25")]).after(5.0),
            _ => Reply::ok().after(5.0),
        },
    );
    let call = w.start_at(0.0, SimCall::get(0, wrapper, KEY, SNAPSHOT));
    w.run_until(21_000.0);
    assert!(
        w.processes[0].gates.find(&credential()).is_some(),
        "cooling down at 21 s"
    );
    w.run_until(61_000.0);
    assert_eq!(w.log.settled[&call].1, End::Deliver);
    assert!(
        w.processes[0].gates.find(&credential()).is_none(),
        "idle since 25 s, swept by 60 s"
    );
}

#[test]
fn a_gate_whose_retries_spent_its_budget_is_forgotten_and_its_key_finds_the_budget_as_it_was() {
    // Every answer a 503: the call's retries spend the budget, and no success refunds it.
    let (mut w, wrapper) = world(
        Profile {
            budget: Some(RefillingConfig::DEFAULT),
            ..profile(Allowance::Fixed(Rate::ARTICLE))
        },
        |_: Millis, _: &Arrival| Reply::status(503, &[]).after(5.0),
    );
    let first = w.start_at(0.0, SimCall::get(0, wrapper, KEY, SNAPSHOT));
    w.run();
    assert!(matches!(w.log.settled[&first].1, End::Abandoned { .. }));
    let gates = &mut w.processes[0].gates;
    let gate = gates.find(&credential()).expect("made");
    let left = gates
        .view(w.now, gate)
        .unwrap()
        .figures
        .retry_budget
        .unwrap();
    // The call's two retries each cost a transient failure's price.
    let config = RefillingConfig::DEFAULT;
    assert_eq!(left, config.capacity - 2.0 * config.transient_cost);
    // Idle, with no success to come: the sweep forgets it all the same.
    w.run_until(w.now + 70_000.0);
    assert!(w.processes[0].gates.find(&credential()).is_none());
    // The key returns: its budget is what was left, not full again.
    let at = w.now;
    w.start_at(at, SimCall::get(0, wrapper, KEY, SNAPSHOT));
    w.run_until(at + 1.0);
    let gates = &mut w.processes[0].gates;
    let gate = gates.find(&credential()).expect("made anew");
    assert_eq!(
        gates.view(w.now, gate).unwrap().figures.retry_budget,
        Some(left)
    );
}

#[test]
fn idle_gates_in_a_store_are_forgotten_after_successes_too() {
    // With retries and their budget on, a first-time success owes the store a refund that only
    // a later retry's charge would carry: the gate must go anyway.
    let mut gates = Gates::new(Box::new(SimHome::alone(1)));
    let store = gates.store("fake", StoreSettings::DEFAULT);
    let wrapper = gates.wrapper(Profile {
        keeping: Keeping::Store(store),
        budget: Some(RefillingConfig::DEFAULT),
        ..profile(Allowance::Fixed(Rate::ARTICLE))
    });
    let server = |_: Millis, _: &Arrival| Reply::ok().after(10.0);
    let mut w = World::new(vec![gates], Box::new(server));
    w.store.latency = 1.0;
    for k in 0..50 {
        w.start_at(0.0, SimCall::get(0, wrapper, &format!("key-{k}"), SNAPSHOT));
    }
    w.run();
    let later = w.now + 2_000.0;
    for k in 50..100 {
        w.start_at(
            later,
            SimCall::get(0, wrapper, &format!("key-{k}"), SNAPSHOT),
        );
    }
    w.run();
    assert!((0..100).all(|i| w.log.settled[&i].1 == End::Deliver));
    let gates = &w.processes[0].gates;
    assert_eq!(gates.len(), 50, "only the new keys' gates alive");
}

#[test]
fn a_learning_gate_made_anew_in_a_store_keeps_the_fleets_pace_there() {
    // Process 0 learns the key (burst 10 at 1/s) through the store. Process 1's gate, made
    // later, waits for the fleet's estimate before its first admission: asked at the opening's
    // pace, that admission would set the store's pace to one per 30 s for every process.
    let mut processes = Vec::new();
    let mut wrappers = Vec::new();
    for p in 0..2 {
        let mut gates = Gates::new(Box::new(SimHome::alone(10 * p + 1)));
        let store = gates.store("fake", StoreSettings::DEFAULT);
        wrappers.push(gates.wrapper(Profile {
            keeping: Keeping::Store(store),
            ..learning()
        }));
        processes.push(gates);
    }
    let mut w = World::new(processes, Box::new(two_buckets(20.0)));
    w.store.latency = 1.0;
    w.start_at(0.0, SimCall::get(0, wrappers[0], KEY, SNAPSHOT));
    w.run();
    let learned = w.store.gates[&credential()].memory.rate();
    assert_eq!(learned.burst(), 10.0);
    let at = w.now + 1_000.0;
    let later = w.start_at(at, SimCall::get(1, wrappers[1], KEY, SNAPSHOT));
    w.run_until(at + 5.0);
    let stored = w.store.gates[&credential()].memory.rate();
    assert_eq!(stored, learned, "the store's pace");
    w.run();
    assert_eq!(w.log.settled[&later].1, End::Deliver);
}

#[test]
fn a_first_request_whose_caller_gives_up_gives_the_opening_token_back() {
    // The server answers after 300 ms; the first call's caller gives up at 50 ms. The next
    // call goes at once, not when the opening's slow token (one per 30 s) comes back.
    let (mut w, wrapper) = world(learning(), |_: Millis, _: &Arrival| from("snapshot", 300.0));
    let first = w.start_at(0.0, SimCall::get(0, wrapper, KEY, SNAPSHOT));
    w.abort_at(50.0, first);
    let next = w.start_at(100.0, SimCall::get(0, wrapper, KEY, SNAPSHOT));
    w.run();
    assert_eq!(w.log.settled[&next].1, End::Deliver);
    let sent: Vec<Millis> = w.log.sent.iter().map(|s| s.at).collect();
    assert_eq!(sent, vec![0.0, 100.0]);
}

#[test]
fn wrappers_that_disagree_about_a_credential_are_refused_naming_both_sides() {
    let mut gates = Gates::new(Box::new(SimHome::alone(1)));
    let fixed = gates.wrapper(profile(Allowance::Fixed(Rate::ARTICLE)));
    let other = gates.wrapper(profile(Allowance::Fixed(Rate::new(5.0, 5.0).unwrap())));
    let learner = gates.wrapper(learning());
    let retrying = gates.wrapper(Profile {
        budget: Some(RefillingConfig::DEFAULT),
        ..profile(Allowance::Fixed(Rate::ARTICLE))
    });
    let spreading = gates.wrapper(Profile {
        spread: Some((Spread::DEFAULT, Costs::default())),
        ..profile(Allowance::Fixed(Rate::ARTICLE))
    });
    let mut w = World::new(vec![gates], Box::new(|_: Millis, _: &Arrival| Reply::ok()));
    for wrapper in [fixed, other, learner, retrying, spreading] {
        w.start_at(0.0, SimCall::get(0, wrapper, KEY, SNAPSHOT));
    }
    w.run();
    let message = |i: usize| match &w.log.refused[&i] {
        Refused::Mismatch(m) => m.message(&|n| n.to_string()),
        other => panic!("{other:?}"),
    };
    assert!(message(1).contains("already enforces { burst: 2, perSecond: 2 }"));
    assert!(message(1).contains("asks for { burst: 5, perSecond: 5 }"));
    assert!(message(2).contains("asks for an allowance learned from the responses"));
    assert!(!message(2).contains(KEY), "no raw key in a message");
    assert!(message(4).contains("does not spread its quota; this wrapper asks for quota.spread"));
    // A retrying wrapper gives the budget-less gate its budget, and shares it.
    assert_eq!(w.log.settled[&3].1, End::Deliver);
    let gate = w.processes[0].gates.find(&credential()).unwrap();
    assert_eq!(
        w.processes[0].gates.budget(gate),
        Some(RefillingConfig::DEFAULT)
    );
}

#[test]
fn threads_that_disagree_about_a_credential_are_refused_too() {
    let shared_memory = SharedMemory::default();
    let mut threads = Vec::new();
    let mut wrappers = Vec::new();
    for (thread, rate) in [(1, Rate::ARTICLE), (2, Rate::new(5.0, 5.0).unwrap())] {
        let mut gates = Gates::new(Box::new(SimHome::sharing(
            thread.into(),
            thread,
            shared_memory.clone(),
        )));
        wrappers.push(gates.wrapper(Profile {
            keeping: Keeping::Memory { threads: true },
            ..profile(Allowance::Fixed(rate))
        }));
        threads.push(gates);
    }
    let mut w = World::new(threads, Box::new(|_: Millis, _: &Arrival| Reply::ok()));
    w.start_at(0.0, SimCall::get(0, wrappers[0], KEY, SNAPSHOT));
    w.start_at(1.0, SimCall::get(1, wrappers[1], KEY, SNAPSHOT));
    w.run();
    assert_eq!(w.log.settled[&0].1, End::Deliver);
    let Refused::Mismatch(m) = &w.log.refused[&1] else {
        panic!("{:?}", w.log.refused)
    };
    assert!(m
        .message(&|n| n.to_string())
        .contains("already enforces { burst: 2, perSecond: 2 } in another thread"));
}

#[test]
fn a_fleet_starts_from_what_its_gates_learned() {
    let mut processes = Vec::new();
    let mut wrappers = Vec::new();
    for p in 0..2 {
        let mut gates = Gates::new(Box::new(SimHome::alone(10 * p + 1)));
        let store = gates.store("fake", StoreSettings::DEFAULT);
        wrappers.push(gates.wrapper(Profile {
            keeping: Keeping::Store(store),
            ..learning()
        }));
        processes.push(gates);
    }
    let mut w = World::new(processes, Box::new(two_buckets(20.0)));
    w.store.latency = 1.0;
    // The first process learns both buckets.
    w.start_at(0.0, SimCall::get(0, wrappers[0], KEY, SNAPSHOT));
    for i in 0..3 {
        w.start_at(100.0, SimCall::get(0, wrappers[0], KEY, &lookup(i)));
    }
    w.run();
    let learned = &w.store.learned[&credential()];
    assert!(learned.contains(&Shared::First("snapshot".into())));
    assert!(learned.contains(&Shared::Route("GET /*/events/*".into(), "events".into())));
    assert!(learned
        .iter()
        .any(|f| matches!(f, Shared::Estimate(scope, _) if scope == credential().as_str())));
    // The second starts later: its lookups go straight to their bucket's gate, no scout.
    let start = w.now + 1_000.0;
    w.start_at(start, SimCall::get(1, wrappers[1], KEY, SNAPSHOT));
    let later = w.start_at(start + 10.0, SimCall::get(1, wrappers[1], KEY, &lookup(7)));
    w.run();
    assert_eq!(w.log.settled[&later].1, End::Deliver);
    let gates = &mut w.processes[1].gates;
    let events = gates
        .find(&credential().in_limiter("events"))
        .expect("made for the route");
    assert_eq!(gates.view(w.now, events).unwrap().figures.admitted, 1);
}

mod random_traffic {
    use super::*;
    use odds_gate::core::gate::early::EARLY_MS;
    use odds_gate::core::rules::backoff::Backoff;
    use odds_gate::core::rules::learn::MIN_PACE;
    use proptest::prelude::*;

    /// One call: when, with which key, and when its caller aborts.
    #[derive(Debug, Clone)]
    struct Plan {
        at: Millis,
        key: usize,
        route: usize,
        abort: Option<Millis>,
    }

    fn plans() -> impl Strategy<Value = Vec<Plan>> {
        prop::collection::vec(
            (
                0.0..3_000.0f64,
                0usize..RATES.len(),
                0usize..3,
                prop::option::weighted(0.15, 0.0..2_000.0f64),
            )
                .prop_map(|(at, key, route, abort)| Plan {
                    at: at.floor(),
                    key,
                    route,
                    abort,
                }),
            1..60,
        )
    }

    fn replies() -> impl Strategy<Value = Vec<(u8, Millis, u8)>> {
        prop::collection::vec((0u8..8, 0.0..200.0f64, 0u8..11), 1..30)
    }

    /// The server's answer of `kind` to a request on `route`: routes 0 and 1 draw from
    /// limiters the answers name ("a" and "b"), route 2 from one they never name; 200s carry
    /// counts (`remaining` of a limit of 10).
    fn reply(kind: u8, latency: Millis, route: usize, remaining: u8) -> Reply {
        let limiter = ["a", "b"].get(route).copied();
        let remaining = remaining.to_string();
        let mut headers = vec![
            ("x-ratelimit-limit", "10"),
            ("x-ratelimit-remaining", remaining.as_str()),
        ];
        headers.extend(limiter.map(|name| ("x-ratelimit-bucket", name)));
        match kind {
            0 => {
                headers[1].1 = "0";
                headers.push(("retry-after", "1"));
                Reply::status(429, &headers).after(latency)
            }
            1 => Reply::status(503, &[]).after(latency),
            2 => Reply::Fail { latency },
            _ => Reply::status(200, &headers).after(latency),
        }
    }

    /// The allowance of each key's wrapper: fixed for keys 0-2; key 3's wrapper learns below
    /// this ceiling, one gate per limiter its answers name.
    const RATES: [(f64, f64); 4] = [(1.0, 2.0), (2.0, 5.0), (4.0, 1.0), (2.0, 5.0)];
    const LEARNING: usize = 3;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]

        #[test]
        fn every_call_ends_once_and_no_gate_admits_beyond_its_allowance_across_scopes_and_limiters(
            plans in plans(),
            replies in replies(),
            fleet in any::<bool>(),
        ) {
            // Each key has a wrapper of its own allowance (the last one learns, under a
            // ceiling); with `fleet`, two processes share a store.
            let processes = if fleet { 2 } else { 1 };
            let mut all = Vec::new();
            let mut wrappers = Vec::new();
            for p in 0..processes {
                let mut gates = Gates::new(Box::new(SimHome::alone(p as u64 + 1)));
                let store = gates.store("fake", StoreSettings::DEFAULT);
                let mut mine = Vec::new();
                for (key, &(burst, per_second)) in RATES.iter().enumerate() {
                    let rate = Rate::new(burst, per_second).unwrap();
                    let allowance = match key {
                        LEARNING => Allowance::Learned(Some(rate)),
                        _ => Allowance::Fixed(rate),
                    };
                    mine.push(gates.wrapper(Profile {
                        keeping: if fleet { Keeping::Store(store) } else { Keeping::Memory { threads: false } },
                        policy: Some(Rc::new(RetryPolicy {
                            backoff: Backoff::new(10.0, 100.0).unwrap(),
                            ..RetryPolicy::default()
                        })),
                        ..profile(allowance)
                    }));
                }
                wrappers.push(mine);
                all.push(gates);
            }
            let mut next = 0;
            let server = move |_: Millis, a: &Arrival| {
                let (kind, latency, remaining) = replies[next % replies.len()];
                next += 1;
                let route = ["/r0/", "/r1/"].iter().position(|r| a.url.contains(r)).unwrap_or(2);
                reply(kind, latency, route, remaining)
            };
            let mut w = World::new(all, Box::new(server));
            w.store.latency = 2.0;
            for (i, plan) in plans.iter().enumerate() {
                let p = i % processes;
                let url = format!("http://api/v1/r{}/x", plan.route);
                let index = w.start_at(plan.at, SimCall::get(p, wrappers[p][plan.key], &format!("key-{}", plan.key), &url));
                if let Some(after) = plan.abort {
                    w.abort_at(plan.at + after, index);
                }
            }
            w.run();
            prop_assert!(w.is_quiet());
            for i in 0..plans.len() {
                let ended = u8::from(w.log.settled.contains_key(&i)) + u8::from(w.log.aborted.contains_key(&i));
                prop_assert_eq!(ended, 1, "call {} ended {} times", i, ended);
            }
            // Every gate a process has is a wrapper's (a move's gates included).
            for (process, mine) in w.processes.iter().zip(&wrappers) {
                let mut known: Vec<_> = mine.iter().flat_map(|&wr| process.gates.gates_of(wr)).collect();
                known.sort_unstable();
                known.dedup();
                prop_assert_eq!(known.len(), process.gates.len(), "gates no wrapper knows");
            }
            // Admissions across the processes stay within the allowance: per key for the fixed
            // ones, per gate's scope (a limiter's, or the credential's) under the learning
            // wrapper's ceiling.
            let mut groups: Vec<(Vec<Millis>, f64, f64)> = Vec::new();
            for (key, &(burst, per_second)) in RATES.iter().enumerate().filter(|&(k, _)| k != LEARNING) {
                let times = w.log.sent.iter()
                    .filter(|s| s.index != usize::MAX && plans[s.index].key == key)
                    .map(|s| s.at)
                    .collect();
                groups.push((times, burst, per_second));
            }
            let learned: Vec<_> = w.log.sent.iter()
                .filter(|s| s.index != usize::MAX && plans[s.index].key == LEARNING)
                .collect();
            let mut scopes: Vec<_> = learned.iter().map(|s| s.scope.clone().expect("a gate admitted it")).collect();
            scopes.sort_unstable();
            scopes.dedup();
            for scope in scopes {
                let times = learned.iter().filter(|s| s.scope.as_ref() == Some(&scope)).map(|s| s.at).collect();
                let (burst, per_second) = RATES[LEARNING];
                groups.push((times, burst, per_second));
            }
            for (mut times, burst, per_second) in groups {
                times.sort_by(f64::total_cmp);
                for i in 0..times.len() {
                    for j in i..times.len() {
                        let window = times[j] - times[i] + EARLY_MS;
                        let allowed = burst + window * per_second / 1000.0 + 1e-6;
                        prop_assert!((j - i + 1) as f64 <= allowed,
                            "{} admissions in {} ms at {} @ {}/s", j - i + 1, window, burst, per_second);
                    }
                }
            }
            // The processes stay up with no more calls: once every bucket is full again and a
            // sweep's minute has passed, every gate is forgotten, whatever its traffic was. The
            // slowest bucket is a learning gate's driven down to its floor by 429s: the
            // ceiling's burst of 2 at MIN_PACE, halved while slow, is 240 s; a cooldown is 1 s.
            let quiet = w.now;
            let refill = RATES[LEARNING].0 / (MIN_PACE / 2.0) * 1_000.0;
            w.run_until(quiet + refill + 1_000.0 + 6.0 * SWEEP_EVERY_MS + 1.0);
            let now = w.now;
            for (process, mine) in w.processes.iter_mut().zip(&wrappers) {
                let gates: Vec<_> = mine.iter().flat_map(|&wr| process.gates.gates_of(wr)).collect();
                let left: Vec<String> = gates.into_iter()
                    .map(|g| format!("{:?}", process.gates.view(now, g).map(|v| v.figures)))
                    .collect();
                prop_assert!(left.is_empty(), "gates left: {:?}", left);
            }
        }
    }
}

#[test]
fn a_call_number_is_not_given_again_before_its_settlement_is_handed_out() {
    // Drivers keep each call's side by the slot of its number: a new call made before an
    // ended one's settlement is handed out (from a hook, say) must not take that slot.
    let mut gates = Gates::new(Box::new(SimHome::alone(1)));
    let refuse = gates.wrapper(Profile {
        max_waiting: Some(0),
        ..profile(Allowance::Fixed(Rate::ARTICLE))
    });
    let request = |url: &'static str| odds_gate::core::gates::profile::Request {
        api_key: Some(KEY),
        authorization: None,
        idempotency_key: false,
        method: "GET",
        body: odds_gate::core::rules::classify::Body::None,
        url,
        batch: None,
    };
    // Refused at once (the queue may hold none): the first one's settlement is decided.
    let first = gates.start(0.0, refuse, &request(SNAPSHOT)).unwrap().call;
    let second = gates.start(0.0, refuse, &request(SNAPSHOT)).unwrap().call;
    let slot = |id: u64| id & 0xffff_ffff;
    assert_ne!(slot(first), slot(second));
    let settled: Vec<u64> = std::iter::from_fn(|| gates.poll_action(0.0))
        .filter_map(|a| match a {
            odds_gate::core::gates::action::Action::Settle { call, .. } => Some(call),
            _ => None,
        })
        .collect();
    assert_eq!(settled, [first, second]);
}

/// A GET of `url` with `KEY`, as `fetch(input, init)` brings it (a POST when `post`).
fn request(url: &str, post: bool) -> Request<'_> {
    Request {
        api_key: Some(KEY),
        authorization: None,
        idempotency_key: false,
        method: if post { "POST" } else { "GET" },
        body: Body::None,
        url,
        batch: None,
    }
}

/// Every action `gates` has at `now`, in order.
fn actions(gates: &mut Gates, now: Millis) -> Vec<Action> {
    std::iter::from_fn(|| gates.poll_action(now)).collect()
}

#[test]
fn a_send_says_whether_another_attempt_may_follow() {
    let mut gates = Gates::new(Box::new(SimHome::alone(1)));
    let retrying = gates.wrapper(profile(Allowance::Fixed(Rate::new(9.0, 9.0).unwrap())));
    let once = gates.wrapper(Profile {
        policy: Some(Rc::new(RetryPolicy {
            max_attempts: 1,
            ..RetryPolicy::default()
        })),
        ..profile(Allowance::Fixed(Rate::new(9.0, 9.0).unwrap()))
    });
    let quiet = gates.wrapper(Profile {
        policy: None,
        ..profile(Allowance::Fixed(Rate::new(9.0, 9.0).unwrap()))
    });
    // A retrying GET may go again; a POST, a call out of attempts, one that never retries not.
    for (wrapper, post, again) in [
        (retrying, false, true),
        (retrying, true, false),
        (once, false, false),
        (quiet, false, false),
    ] {
        let call = gates
            .start(0.0, wrapper, &request(SNAPSHOT, post))
            .unwrap()
            .call;
        let sent = actions(&mut gates, 0.0);
        assert!(
            matches!(sent[..], [Action::Send { call: c, again: a, .. }] if c == call && a == again),
            "{sent:?}"
        );
    }
}

#[test]
fn an_abort_takes_a_waiting_call_out_and_leaves_one_in_flight_to_its_signal() {
    let mut gates = Gates::new(Box::new(SimHome::alone(1)));
    let wrapper = gates.wrapper(profile(Allowance::Fixed(Rate::new(1.0, 1.0).unwrap())));
    let out = gates
        .start(0.0, wrapper, &request(SNAPSHOT, false))
        .unwrap()
        .call;
    let waiting = gates
        .start(0.0, wrapper, &request(SNAPSHOT, false))
        .unwrap()
        .call;
    assert!(matches!(actions(&mut gates, 0.0)[..], [Action::Send { call, .. }] if call == out));
    assert!(
        !gates.abort(1.0, out),
        "its attempt ends through the signal"
    );
    assert!(gates.abort(1.0, waiting));
    let gate = gates.find(&credential()).unwrap();
    assert_eq!(gates.view(1.0, gate).unwrap().figures.waiting, 0);
    assert_eq!(gates.gate_of(out), Some(gate));
    assert_eq!(gates.gate_of(waiting), None, "gone: the driver settles it");
}

#[test]
fn a_store_operation_carries_its_store_key_rate_and_budget() {
    let mut gates = Gates::new(Box::new(SimHome::alone(1)));
    let store = gates.store("fake", StoreSettings::DEFAULT);
    let wrapper = gates.wrapper(Profile {
        keeping: Keeping::Store(store),
        budget: Some(RefillingConfig::DEFAULT),
        ..profile(Allowance::Fixed(Rate::ARTICLE))
    });
    gates
        .start(0.0, wrapper, &request(SNAPSHOT, false))
        .unwrap();
    let ops = actions(&mut gates, 0.0);
    let Some(Action::Store {
        store: s,
        scope,
        rate,
        budget,
        ..
    }) = ops.first()
    else {
        panic!("{ops:?}");
    };
    assert_eq!((*s, scope, *rate), (store, &credential(), Rate::ARTICLE));
    assert_eq!(*budget, Some(RefillingConfig::DEFAULT.capacity));
}

#[test]
fn an_event_about_a_gate_names_every_wrapper_that_used_it() {
    let mut gates = Gates::new(Box::new(SimHome::alone(1)));
    let first = gates.wrapper(learning());
    let second = gates.wrapper(learning());
    let call = gates
        .start(0.0, first, &request(SNAPSHOT, false))
        .unwrap()
        .call;
    gates.start(0.0, second, &request(SNAPSHOT, false)).unwrap();
    actions(&mut gates, 0.0);
    gates.responded_with(10.0, call, 200, Feedback::default());
    let told: Vec<(Event, Vec<WrapperId>)> = actions(&mut gates, 10.0)
        .into_iter()
        .filter_map(|a| match a {
            Action::Event {
                call: None,
                event,
                users,
                ..
            } => Some((event, users)),
            _ => None,
        })
        .collect();
    assert!(matches!(told[..], [(Event::Learned(_), ref users)] if users[..] == [first, second]));
}

#[test]
fn a_wrapper_is_forgotten_with_its_last_holder_and_says_so() {
    let mut gates = Gates::new(Box::new(SimHome::alone(1)));
    let wrapper = gates.wrapper(profile(Allowance::Fixed(Rate::ARTICLE)));
    gates.retain(wrapper);
    assert!(!gates.release(wrapper), "a batch still holds it");
    assert!(gates.profile(wrapper).is_some());
    assert!(gates.release(wrapper));
    assert!(gates.profile(wrapper).is_none());
}

#[test]
fn a_gate_holds_a_get_while_its_cooldown_lasts() {
    // The first answer is a 429 with Retry-After 5: the gate's cooldown runs to 5 s after it.
    let mut answered = false;
    let server = move |_: Millis, _: &Arrival| {
        let first = !answered;
        answered = true;
        match first {
            true => Reply::status(429, &[("retry-after", "5")]).after(10.0),
            false => Reply::ok().after(10.0),
        }
    };
    let fixed = profile(Allowance::Fixed(Rate::new(2.0, 2.0).unwrap()));
    let (mut w, wrapper) = world(fixed, server);
    let scope = credential();
    let holds = |w: &mut World, url: &str| w.processes[0].gates.holds(w.now, wrapper, &scope, url);
    // No gate yet: nothing holds the call.
    assert!(!holds(&mut w, SNAPSHOT));
    w.start_at(0.0, SimCall::get(0, wrapper, KEY, SNAPSHOT));
    w.run_until(5.0);
    assert!(!holds(&mut w, SNAPSHOT), "no cooldown before the 429");
    w.run_until(11.0);
    assert!(holds(&mut w, SNAPSHOT), "in the cooldown");
    assert!(
        holds(&mut w, "http://api/v1/usage"),
        "a cooldown holds every call"
    );
    // Another credential's gate is not this one's.
    let other = Scope::of(Some("key-2"), None);
    assert!(!w.processes[0].gates.holds(w.now, wrapper, &other, SNAPSHOT));
    w.run_until(5_009.0);
    assert!(holds(&mut w, SNAPSHOT));
    w.run_until(5_011.0);
    assert!(!holds(&mut w, SNAPSHOT), "the cooldown is over");
}

#[test]
fn a_gate_holds_all_but_account_calls_once_its_quota_is_known_spent() {
    let quota = Reply::status(429, &[]).saying("quota_exceeded", "Monthly API credits exhausted");
    let server = move |_: Millis, _: &Arrival| quota.clone().after(10.0);
    let fixed = profile(Allowance::Fixed(Rate::new(2.0, 2.0).unwrap()));
    let (mut w, wrapper) = world(fixed, server);
    w.usage = Some(odds_gate::core::rules::quota::Usage {
        used: 1_000.0,
        limit: 1_000.0,
        period_end: None,
    });
    let scope = credential();
    w.start_at(0.0, SimCall::get(0, wrapper, KEY, SNAPSHOT));
    w.run();
    let gates = &mut w.processes[0].gates;
    assert!(gates.holds(w.now, wrapper, &scope, SNAPSHOT));
    assert!(!gates.holds(w.now, wrapper, &scope, "http://api/v1/usage"));
    gates.reset_quota(w.now, wrapper);
    assert!(
        !gates.holds(w.now, wrapper, &scope, SNAPSHOT),
        "the quota is back"
    );
}

#[test]
fn a_lane_is_made_from_its_wrapper_and_named_by_its_number_when_unnamed() {
    let mut gates = Gates::new(Box::new(SimHome::alone(1)));
    let wrapper = gates.wrapper(profile(Allowance::Fixed(Rate::new(1.0, 1.0).unwrap())));
    let asks = LaneAsks::default;
    let (first, name) = gates.lane_of_wrapper(wrapper, asks(), 2.0, None).unwrap();
    assert_eq!(name, "lane-1");
    assert_eq!(
        gates.lane_of(first).map(|(lane, ..)| lane.weight),
        Some(2.0)
    );
    let (_, name) = gates.lane_of_wrapper(wrapper, asks(), 1.0, None).unwrap();
    assert_eq!(name, "lane-2");
    let (_, name) = gates
        .lane_of_wrapper(wrapper, asks(), 1.0, Some("bulk"))
        .unwrap();
    assert_eq!(name, "bulk");
    assert!(gates.release(wrapper), "its last holder");
    assert_eq!(
        gates.lane_of_wrapper(wrapper, asks(), 1.0, None),
        None,
        "gone"
    );
}

/// A snapshot, then 200 lookups one after another, each answered in 1 ms by a limiter of burst
/// `limit` with a token left, named `per_event` after its event or all one name: the world once
/// every call was delivered, and the wrapper.
fn lookups_in_turn(per_event: bool, limit: u32) -> (World, WrapperId) {
    let server = move |_: Millis, a: &Arrival| {
        let id = a.url.rsplit('/').next().unwrap_or("x");
        let name = match per_event {
            true => format!("event-{id}"),
            false => "events".to_owned(),
        };
        Reply::status(
            200,
            &[
                ("x-ratelimit-limit", &limit.to_string()),
                ("x-ratelimit-remaining", &(limit - 1).to_string()),
                ("x-ratelimit-bucket", &name),
            ],
        )
        .after(1.0)
    };
    let (mut w, wrapper) = world(learning(), server);
    let mut last = w.start_at(0.0, SimCall::get(0, wrapper, KEY, SNAPSHOT));
    for i in 0..200 {
        last = w.start_after(last, SimCall::get(0, wrapper, KEY, &lookup(i)));
    }
    w.run();
    assert!((0..201).all(|i| w.log.settled[&i].1 == End::Deliver));
    (w, wrapper)
}

#[test]
fn a_limiter_per_event_costs_what_one_limiter_does() {
    // Past the cap, the limiters' calls share one more gate that learns from any of their
    // answers. Before, they went to the credential's gate, which heard none of them and let
    // one a second go: 15.0 s in all against 0.2 s under one name.
    for limit in [2, 10, 1000] {
        let one = lookups_in_turn(false, limit).0.log.settled[&200].0;
        let many = lookups_in_turn(true, limit).0.log.settled[&200].0;
        assert_eq!(many, one, "limit {limit}");
    }
}

#[test]
fn the_limiters_past_the_cap_share_a_gate_and_no_429_comes() {
    // 30 events, each with a limiter of its own of 2 @ 2/s (true counts), called in turn
    // from 4 workers, 600 calls (after a snapshot each): 14 of the limiters are past the cap.
    let buckets = Rc::new(std::cell::RefCell::new(std::collections::HashMap::new()));
    let server = move |now: Millis, a: &Arrival| {
        let id = a.url.rsplit('/').next().unwrap_or("x").to_owned();
        let mut buckets = buckets.borrow_mut();
        let bucket = buckets
            .entry(id.clone())
            .or_insert_with(|| TokenBucket::new(Rate::new(2.0, 2.0).unwrap(), now));
        let ok = bucket.take(now);
        let left = bucket.tokens(now).floor().to_string();
        let name = format!("event-{id}");
        let headers = [
            ("x-ratelimit-limit", "2"),
            ("x-ratelimit-remaining", left.as_str()),
            ("x-ratelimit-bucket", name.as_str()),
        ];
        match ok {
            true => Reply::status(200, &headers),
            false => Reply::status(429, &headers),
        }
        .after(1.0)
    };
    let (mut w, wrapper) = world(learning(), server);
    w.start_at(0.0, SimCall::get(0, wrapper, KEY, SNAPSHOT));
    for worker in 0..4 {
        let mut last = w.start_at(10.0, SimCall::get(0, wrapper, KEY, SNAPSHOT));
        for i in 0..150 {
            let url = format!("http://api/v1/events/e{}", (i * 4 + worker) % 30);
            last = w.start_after(last, SimCall::get(0, wrapper, KEY, &url));
        }
    }
    w.run();
    assert!((0..605).all(|i| w.log.settled[&i].1 == End::Deliver));
    let throttled = w.log.responses.iter().filter(|r| r.2 == 429).count();
    let end = (0..605).map(|i| w.log.settled[&i].0).fold(0.0, f64::max);
    assert_eq!(throttled, 0);
    // Measured: 113.4 s (the route draws from the limiter its latest answer named, so most
    // calls wait on one limiter's pace; one limiter for all of them: 300 s).
    assert!(end <= 115_000.0, "done at {end} ms");
}

//! A gate whose state lives in a shared store: one round trip admits what the queue can use,
//! cooldowns reach everyone, and a store that stops answering (open or closed).

use odds_gate::core::authority::fair::Turn;
use odds_gate::core::authority::store::StoreAuthority;
use odds_gate::core::authority::Op;
use odds_gate::core::gate::store_link::{OnFailure, StoreSettings};
use odds_gate::core::gates::scope::Scope;

use super::harness::FakeStore;
use super::*;

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
        None,
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
fn through_a_store_one_round_trip_admits_what_the_queue_can_use() {
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

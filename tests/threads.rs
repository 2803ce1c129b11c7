//! The authority threads share, on a virtual clock and with real threads: one allowance for
//! every line, arrival order across lines, claims of dead threads that lapse, settings that
//! must agree, and no token lost or spent twice while threads hammer one slot.
#![cfg(not(target_arch = "wasm32"))]

use std::sync::{Arc, Mutex};

use odds_gate::core::authority::fair::Turn;
use odds_gate::core::authority::threads::{vacant, Settings, Slot, ThreadAuthority, WORDS};
use odds_gate::core::authority::{Answer, Immediate, Op, Transitions};
use odds_gate::core::base::random::Seeded;
use odds_gate::core::gate::action::{End, Event, GateAction};
use odds_gate::core::gate::call::CallSpec;
use odds_gate::core::gate::Gate;
use odds_gate::core::gates::profile::{Keeping, Profile, Request};
use odds_gate::core::gates::scope::Scope;
use odds_gate::core::gates::Gates;
use odds_gate::core::rules::allowance::Allowance;
use odds_gate::core::rules::allowance::Rate;
use odds_gate::core::rules::budget::RefillingConfig;
use odds_gate::core::rules::classify::Body;
use odds_gate::core::rules::policy::Reason;
use odds_gate::core::sim::home::{SharedMemory, SimHome};
use odds_gate::core::sim::server::{Arrival, Reply};
use odds_gate::core::sim::world::{SimCall, World};
use odds_gate::core::Millis;

/// A slot behind a mutex: what the bindings do with `Atomics` over a `SharedArrayBuffer`,
/// here with std's lock, so real threads can share it.
#[derive(Clone)]
struct Shared(Arc<Mutex<[f64; WORDS]>>);

impl Shared {
    fn new() -> Shared {
        Shared(Arc::new(Mutex::new([0.0; WORDS])))
    }
}

impl Slot for Shared {
    fn transact(&mut self, f: &mut dyn FnMut(&mut [f64; WORDS]) -> bool, _: bool) -> bool {
        let mut words = self.0.lock().unwrap();
        let mut copy = *words;
        if f(&mut copy) {
            *words = copy;
        }
        true
    }
}

fn settings(burst: f64, per_second: f64) -> Settings {
    Settings {
        rate: Rate::new(burst, per_second).unwrap(),
        budget: None,
        learn: false,
    }
}

fn join(slot: &Shared, settings: Settings, thread: u32, offset: Millis) -> ThreadAuthority {
    ThreadAuthority::join(Box::new(slot.clone()), settings, thread, offset).unwrap()
}

/// The head of lane 0 (every wrapper's own calls), there since `since`.
fn at(since: Millis) -> Turn {
    Turn {
        since,
        lane: Some((0, 1.0)),
        waiting: 1,
    }
}

fn admitted(answer: Answer) -> bool {
    matches!(answer, Answer::Admitted { .. })
}

#[test]
fn threads_draw_from_one_allowance_in_the_order_their_calls_came() {
    // Two threads sharing memory, on the simulator's clock, every answer a 200 at once.
    let shared_memory = SharedMemory::default();
    let profile = Profile {
        allowance: Allowance::Fixed(Rate::ARTICLE),
        budget: None,
        keeping: Keeping::Memory { threads: true },
        policy: None,
        max_wait_ms: None,
        max_waiting: None,
        reports_wait: false,
        typed_errors: false,
        spread: None,
    };
    let mut threads = Vec::new();
    let mut wrappers = Vec::new();
    for thread in 1..=2 {
        let mut gates = Gates::new(Box::new(SimHome::sharing(
            thread.into(),
            thread,
            shared_memory.clone(),
        )));
        wrappers.push(gates.wrapper(profile.clone()));
        threads.push(gates);
    }
    let mut world = World::new(threads, Box::new(|_: Millis, _: &Arrival| Reply::ok()));
    // Eight calls, alternating between the threads' queues, one a millisecond.
    for i in 0..8 {
        let p = i % 2;
        world.start_at(
            i as f64,
            SimCall::get(p, wrappers[p], "k", "http://api/v1/x"),
        );
    }
    world.run();
    let order: Vec<usize> = world.log.sent.iter().map(|s| s.index).collect();
    assert_eq!(
        order,
        (0..8).collect::<Vec<_>>(),
        "arrival order across threads"
    );
    assert!((0..8).all(|i| world.log.settled[&i].1 == End::Deliver));
    let times: Vec<Millis> = world.log.sent.iter().map(|s| s.at).collect();
    // The article's 8/0/8 schedule: the burst at once, then one every 500 ms, as one thread
    // alone would have it.
    assert_eq!(
        times,
        [0.0, 1.0, 500.0, 1000.0, 1500.0, 2000.0, 2500.0, 3000.0]
    );
}

#[test]
fn a_head_that_came_first_gets_the_token_even_when_it_asks_later() {
    let slot = Shared::new();
    let rate = settings(1.0, 1.0);
    let (mut a, mut b) = (join(&slot, rate, 1, 0.0), join(&slot, rate, 2, 0.0));
    assert!(admitted(a.admit(0.0, 0, at(0.0), false, None)));
    a.apply(0.0, &Op::Resume { id: 0 });
    // A's next head came at 10 and is told to come back when the token is there.
    assert_eq!(a.admit(10.0, 1, at(10.0), false, None), Answer::Wait(990.0));
    // B's head came at 20 and asks first when the token is there: A came first.
    let Answer::Wait(ms) = b.admit(1_000.0, 0, at(20.0), false, None) else {
        panic!("B went before A")
    };
    assert_eq!(b.predict(1_000.0, 0), 1_000.0 + ms);
    assert!(admitted(a.admit(1_000.5, 1, at(10.0), false, None)));
    a.apply(1_000.5, &Op::Resume { id: 1 });
    // Then B waits for the next token, a second after A's (a wait is in whole ms, up).
    let next = 2_000.5 - (1_000.0 + ms);
    assert_eq!(
        b.admit(1_000.0 + ms, 0, at(20.0), false, None),
        Answer::Wait(next.ceil())
    );
}

#[test]
fn a_claim_not_renewed_lapses_after_one_token_interval() {
    let slot = Shared::new();
    let rate = settings(1.0, 4.0);
    let (mut a, mut b) = (join(&slot, rate, 1, 0.0), join(&slot, rate, 2, 0.0));
    assert!(admitted(a.admit(0.0, 0, at(0.0), false, None)));
    a.apply(0.0, &Op::Resume { id: 0 });
    // A's head waits for 250 ms, then its thread dies: it never asks again.
    assert_eq!(a.admit(0.0, 1, at(0.0), false, None), Answer::Wait(250.0));
    assert!(
        !admitted(b.admit(300.0, 0, at(100.0), false, None)),
        "A's claim still holds"
    );
    assert!(
        admitted(b.admit(500.5, 0, at(100.0), false, None)),
        "after 250 + 250 ms the claim lapsed"
    );
}

#[test]
fn what_one_thread_learns_holds_every_thread_on_its_own_clock() {
    let slot = Shared::new();
    let rate = settings(2.0, 2.0);
    let (mut a, mut b) = (join(&slot, rate, 1, 0.0), join(&slot, rate, 2, 1_000.0));
    let cooldown = Op::Feedback {
        cooldown_ms: Some(5_000.0),
        remaining: None,
    };
    a.apply(100.0, &cooldown);
    assert_eq!(a.cooldown_until(), 5_100.0);
    assert_eq!(b.cooldown_until(), 4_100.0, "B's clock reads 1 s more");
    assert_eq!(
        b.admit(4_000.0, 0, at(4_000.0), false, None),
        Answer::Wait(100.0)
    );
    assert!(admitted(b.admit(4_100.0, 0, at(4_000.0), false, None)));
}

/// A slot that counts the transactions run on it.
#[derive(Clone)]
struct Counted(Shared, Arc<Mutex<u32>>);

impl Slot for Counted {
    fn transact(&mut self, f: &mut dyn FnMut(&mut [f64; WORDS]) -> bool, admission: bool) -> bool {
        *self.1.lock().unwrap() += 1;
        self.0.transact(f, admission)
    }
}

#[test]
fn a_successs_refund_rides_along_with_the_threads_next_transaction() {
    let slot = Shared::new();
    let transactions = Arc::new(Mutex::new(0));
    let budget = Settings {
        budget: Some(RefillingConfig {
            capacity: 10.0,
            ..RefillingConfig::DEFAULT
        }),
        ..settings(2.0, 2.0)
    };
    let counted = Box::new(Counted(slot.clone(), transactions.clone()));
    let mut a = ThreadAuthority::join(counted, budget, 1, 0.0).unwrap();
    let mut b = join(&slot, budget, 2, 0.0);
    let charge = |cost, refund| Op::Charge { cost, refund };
    assert_eq!(a.apply(0.0, &charge(6.0, 0.0)), Answer::Charged(4.0));
    let before = *transactions.lock().unwrap();
    a.credit(0.0, 1.0);
    a.credit(0.0, 2.0);
    assert_eq!(
        *transactions.lock().unwrap(),
        before,
        "a credit costs no transaction"
    );
    assert_eq!(b.budget_left(), Some(4.0), "B has not heard of them yet");
    // A's next transaction, whatever it is, brings both: B and A see them.
    assert_eq!(a.budget_left(), Some(7.0));
    assert_eq!(*transactions.lock().unwrap(), before + 1);
    assert_eq!(b.budget_left(), Some(7.0));
    // Told once: a charge after them starts from 7.
    assert_eq!(a.apply(0.0, &charge(5.0, 0.0)), Answer::Charged(2.0));
}

#[test]
fn the_retry_budget_and_the_allowance_are_the_first_threads() {
    let slot = Shared::new();
    let budget = RefillingConfig {
        capacity: 10.0,
        ..RefillingConfig::DEFAULT
    };
    let with_budget = Settings {
        budget: Some(budget),
        ..settings(2.0, 2.0)
    };
    let mut a = join(&slot, settings(2.0, 2.0), 1, 0.0);
    let mut b = join(&slot, with_budget, 2, 0.0);
    assert_eq!(a.budget_left(), Some(10.0), "A sees the budget B brought");
    let charge = Op::Charge {
        cost: 10.0,
        refund: 0.0,
    };
    assert_eq!(b.apply(0.0, &charge), Answer::Charged(0.0));
    let c = join(&slot, settings(2.0, 2.0), 3, 0.0);
    assert_eq!(
        c.settings(),
        with_budget,
        "a later thread takes the budget on"
    );
    assert!(matches!(
        a.apply(0.0, &charge),
        Answer::Refused(left) if left == 0.0
    ));
    let other_rate = ThreadAuthority::join(Box::new(slot.clone()), settings(5.0, 5.0), 4, 0.0);
    assert_eq!(other_rate.err(), Some(with_budget));
    let other_budget = Settings {
        budget: Some(RefillingConfig::DEFAULT),
        ..settings(2.0, 2.0)
    };
    let refused = ThreadAuthority::join(Box::new(slot.clone()), other_budget, 5, 0.0);
    assert_eq!(refused.err(), Some(with_budget));
}

#[test]
fn a_slot_is_vacant_once_its_state_is_as_good_as_new() {
    let slot = Shared::new();
    assert!(vacant(&mut slot.0.lock().unwrap(), 0.0), "never used");
    let mut a = join(&slot, settings(1.0, 10.0), 1, 0.0);
    assert!(admitted(a.admit(0.0, 0, at(0.0), false, None)));
    a.apply(0.0, &Op::Resume { id: 0 });
    assert!(!vacant(&mut slot.0.lock().unwrap(), 50.0));
    assert!(vacant(&mut slot.0.lock().unwrap(), 100.0));
    assert_eq!(
        a.admit(100.0, 1, at(100.0), false, None),
        Answer::Admitted {
            anchor: true,
            next_ms: 100.0,
            admissions: 1,
            seq: 1.0
        }
    );
    assert_eq!(
        a.admit(100.0, 2, at(100.0), false, None),
        Answer::Wait(100.0)
    );
    assert!(
        !vacant(&mut slot.0.lock().unwrap(), 1_000.0),
        "a head's claim"
    );
}

#[test]
fn threads_hammering_one_slot_spend_every_token_once() {
    const TOKENS: usize = 100_000;
    let slot = Shared::new();
    // A burst of 100,000 that all but never refills: every admission spends one of them.
    let rate = settings(TOKENS as f64, 1e-6);
    // All start at once, though on a loaded machine one may still find the burst spent.
    let start = Arc::new(std::sync::Barrier::new(4));
    let handles: Vec<_> = (1..=4)
        .map(|thread| {
            let (slot, start) = (slot.clone(), start.clone());
            std::thread::spawn(move || {
                let mut authority = join(&slot, rate, thread, 0.0);
                start.wait();
                let mut admitted = 0usize;
                for id in 0..TOKENS as u64 {
                    match authority.admit(0.0, id, at(f64::from(thread)), false, None) {
                        Answer::Admitted { .. } => admitted += 1,
                        _ => break,
                    }
                }
                admitted
            })
        })
        .collect();
    let counts: Vec<usize> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(counts.iter().sum::<usize>(), TOKENS, "{counts:?}");
    assert!(
        counts.iter().filter(|&&c| c > 0).count() >= 2,
        "threads took turns: {counts:?}"
    );
}

#[test]
fn a_waiting_call_goes_at_its_deadline_when_another_thread_took_its_token() {
    let slot = Shared::new();
    let rate = settings(1.0, 10.0); // a token per 100 ms
    let mut gate = Gate::threaded(join(&slot, rate, 1, 0.0), Box::new(Seeded::new(1)));
    let mut other = join(&slot, rate, 2, 0.0);
    assert!(admitted(other.admit(0.0, 0, at(0.0), false, None)));
    other.apply(0.0, &Op::Resume { id: 0 });
    // Predicted for 100 ms when it joins: within its 150.
    let spec = CallSpec {
        max_wait_ms: Some(150.0),
        ..CallSpec::default()
    };
    gate.start(0.0, spec, 0);
    assert!(gate.poll_action(0.0).is_none());
    // The other thread's head came as early and asks first: the token is its.
    assert!(admitted(other.admit(100.0, 1, at(0.0), false, None)));
    assert!(gate.poll_action(100.0).is_none());
    // Its next token is 100 ms away, past the deadline: the gate wakes at the deadline.
    let due = gate.poll_timeout(100.0).expect("a wake-up");
    assert_eq!(due, 151.0, "wakes at the deadline");
    gate.handle_timeout(due);
    let ends: Vec<GateAction> = std::iter::from_fn(|| gate.poll_action(due)).collect();
    assert!(
        ends.iter().any(
            |a| matches!(a, GateAction::Settle { end: End::Abandoned { abandoned, .. }, .. }
            if abandoned.reason == Reason::QueueWait)
        ),
        "{ends:?}"
    );
}

#[test]
fn a_key_the_shared_memory_has_no_room_for_is_each_threads_and_says_so_once() {
    // Two threads on a shared memory with room for one key: "a" takes it, "b" finds none. Four calls
    // per thread on each key, every answer a 200 at once.
    let shared_memory = SharedMemory::default();
    let profile = Profile {
        allowance: Allowance::Fixed(Rate::ARTICLE),
        budget: None,
        keeping: Keeping::Memory { threads: true },
        policy: None,
        max_wait_ms: None,
        max_waiting: None,
        reports_wait: false,
        typed_errors: false,
        spread: None,
    };
    let mut threads = Vec::new();
    let mut wrappers = Vec::new();
    for thread in 1..=2 {
        let home = SimHome::sharing(thread.into(), thread, shared_memory.clone()).with_room(1);
        let mut gates = Gates::new(Box::new(home));
        wrappers.push(gates.wrapper(profile.clone()));
        threads.push(gates);
    }
    let mut world = World::new(threads, Box::new(|_: Millis, _: &Arrival| Reply::ok()));
    let mut keys = Vec::new();
    for key in ["a", "b"] {
        for i in 0..8 {
            let p = i % 2;
            let index = world.start_at(0.0, SimCall::get(p, wrappers[p], key, "http://api/v1/x"));
            keys.push((index, key));
        }
    }
    world.run();
    let at_once = |key: &str| {
        let sent = world.log.sent.iter().filter(|s| s.at < 1.0);
        sent.filter(|s| keys.iter().any(|&(i, k)| i == s.index && k == key))
            .count()
    };
    assert_eq!(at_once("a"), 2, "one burst for the threads together");
    assert_eq!(at_once("b"), 4, "a burst in each thread");
    let told: Vec<usize> = world
        .log
        .events
        .iter()
        .filter(|e| e.3 == Event::NoRoom)
        .map(|e| e.1)
        .collect();
    assert_eq!(told, [0, 1], "once per thread, for key b only");
}

#[test]
fn stats_show_which_gates_the_threads_share() {
    let mut gates = Gates::new(Box::new(
        SimHome::sharing(1, 1, SharedMemory::default()).with_room(1),
    ));
    let wrapper = gates.wrapper(Profile {
        allowance: Allowance::Fixed(Rate::ARTICLE),
        budget: None,
        keeping: Keeping::Memory { threads: true },
        policy: None,
        max_wait_ms: None,
        max_waiting: None,
        reports_wait: false,
        typed_errors: false,
        spread: None,
    });
    for key in ["a", "b"] {
        let request = Request {
            api_key: Some(key),
            authorization: None,
            idempotency_key: false,
            method: "GET",
            body: Body::None,
            url: "",
            batch: None,
        };
        gates.start(0.0, wrapper, &request).unwrap();
    }
    let shared = |gates: &mut Gates, key: &str| {
        let gate = gates.find(&Scope::of(Some(key), None)).unwrap();
        gates.view(0.0, gate).unwrap().threads
    };
    assert!(shared(&mut gates, "a"));
    assert!(!shared(&mut gates, "b"));
}

#[test]
fn a_head_held_for_another_threads_head_is_let_go_at_its_deadline() {
    // A claim of another thread's head, ahead in the order, holds this thread's head up to its
    // deadline while a token sits in memory: the head is let go at its deadline (the token was
    // the other head's), each wake-up later than the one before. It used to count as ready by
    // its deadline and ask again, its timer re-armed for that past deadline at the same instant
    // for as long as the claim held (on the virtual clock: forever, "the run did not end").
    let slot = Shared::new();
    // A token a second: a claim lapses 250 ms past its time, a head behind it looks every 20.
    let rate = settings(2.0, 1.0);
    let mut gate = Gate::threaded(join(&slot, rate, 1, 0.0), Box::new(Seeded::new(1)));
    let mut other = join(&slot, rate, 2, 0.0);
    // The other thread's head takes a token with one more call behind it: its claim keeps the
    // next token's turn for its next head; then that thread stalls.
    let behind = Turn {
        waiting: 2,
        ..at(0.0)
    };
    assert!(admitted(other.admit(0.0, 0, behind, false, None)));
    other.apply(0.0, &Op::Resume { id: 0 });
    let spec = CallSpec {
        max_wait_ms: Some(150.0),
        ..CallSpec::default()
    };
    // A token is there when it joins at 10, so it waits, with its deadline at 160.
    gate.start(10.0, spec, 0);
    assert!(gate.poll_action(10.0).is_none());
    let mut now = 10.0;
    let mut actions = Vec::new();
    for _ in 0..20 {
        let due = gate
            .poll_timeout(now)
            .expect("a wake-up while the call waits");
        assert!(due > now, "a wake-up at {due}, not after {now}");
        now = due;
        gate.handle_timeout(now);
        actions.extend(std::iter::from_fn(|| gate.poll_action(now)));
        if actions
            .iter()
            .any(|a| matches!(a, GateAction::Settle { .. }))
        {
            break;
        }
    }
    assert_eq!(now, 161.0, "let go at its deadline's wake-up, 1 ms past it");
    assert!(
        !actions.iter().any(|a| matches!(a, GateAction::Send { .. })),
        "{actions:?}"
    );
    assert!(
        actions.iter().any(
            |a| matches!(a, GateAction::Settle { end: End::Abandoned { abandoned, .. }, .. }
            if abandoned.reason == Reason::QueueWait)
        ),
        "{actions:?}"
    );
}

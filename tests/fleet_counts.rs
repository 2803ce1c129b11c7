//! A fixed rate shared by a fleet (processes through a store) or by threads (through shared
//! memory), against a server that sends its counts on every answer: at the floor every answer
//! says 0 left, which must not read as someone else draining the key. And a key someone
//! outside the gate really drains must still lower the gate's count and slow it.
//! `cargo test --release --test fleet_counts -- --nocapture --test-threads 1` prints every run.
#![cfg(not(target_arch = "wasm32"))]

mod profiles;

use odds_gate::core::gate::action::End;
use odds_gate::core::gate::store_link::StoreSettings;
use odds_gate::core::gates::ids::WrapperId;
use odds_gate::core::gates::profile::{Keeping, Profile};
use odds_gate::core::gates::Gates;
use odds_gate::core::rules::allowance::{Allowance, Rate};
use odds_gate::core::rules::budget::RefillingConfig;
use odds_gate::core::sim::home::{SharedMemory, SimHome};
use odds_gate::core::sim::server::{Allowances, Headers, Limiter};
use odds_gate::core::sim::world::{SimCall, World};
use odds_gate::core::Millis;

/// Who shares the allowance.
#[derive(Debug, Clone, Copy)]
enum Spenders {
    /// Threads of one process, sharing memory.
    Threads(usize),
    /// Processes sharing a store.
    Fleet(usize),
}

impl Spenders {
    fn count(self) -> usize {
        let (Spenders::Threads(n) | Spenders::Fleet(n)) = self;
        n
    }
}

/// The world a run takes place in.
#[derive(Debug, Clone, Copy)]
struct Setup {
    spenders: Spenders,
    rate: Rate,
    headers: Headers,
    /// From a request's arrival to its answer.
    server_ms: Millis,
    /// From a store operation to its answer.
    store_ms: Millis,
    /// How late every timer fires.
    late_ms: Millis,
}

/// Burst 2 at 2/s, counts on every answer, a store that answers in 1 ms.
fn article(spenders: Spenders) -> Setup {
    Setup {
        spenders,
        rate: Rate::new(2.0, 2.0).unwrap(),
        headers: Headers::Always,
        server_ms: 0.0,
        store_ms: 1.0,
        late_ms: 0.0,
    }
}

/// The spenders' wrappers at a fixed rate, and one more process at the end: someone outside
/// the gate (a gate that never holds a call nor retries: plain fetch, near enough).
fn world(s: Setup) -> (World, Vec<WrapperId>) {
    let shared_memory = SharedMemory::default();
    let mut all = Vec::new();
    let mut wrappers = Vec::new();
    for p in 0..s.spenders.count() {
        let seed = 1 + 100 * p as u64;
        let (home, keeping) = match s.spenders {
            Spenders::Threads(_) => (
                SimHome::sharing(seed, p as u32 + 1, shared_memory.clone()),
                None,
            ),
            Spenders::Fleet(_) => (SimHome::alone(seed), Some(())),
        };
        let mut gates = Gates::new(Box::new(home));
        let keeping = match keeping {
            Some(()) => Keeping::Store(gates.store("fake", StoreSettings::DEFAULT)),
            None => Keeping::Memory { threads: true },
        };
        wrappers.push(gates.wrapper(Profile {
            budget: Some(RefillingConfig::DEFAULT),
            ..profiles::profile(Allowance::Fixed(s.rate), keeping)
        }));
        all.push(gates);
    }
    let mut outside = Gates::new(Box::new(SimHome::alone(7)));
    wrappers.push(outside.wrapper(Profile {
        allowance: Allowance::Fixed(Rate::new(1e6, 1e6).unwrap()),
        budget: None,
        keeping: Keeping::Memory { threads: false },
        policy: None,
        max_wait_ms: None,
        max_waiting: None,
        reports_wait: false,
        typed_errors: false,
        spread: None,
    }));
    all.push(outside);
    let limiter = Limiter {
        name: None,
        path: String::new(),
        rate: s.rate,
    };
    let mut server = Allowances::new(vec![limiter], 1_000.0);
    server.headers = s.headers;
    server.latency_ms = s.server_ms;
    let mut world = World::new(all, Box::new(server));
    world.store.latency = s.store_ms;
    world.timer_late_ms = s.late_ms;
    (world, wrappers)
}

/// A snapshot call numbered `n` by spender `p` (the one past the spenders: the outsider).
fn snapshot(wrappers: &[WrapperId], p: usize, n: usize) -> SimCall {
    let url = format!("http://api/v1/events/e{p}-{n}/odds/snapshot");
    SimCall::get(p, wrappers[p], "key", &url)
}

/// What the spenders' attempts gave.
#[derive(Debug, Clone, Copy)]
struct Outcome {
    attempts: usize,
    throttled: usize,
    completed: usize,
    calls: usize,
    /// When the last call was done.
    done_ms: Millis,
}

fn outcome(world: &World, s: Setup, calls: &[usize]) -> Outcome {
    let settled = calls.iter().filter_map(|i| world.log.settled.get(i));
    let (done_ms, completed) = settled.fold((0.0f64, 0), |(at, n), (t, end)| {
        (at.max(*t), n + usize::from(*end == End::Deliver))
    });
    let spent = world.log.sent.iter();
    let ours = spent.filter(|sent| sent.process < s.spenders.count());
    let (attempts, throttled) = ours.fold((0, 0), |(a, r), sent| {
        (a + 1, r + usize::from(sent.status == Some(429)))
    });
    Outcome {
        attempts,
        throttled,
        completed,
        calls: calls.len(),
        done_ms,
    }
}

/// 64 calls at once, 8 a spender (in one queue each), the run.
fn at_the_floor(s: Setup) -> (Outcome, f64) {
    let (mut world, wrappers) = world(s);
    let n = s.spenders.count();
    let calls: Vec<usize> = (0..64)
        .map(|w| world.start_at(0.0, snapshot(&wrappers, w % n, w)))
        .collect();
    world.run();
    let o = outcome(&world, s, &calls);
    let floor = (64.0 - s.rate.burst()) / s.rate.per_second() * 1000.0;
    let ratio = o.done_ms / floor;
    println!(
        "{:?} {:?}, store {} ms, server {} ms, timers {} ms late: {} attempts, {} 429s, \
         {}/{} done at {:.0} ms, {ratio:.3} x floor",
        s.spenders,
        s.headers,
        s.store_ms,
        s.server_ms,
        s.late_ms,
        o.attempts,
        o.throttled,
        o.completed,
        o.calls,
        o.done_ms
    );
    (o, ratio)
}

/// The run over store and server latencies (a store's 0.3 to 1 ms, a server's 0 to
/// 33 ms) and timers firing late: 0 429s, and the worst time over the floor. Before the
/// pacing rule knew where an answer's request stood, the fleet took up to 1.30 x.
fn worst_at_the_floor(spenders: Spenders, headers: Headers) -> f64 {
    let mut worst = 0.0f64;
    for store_ms in [0.3, 0.5, 0.7, 1.0] {
        for server_ms in [0.0, 7.0, 13.0, 20.0, 33.0] {
            for late_ms in [0.0, 1.0, 2.5] {
                let s = Setup {
                    headers,
                    server_ms,
                    store_ms,
                    late_ms,
                    ..article(spenders)
                };
                let (o, ratio) = at_the_floor(s);
                assert_eq!((o.completed, o.throttled), (64, 0), "{s:?}: {o:?}");
                worst = worst.max(ratio);
            }
        }
    }
    println!("{spenders:?}, {headers:?}: worst {worst:.3} x floor");
    worst
}

/// What the virtual clock measures (1.0023 x with counts on every answer or on 429s only),
/// rounded up.
const AT_THE_FLOOR: f64 = 1.003;

#[test]
fn a_fleet_with_counts_on_every_answer_goes_at_the_floor() {
    assert!(worst_at_the_floor(Spenders::Fleet(8), Headers::Always) <= AT_THE_FLOOR);
    assert!(worst_at_the_floor(Spenders::Fleet(8), Headers::OnThrottle) <= AT_THE_FLOOR);
}

#[test]
fn threads_with_counts_on_every_answer_go_at_the_floor() {
    assert!(worst_at_the_floor(Spenders::Threads(8), Headers::Always) <= AT_THE_FLOOR);
    assert!(worst_at_the_floor(Spenders::Threads(8), Headers::OnThrottle) <= AT_THE_FLOOR);
}

/// A key someone outside the gate drains: the spenders call one at a time, every 400 ms (2.5 a
/// second of the allowance's 5), round the spenders; just before 6 s someone else spends 9 of
/// the 10 tokens at once; at 6.1 s each spender has 2 calls more. What the spenders' attempts
/// gave, and whether their shared state refilled at half rate and (in the store, where the
/// test can look) held at most 2 tokens at 6.1 s, once the answer to the call at 6 s was told.
fn drained(s: Setup) -> (Outcome, bool, Option<bool>) {
    let (mut world, wrappers) = world(s);
    let n = s.spenders.count();
    let mut calls = Vec::new();
    for k in 0..=15 {
        calls.push(world.start_at(400.0 * k as f64, snapshot(&wrappers, k % n, k)));
    }
    for k in 0..9 {
        world.start_at(5_900.0, snapshot(&wrappers, n, k));
    }
    for k in 0..2 * n {
        calls.push(world.start_at(6_100.0, snapshot(&wrappers, k % n, 100 + k)));
    }
    world.run_until(6_100.0);
    let (slow, low) = match s.spenders {
        Spenders::Fleet(_) => {
            let a = world
                .store
                .gates
                .values_mut()
                .next()
                .expect("the store's state");
            (
                a.memory.slow(),
                Some(a.memory.predict(6_100.0, 2) > 6_100.0),
            )
        }
        Spenders::Threads(_) => {
            let gates = &mut world.processes[0].gates;
            let gate = gates.gates_of(wrappers[0])[0];
            let view = gates.view(6_100.0, gate).expect("the gate");
            (view.figures.slow, None)
        }
    };
    world.run();
    let o = outcome(&world, s, &calls);
    println!(
        "drained, {:?} {:?}: {} attempts, {} 429s, {}/{} done at {:.0} ms; at 6.1 s slow: \
         {slow}, at most 2 tokens: {low:?}",
        s.spenders, s.headers, o.attempts, o.throttled, o.completed, o.calls, o.done_ms
    );
    (o, slow, low)
}

/// The drained key's runs with counts on every answer (the spenders' 429s: 2 in the fleet, 0
/// in the threads), and without counts (8 either way).
#[test]
fn a_key_drained_outside_the_gate_still_lowers_the_count_and_slows_it() {
    for (spenders, counted_429s) in [(Spenders::Fleet(4), 2), (Spenders::Threads(4), 0)] {
        let s = Setup {
            server_ms: 20.0,
            rate: Rate::new(10.0, 5.0).unwrap(),
            ..article(spenders)
        };
        let (counted, slow, low) = drained(s);
        let (blind, ..) = drained(Setup {
            headers: Headers::Never,
            ..s
        });
        assert!(slow, "{spenders:?}: the refill halves");
        assert_ne!(low, Some(false), "{spenders:?}: the count comes down");
        assert_eq!(counted.completed, counted.calls);
        assert_eq!(counted.throttled, counted_429s, "{counted:?}");
        assert_eq!(blind.throttled, 8, "{blind:?}");
    }
}

//! Zero configuration on real traffic, on the virtual clock: learning wrappers against servers
//! that differ from the clean case the way real ones do (threads and processes spending one
//! allowance, headers only on 429s, answers that take no token, counts that lie, allowances that
//! change, keys of any size, servers that never limit, two limiters), each beside the right
//! fixed rate. `cargo test --test learn_matrix -- --nocapture --test-threads 1` prints every run.
#![cfg(not(target_arch = "wasm32"))]

use std::rc::Rc;

use odds_gate::core::base::random::{Random, Seeded};
use odds_gate::core::gate::action::End;
use odds_gate::core::gate::store_link::StoreSettings;
use odds_gate::core::gates::profile::{Keeping, Profile};
use odds_gate::core::gates::Gates;
use odds_gate::core::parse::feedback::Feedback;
use odds_gate::core::rules::allowance::{Allowance, Rate};
use odds_gate::core::rules::budget::RefillingConfig;
use odds_gate::core::rules::policy::{Reason, RetryPolicy};
use odds_gate::core::sim::home::{SharedMemory, SimHome};
use odds_gate::core::sim::server::{
    Allowances, Arrival, Counts, Headers, Limiter, Quirks, Reply, Server,
};
use odds_gate::core::sim::world::{SimCall, World};
use odds_gate::core::Millis;

/// Who spends the allowance.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Spenders {
    /// One thread of one process.
    One,
    /// Threads of one process, sharing memory.
    Threads(usize),
    /// Processes sharing a store.
    Fleet(usize),
}

/// One row of the matrix.
#[derive(Debug, Clone)]
struct Scenario {
    name: &'static str,
    rate: Rate,
    headers: Headers,
    quirks: Quirks,
    spenders: Spenders,
    /// Workers, each fetching `snapshots` one after another (with `total`, that many calls in
    /// all, shared out as evenly as they go).
    workers: usize,
    snapshots: usize,
    total: Option<usize>,
    latency_ms: Millis,
    /// A second limiter: lookups, each from a worker of its own, at time 0, and its allowance.
    lookups: Option<(usize, Rate)>,
    /// `maxWaitMs` of the wrappers.
    max_wait_ms: Option<Millis>,
    /// `retry.maxAttempts` of the wrappers.
    max_attempts: u32,
    /// The first process's random seed (the next ones' are 100 apart; the server's failures
    /// at random draw from it too).
    seed: u64,
    /// How the server fails besides its quirks.
    failing: Failing,
    /// What the virtual clock measures, rounded up (to a tenth of a percent, a hundredth of
    /// the ratio): the share of attempts that are 429s, and the wall time over the allowance's
    /// floor (over the fixed rate's time where the allowance sets no floor).
    bounds: (f64, f64),
    /// The share of 429s over the last [`TAIL`] attempts, at most (a workload's steady state).
    tail_429: Option<f64>,
    /// Whether the wrappers retry (`retry: false` otherwise).
    retry: bool,
    /// Requests reach the server up to this long after they went (see [`World::reach_ms`]).
    reach_ms: Millis,
}

impl Scenario {
    fn new(name: &'static str, burst: f64, per_second: f64) -> Scenario {
        Scenario {
            name,
            rate: Rate::new(burst, per_second).unwrap(),
            headers: Headers::Always,
            quirks: Quirks::default(),
            spenders: Spenders::One,
            workers: 8,
            snapshots: 8,
            total: None,
            latency_ms: 20.0,
            lookups: None,
            max_wait_ms: None,
            max_attempts: 10,
            seed: 1,
            failing: Failing::default(),
            bounds: (0.0, 0.0),
            tail_429: None,
            retry: true,
            reach_ms: 0.0,
        }
    }
}

/// How a server that is not down for good fails: each attempt a 503 (no `Retry-After`, no
/// counts, no token) with probability `at_random`, and every attempt within `down` (from,
/// until).
#[derive(Debug, Clone, Copy, Default)]
struct Failing {
    at_random: f64,
    down: Option<(Millis, Millis)>,
}

impl Failing {
    /// `server` failing so, drawing from `seed`.
    fn wrap(self, mut server: Allowances, seed: u64) -> Box<dyn Server> {
        let mut random = Seeded::new(seed);
        let latency = server.latency_ms;
        Box::new(move |now: Millis, attempt: &Arrival| {
            let down = self
                .down
                .is_some_and(|(from, until)| (from..until).contains(&now));
            if down || random.unit() < self.at_random {
                let feedback = Feedback::default();
                return Reply::Read {
                    status: 503,
                    feedback,
                    latency,
                };
            }
            server.reply(now, attempt)
        })
    }
}

/// What a run gave.
#[derive(Debug, Clone)]
struct Outcome {
    attempts: usize,
    throttled: usize,
    completed: usize,
    calls: usize,
    /// Attempts sent in the run's first second.
    first_second: usize,
    /// Attempts sent while the server was down (see [`Failing::down`]).
    while_down: usize,
    /// When the first attempt that was answered with a 200 went.
    first_ok_ms: Millis,
    /// When the last snapshot was done.
    done_ms: Millis,
    /// When the last lookup was done.
    lookups_done_ms: Millis,
    /// 429s among the last [`TAIL`] attempts (all of them when fewer).
    tail_rejected: usize,
    /// When the last call refused for `maxWaitMs` was refused.
    refused_ms: Millis,
    /// Calls refused for `maxWaitMs` within a second of being made.
    refused_at_once: usize,
    /// When each call delivered.
    delivered: Vec<Millis>,
}

/// The attempts a sustained share of 429s is taken over: the run's last this many.
const TAIL: usize = 800;

impl Outcome {
    fn share_429(&self) -> f64 {
        self.throttled as f64 / self.attempts.max(1) as f64
    }

    /// The share of 429s among the last [`TAIL`] attempts.
    fn tail_share_429(&self) -> f64 {
        self.tail_rejected as f64 / self.attempts.clamp(1, TAIL) as f64
    }

    /// Attempts, 429s and calls done, as a row prints them.
    fn counts(&self) -> String {
        let tail = match self.attempts > TAIL {
            true => format!(" (last {TAIL}: {:.1} %)", 100.0 * self.tail_share_429()),
            false => String::new(),
        };
        format!(
            "{:>4} attempts, {:>3} 429s ({:>4.1} %){tail}, {}/{} done",
            self.attempts,
            self.throttled,
            100.0 * self.share_429(),
            self.completed,
            self.calls
        )
    }
}

fn run(s: &Scenario, allowance: Allowance) -> Outcome {
    let processes = match s.spenders {
        Spenders::One => 1,
        Spenders::Threads(n) | Spenders::Fleet(n) => n,
    };
    let shared_memory = SharedMemory::default();
    let mut all = Vec::new();
    let mut wrappers = Vec::new();
    for p in 0..processes {
        let seed = s.seed + 100 * p as u64;
        let home = match s.spenders {
            Spenders::Threads(_) => SimHome::sharing(seed, p as u32 + 1, shared_memory.clone()),
            _ => SimHome::alone(seed),
        };
        let mut gates = Gates::new(Box::new(home));
        let keeping = match s.spenders {
            Spenders::Fleet(_) => Keeping::Store(gates.store("fake", StoreSettings::DEFAULT)),
            Spenders::Threads(_) => Keeping::Memory { threads: true },
            Spenders::One => Keeping::Memory { threads: false },
        };
        wrappers.push(gates.wrapper(Profile {
            allowance,
            budget: s.retry.then_some(RefillingConfig::DEFAULT),
            keeping,
            policy: s.retry.then(|| {
                Rc::new(RetryPolicy {
                    max_attempts: s.max_attempts,
                    ..RetryPolicy::default()
                })
            }),
            max_wait_ms: s.max_wait_ms,
            max_waiting: None,
            reports_wait: false,
            typed_errors: false,
            spread: None,
        }));
        all.push(gates);
    }
    let mut limiters = Vec::new();
    if let Some((_, rate)) = s.lookups {
        limiters.push(Limiter {
            name: Some("events".into()),
            path: "/lookup/".into(),
            rate,
        });
    }
    limiters.push(Limiter {
        name: s.lookups.map(|_| "snapshot".into()),
        path: String::new(),
        rate: s.rate,
    });
    let mut server = Allowances::new(limiters, 1_000.0);
    server.headers = s.headers;
    server.latency_ms = s.latency_ms;
    server.quirks = s.quirks;
    let mut world = World::new(all, s.failing.wrap(server, s.seed));
    world.store.latency = 1.0;
    world.reach_ms = s.reach_ms;
    let get = |worker: usize, url: String| {
        let p = worker % processes;
        SimCall::get(p, wrappers[p], "key", &url)
    };
    let mut snapshots = Vec::new();
    for w in 0..s.workers {
        let url = |n: usize| format!("http://api/v1/events/e{w}-{n}/odds/snapshot");
        let mine = match s.total {
            Some(total) => total / s.workers + usize::from(w < total % s.workers),
            None => s.snapshots,
        };
        if mine == 0 {
            continue;
        }
        let mut index = world.start_at(0.0, get(w, url(0)));
        snapshots.push(index);
        for n in 1..mine {
            index = world.start_after(index, get(w, url(n)));
            snapshots.push(index);
        }
    }
    let mut lookups = Vec::new();
    for i in 0..s.lookups.map_or(0, |(n, _)| n) {
        let url = format!("http://api/v1/lookup/l{i}");
        lookups.push(world.start_at(0.0, get(s.workers + i, url)));
    }
    world.run();
    let done = |calls: &[usize]| {
        calls
            .iter()
            .filter_map(|i| world.log.settled.get(i).map(|(at, _)| *at))
            .fold(0.0, f64::max)
    };
    let completed = world
        .log
        .settled
        .values()
        .filter(|(_, end)| *end == End::Deliver)
        .count();
    let sent: Vec<_> = world.log.sent.iter().filter(|s| !s.probe).collect();
    let first_second = sent.iter().filter(|s| s.at < 1_000.0).count();
    let (from, until) = s.failing.down.unwrap_or_default();
    let while_down = sent
        .iter()
        .filter(|s| (from..until).contains(&s.at))
        .count();
    let first_ok_ms = sent
        .iter()
        .find(|s| s.status == Some(200))
        .map_or(Millis::INFINITY, |s| s.at);
    let is_429 = |s: &&&odds_gate::core::sim::world::Sent| s.status == Some(429);
    let (attempts, throttled) = (sent.len(), sent.iter().filter(is_429).count());
    let tail_rejected = sent.iter().rev().take(TAIL).filter(is_429).count();
    Outcome {
        attempts,
        throttled,
        completed,
        calls: snapshots.len() + lookups.len(),
        first_second,
        while_down,
        first_ok_ms,
        done_ms: done(&snapshots),
        lookups_done_ms: done(&lookups),
        tail_rejected,
        refused_ms: world
            .log
            .settled
            .values()
            .filter(|(_, end)| matches!(end, End::Abandoned { abandoned, .. } if abandoned.reason == Reason::QueueWait))
            .map(|(at, _)| *at)
            .fold(0.0, f64::max),
        refused_at_once: world
            .log
            .settled
            .values()
            .filter(|(at, end)| *at < 1_000.0 && matches!(end, End::Abandoned { abandoned, .. } if abandoned.reason == Reason::QueueWait))
            .count(),
        delivered: world
            .log
            .settled
            .values()
            .filter(|(_, end)| *end == End::Deliver)
            .map(|(at, _)| *at)
            .collect(),
    }
}

/// The time the allowance itself needs for `calls` requests from a full bucket.
fn floor_ms(calls: usize, rate: Rate) -> Millis {
    ((calls as f64 - rate.burst()).max(0.0) / rate.per_second() * 1000.0).max(1.0)
}

/// The time `s`'s server needs for its calls: those that take a token, at the allowance (from
/// the end of an outage, which leaves the bucket full), and at the new one after a change.
fn scenario_floor_ms(s: &Scenario) -> Millis {
    let calls = s
        .total
        .unwrap_or(s.workers * s.snapshots)
        .saturating_sub(s.quirks.missing_first as usize);
    let Some((at, next)) = s.quirks.change else {
        return s.quirks.outage_until.unwrap_or(0.0) + floor_ms(calls, s.rate);
    };
    let by_change = s.rate.burst() + s.rate.per_second() * at / 1000.0;
    if calls as f64 <= by_change {
        return floor_ms(calls, s.rate);
    }
    at + (calls as f64 - by_change) / next.per_second() * 1000.0
}

/// Runs `s` learning and at the right fixed rate, prints both, and returns them with the
/// learning run's wall time over the floor.
fn measure(s: &Scenario) -> (Outcome, Outcome, f64) {
    let learned = run(s, Allowance::Learned(None));
    let fixed = run(s, Allowance::Fixed(s.rate));
    let floor = scenario_floor_ms(s);
    let ratio = learned.done_ms / floor;
    println!(
        "{:<46} learning: {}, {ratio:>6.2} x floor | fixed: {}, {:.2} x",
        s.name,
        learned.counts(),
        fixed.counts(),
        fixed.done_ms / floor,
    );
    (learned, fixed, ratio)
}

fn rows() -> Vec<Scenario> {
    let mut rows = Vec::new();
    let threads = Scenario {
        spenders: Spenders::Threads(8),
        workers: 8,
        snapshots: 16,
        bounds: (0.0, 1.04),
        ..Scenario::new("8 threads x 16 calls, 5 @ 5/s, counts", 5.0, 5.0)
    };
    rows.push(threads.clone());
    rows.push(Scenario {
        bounds: (0.0, 1.03),
        name: "2 processes through a store, 5 @ 5/s, counts",
        spenders: Spenders::Fleet(2),
        ..threads.clone()
    });
    rows.push(Scenario {
        headers: Headers::OnThrottle,
        workers: 8,
        snapshots: 8,
        bounds: (0.059, 1.10),
        ..Scenario::new("counts on 429s only, 2 @ 2/s, 64 calls", 2.0, 2.0)
    });
    rows.push(Scenario {
        quirks: Quirks {
            missing_first: 16,
            ..Quirks::default()
        },
        bounds: (0.0, 1.06),
        ..Scenario::new("16 404s with counts first, 5 @ 5/s", 5.0, 5.0)
    });
    rows.push(Scenario {
        quirks: Quirks {
            unavailable_every: Some(7),
            ..Quirks::default()
        },
        bounds: (0.0, 1.10),
        ..Scenario::new("one 503 in 7 (no token), 5 @ 5/s", 5.0, 5.0)
    });
    rows.push(Scenario {
        quirks: Quirks {
            counts: Counts::Quota {
                limit: 100_000,
                left: 90_000,
            },
            ..Quirks::default()
        },
        bounds: (0.099, 1.20),
        ..Scenario::new("counts of a monthly quota, limiter 5 @ 5/s", 5.0, 5.0)
    });
    rows.push(Scenario {
        quirks: Quirks {
            counts: Counts::Stuck(100),
            ..Quirks::default()
        },
        bounds: (0.099, 1.20),
        ..Scenario::new("remaining stuck at 100, 5 @ 5/s", 5.0, 5.0)
    });
    rows.push(Scenario {
        headers: Headers::Never,
        quirks: Quirks {
            change: Some((10_000.0, Rate::new(2.0, 2.0).unwrap())),
            ..Quirks::default()
        },
        snapshots: 40,
        bounds: (0.045, 1.16),
        ..Scenario::new("10/s dropping to 2/s at 10 s, Retry-After only", 10.0, 10.0)
    });
    rows.push(Scenario {
        workers: 4,
        snapshots: 4,
        bounds: (0.239, 1.29),
        ..Scenario::new("12 a minute (1 @ 0.2/s), counts", 1.0, 0.2)
    });
    rows.push(Scenario {
        bounds: (0.0, 1.12),
        ..Scenario::new("50 @ 20/s, counts, 64 calls", 50.0, 20.0)
    });
    rows.push(Scenario {
        workers: 200,
        snapshots: 1,
        max_wait_ms: Some(5_000.0),
        bounds: (0.0, 0.67),
        ..Scenario::new("maxWaitMs 5000, 200 calls at 50 @ 20/s", 50.0, 20.0)
    });
    rows.push(Scenario {
        headers: Headers::Never,
        workers: 200,
        snapshots: 1,
        max_wait_ms: Some(5_000.0),
        bounds: (0.276, 0.70),
        ..Scenario::new(
            "maxWaitMs 5000, 200 calls at 50 @ 20/s, Retry-After only",
            50.0,
            20.0,
        )
    });
    rows.push(Scenario {
        headers: Headers::Never,
        workers: 20,
        snapshots: 10,
        bounds: (0.0, 1.40),
        ..Scenario::new("a server that never limits, no headers", 1e6, 1e6)
    });
    rows.push(Scenario {
        headers: Headers::OnThrottle,
        workers: 32,
        total: Some(1000),
        bounds: (0.021, 1.01),
        // The target is 1 %.
        tail_429: Some(0.009),
        ..Scenario::new(
            "sustained: counts on 429s only, 1000 calls by 32, 10 @ 5/s",
            10.0,
            5.0,
        )
    });
    rows.push(Scenario {
        headers: Headers::OnThrottle,
        workers: 32,
        total: Some(1000),
        // The target is 1 % and 1.05 x: missed. Each 429's second of Retry-After lets
        // a full bucket's refill go, so the bound the 429s prove stays at 17.9/s, and the pace
        // climbs from it to a 429 every 3.8 s.
        bounds: (0.023, 1.24),
        tail_429: Some(0.016),
        ..Scenario::new(
            "sustained: counts on 429s only, 1000 calls by 32, 10 @ 20/s",
            10.0,
            20.0,
        )
    });
    rows.push(Scenario {
        headers: Headers::OnThrottle,
        workers: 32,
        total: Some(1000),
        bounds: (0.009, 1.03),
        // The target is 1 %.
        tail_429: Some(0.007),
        ..Scenario::new(
            "sustained: counts on 429s only, 1000 calls by 32, 2 @ 2/s",
            2.0,
            2.0,
        )
    });
    rows.push(Scenario {
        headers: Headers::Never,
        workers: 32,
        total: Some(1000),
        bounds: (0.018, 1.01),
        // The target is 1 %.
        tail_429: Some(0.008),
        ..Scenario::new(
            "sustained: Retry-After only, 1000 calls by 32, 10 @ 5/s",
            10.0,
            5.0,
        )
    });
    rows.push(Scenario {
        workers: 64,
        snapshots: 1,
        bounds: (0.0, 1.07),
        ..Scenario::new("64 calls at once, 50 @ 20/s, counts", 50.0, 20.0)
    });
    rows.push(Scenario {
        workers: 64,
        snapshots: 1,
        latency_ms: 5.0,
        reach_ms: 20.0,
        bounds: (0.0, 1.09),
        ..Scenario::new(
            "64 calls at once, 50 @ 20/s, counts, reaching the server out of order",
            50.0,
            20.0,
        )
    });
    rows.push(Scenario {
        workers: 256,
        snapshots: 1,
        bounds: (0.0, 1.01),
        ..Scenario::new("256 calls at once, 50 @ 20/s, counts", 50.0, 20.0)
    });
    rows.push(Scenario {
        headers: Headers::Never,
        workers: 8,
        snapshots: 1,
        bounds: (0.273, 1.29),
        ..Scenario::new("8 calls at once, Retry-After only, 2 @ 2/s", 2.0, 2.0)
    });
    rows.push(Scenario {
        headers: Headers::OnThrottle,
        workers: 8,
        snapshots: 1,
        bounds: (0.273, 1.29),
        ..Scenario::new("8 calls at once, counts on 429s only, 2 @ 2/s", 2.0, 2.0)
    });
    rows.push(Scenario {
        workers: 64,
        snapshots: 1,
        quirks: Quirks {
            claim: Some((1, 10_000, 9_999)),
            ..Quirks::default()
        },
        bounds: (0.031, 1.05),
        ..Scenario::new(
            "64 calls at once, the first answer claims 9999, 5 @ 5/s",
            5.0,
            5.0,
        )
    });
    rows.push(Scenario {
        headers: Headers::Never,
        workers: 64,
        total: Some(20_000),
        latency_ms: 2.0,
        bounds: (0.0, 1.02),
        ..Scenario::new("a server that never limits, 20,000 calls by 64", 1e6, 1e6)
    });
    rows.push(Scenario {
        lookups: Some((40, Rate::new(10.0, 10.0).unwrap())),
        bounds: (0.019, 1.05),
        ..Scenario::new("two limiters: 40 lookups on 10 @ 10/s", 2.0, 2.0)
    });
    rows
}

/// The lookups of the two-limiter row, over their own floor: measured 1.061.
const LOOKUPS_RATIO: f64 = 1.07;

/// Runs row `name` of [`rows`] and checks it against its bounds.
fn row(name: &str) {
    let s = rows()
        .into_iter()
        .find(|s| s.name == name)
        .expect("a row of that name");
    let (learned, fixed, mut ratio) = measure(&s);
    if s.rate.per_second() >= 1e6 {
        // No floor to speak of: against plain fetch (a rate that never holds a call).
        ratio = learned.done_ms / fixed.done_ms;
    }
    let (max_429, max_ratio) = s.bounds;
    if s.max_wait_ms.is_some() {
        println!(
            "    {} refused within a second, the last at {:.0} ms (fixed rate: {}, {:.0} ms)",
            learned.refused_at_once, learned.refused_ms, fixed.refused_at_once, fixed.refused_ms
        );
    }
    // Every call completes, but where `maxWaitMs` lets calls go: there, refusals come no
    // later than the wait, and as many calls are served as learning serves within it
    // without a limit (with the counts, as many as at the right fixed rate).
    match s.max_wait_ms {
        Some(wait) => {
            assert!(learned.refused_ms <= wait + 1.0, "{learned:?}");
            let unlimited = run(
                &Scenario {
                    max_wait_ms: None,
                    ..s.clone()
                },
                Allowance::Learned(None),
            );
            let within = unlimited.delivered.iter().filter(|&&at| at <= wait).count();
            assert!(
                learned.completed >= within,
                "{} < {within}",
                learned.completed
            );
            if s.headers == Headers::Always {
                assert!(
                    learned.completed >= fixed.completed,
                    "{learned:?} {fixed:?}"
                );
            }
        }
        None => assert_eq!(learned.completed, learned.calls, "{learned:?}"),
    }
    assert!(learned.share_429() <= max_429, "{learned:?}");
    if let Some(tail) = s.tail_429 {
        assert!(learned.tail_share_429() <= tail, "{learned:?}");
    }
    assert!(ratio <= max_ratio, "{ratio:.3} x");
    if let Some((n, rate)) = s.lookups {
        let lookups = learned.lookups_done_ms / floor_ms(n, rate);
        println!(
            "    lookups done at {:.0} ms: {lookups:.2} x their floor",
            learned.lookups_done_ms
        );
        assert!(lookups <= LOOKUPS_RATIO, "lookups {lookups:.3} x");
    }
}

/// One named test per row of the matrix.
macro_rules! rows {
    ($($test:ident: $name:literal,)*) => {
        $(
            #[test]
            fn $test() {
                row($name);
            }
        )*

        #[test]
        fn every_row_has_its_test() {
            let named = [$($name),*];
            for s in rows() {
                assert!(named.contains(&s.name), "{} has no test", s.name);
            }
        }
    };
}

rows! {
    eight_threads_share_one_estimate: "8 threads x 16 calls, 5 @ 5/s, counts",
    two_processes_share_one_estimate_through_a_store: "2 processes through a store, 5 @ 5/s, counts",
    counts_on_429s_only: "counts on 429s only, 2 @ 2/s, 64 calls",
    answers_that_take_no_token_teach_no_pace_404s: "16 404s with counts first, 5 @ 5/s",
    answers_that_take_no_token_teach_no_pace_503s: "one 503 in 7 (no token), 5 @ 5/s",
    counts_of_a_monthly_quota_are_distrusted: "counts of a monthly quota, limiter 5 @ 5/s",
    a_stuck_remaining_count_is_distrusted: "remaining stuck at 100, 5 @ 5/s",
    an_allowance_that_drops_is_followed_down: "10/s dropping to 2/s at 10 s, Retry-After only",
    a_key_of_twelve_a_minute: "12 a minute (1 @ 0.2/s), counts",
    a_large_burst: "50 @ 20/s, counts, 64 calls",
    max_wait_refuses_no_call_the_right_rate_would_serve: "maxWaitMs 5000, 200 calls at 50 @ 20/s",
    a_server_that_never_limits_is_not_slowed: "a server that never limits, no headers",
    two_limiters_each_at_its_own_pace: "two limiters: 40 lookups on 10 @ 10/s",
    a_count_that_would_release_the_whole_line: "64 calls at once, the first answer claims 9999, 5 @ 5/s",
    max_wait_refuses_at_once_without_counts: "maxWaitMs 5000, 200 calls at 50 @ 20/s, Retry-After only",
    a_server_that_never_limits_is_not_capped: "a server that never limits, 20,000 calls by 64",
    sustained_counts_on_429s_only_5: "sustained: counts on 429s only, 1000 calls by 32, 10 @ 5/s",
    sustained_counts_on_429s_only_2: "sustained: counts on 429s only, 1000 calls by 32, 2 @ 2/s",
    sustained_counts_on_429s_only_20: "sustained: counts on 429s only, 1000 calls by 32, 10 @ 20/s",
    sustained_retry_after_only: "sustained: Retry-After only, 1000 calls by 32, 10 @ 5/s",
    calls_at_once_large_burst_64: "64 calls at once, 50 @ 20/s, counts",
    calls_at_once_out_of_order: "64 calls at once, 50 @ 20/s, counts, reaching the server out of order",
    calls_at_once_large_burst_256: "256 calls at once, 50 @ 20/s, counts",
    eight_at_once_retry_after_only: "8 calls at once, Retry-After only, 2 @ 2/s",
    eight_at_once_counts_on_429s_only: "8 calls at once, counts on 429s only, 2 @ 2/s",
}

/// Allowances of every size, from few callers to many, near and far: with the counts on every
/// answer, and with 429 + `Retry-After` only. Each group (feedback, allowance) with the worst
/// share of 429s and the worst time over the right fixed rate's that the virtual clock measures
/// for it, rounded up (as a row's bounds are).
const GRID: [(Headers, f64, f64, f64, f64); 8] = [
    (Headers::Always, 1.0, 0.5, 0.031, 1.04),
    (Headers::Always, 2.0, 2.0, 0.031, 1.06),
    (Headers::Always, 10.0, 1.0, 0.0, 1.01),
    (Headers::Always, 50.0, 20.0, 0.0, 1.38),
    (Headers::Never, 1.0, 0.5, 0.073, 1.16),
    (Headers::Never, 2.0, 2.0, 0.059, 1.10),
    (Headers::Never, 10.0, 1.0, 0.099, 1.02),
    (Headers::Never, 50.0, 20.0, 0.2, 5.55),
];

#[test]
fn the_grid() {
    let mut missed = Vec::new();
    for (headers, burst, per_second, max_429, max_ratio) in GRID {
        let (mut worst_429, mut worst_ratio) = (0.0f64, 0.0f64);
        for workers in [8, 64, 256] {
            for latency_ms in [0.0, 20.0, 150.0] {
                let s = Scenario {
                    headers,
                    workers,
                    snapshots: (64 / workers).max(2),
                    latency_ms,
                    ..Scenario::new("grid", burst, per_second)
                };
                let learned = run(&s, Allowance::Learned(None));
                let fixed = run(&s, Allowance::Fixed(s.rate));
                let ratio = learned.done_ms / fixed.done_ms;
                println!(
                    "{headers:?} {burst} @ {per_second}/s N={workers:<3} {latency_ms:>3} ms: {}, {ratio:.2} x the fixed rate's time",
                    learned.counts(),
                );
                assert_eq!(learned.completed, learned.calls, "{s:?}");
                worst_429 = worst_429.max(learned.share_429());
                worst_ratio = worst_ratio.max(ratio);
            }
        }
        println!(
            "  worst: {:.1} % 429s, {worst_ratio:.2} x",
            100.0 * worst_429
        );
        if worst_429 > max_429 || worst_ratio > max_ratio {
            missed.push(format!(
                "{headers:?} {burst} @ {per_second}/s: {:.1} % 429s, {worst_ratio:.2} x",
                100.0 * worst_429
            ));
        }
    }
    assert!(missed.is_empty(), "{missed:#?}");
}

/// When the outage's server starts answering: every attempt before is a 503 with no
/// `Retry-After` and no counts that takes no token.
const OUTAGE_MS: Millis = 1_000.0;

/// The seeds the tests of failing servers run: the gate's cooldown is a random draw (and so are
/// the failures of a server that fails at random), so one seed could pass by luck. The bounds
/// are the worst of them, or of their mean.
const SEEDS: std::ops::RangeInclusive<u64> = 1..=20;

/// `s` with each seed, learning and at the right fixed rate.
fn seeded(s: &Scenario) -> Vec<(Allowance, Outcome)> {
    let mut runs = Vec::new();
    for seed in SEEDS {
        let s = Scenario { seed, ..s.clone() };
        for allowance in [Allowance::Learned(None), Allowance::Fixed(s.rate)] {
            runs.push((allowance, run(&s, allowance)));
        }
    }
    runs
}

/// The runs of `allowance`'s kind among `runs`.
fn of(runs: &[(Allowance, Outcome)], learning: bool) -> impl Iterator<Item = &Outcome> {
    runs.iter()
        .filter(move |(a, _)| matches!(a, Allowance::Learned(_)) == learning)
        .map(|(_, o)| o)
}

/// 64 calls at once, with the default retries (3 attempts), on 2 @ 2/s while the API is down
/// for its first second, spent by `spenders`: for each seed, a learning run and one at the
/// right fixed rate.
fn outage(spenders: Spenders) -> Vec<(Allowance, Outcome)> {
    let runs = seeded(&Scenario {
        quirks: Quirks {
            outage_until: Some(OUTAGE_MS),
            ..Quirks::default()
        },
        spenders,
        workers: 64,
        snapshots: 1,
        max_attempts: RetryPolicy::default().max_attempts,
        ..Scenario::new("an outage for the first second, 64 calls at once", 2.0, 2.0)
    });
    for learning in [true, false] {
        println!(
            "outage, {spenders:?}, {}: at most {} requests in the first second, {} attempts, {} of 64 done, {:.2} x the floor from the first 200",
            if learning { "learning" } else { "fixed" },
            of(&runs, learning).map(|o| o.first_second).max().unwrap_or(0),
            of(&runs, learning).map(|o| o.attempts).max().unwrap_or(0),
            of(&runs, learning).map(|o| o.completed).min().unwrap_or(0),
            of(&runs, learning).map(restored).fold(0.0, f64::max),
        );
    }
    runs
}

/// How fast an outage's run went once the server answered: from the first 200 to the last
/// call done, over the time the allowance needs for all 64 calls from a full bucket.
fn restored(o: &Outcome) -> f64 {
    (o.done_ms - o.first_ok_ms) / floor_ms(o.calls, Rate::new(2.0, 2.0).unwrap())
}

/// Checks an outage's runs: every call completes, at most `first_second` requests go in the
/// first second (no answer yet: the gate holds after each failure, so the calls do not go one
/// after another into the outage), and at most `attempts` in all (retries spent in the outage).
fn outage_cooldown(spenders: Spenders, first_second: usize, attempts: usize) {
    for (allowance, o) in outage(spenders) {
        assert_eq!(o.completed, 64, "{allowance:?} {o:?}");
        assert!(o.first_second <= first_second, "{allowance:?} {o:?}");
        assert!(o.attempts <= attempts, "{allowance:?} {o:?}");
    }
}

// Before the gate held on failures (the seed-1 run): learning sent 50 requests in the first
// second (one after each 503, 20 ms apart), 115 attempts, and 63 of 64 calls completed; 15
// over 8 threads and 33 over 2 processes. The fixed rate sent 3.

// The bounds below are the worst over the seeds, as measured.

#[test]
fn an_outage_before_any_answer_holds_the_gate() {
    outage_cooldown(Spenders::One, 3, 69);
}

#[test]
fn an_outage_holds_eight_threads_as_one_gate() {
    outage_cooldown(Spenders::Threads(8), 5, 74);
}

#[test]
fn an_outage_holds_two_processes_through_the_store() {
    outage_cooldown(Spenders::Fleet(2), 3, 69);
}

#[test]
fn the_first_success_after_an_outage_restores_full_speed() {
    // The hold is a cooldown that runs out, not a slower pace: once the server answers, the
    // calls go at the allowance. Measured: at most 1.031 x (one thread), 1.098 x (8 threads),
    // 1.051 x (2 processes), learning or fixed.
    for (spenders, bound) in [
        (Spenders::One, 1.04),
        (Spenders::Threads(8), 1.10),
        (Spenders::Fleet(2), 1.06),
    ] {
        for (allowance, o) in outage(spenders) {
            assert!(restored(&o) <= bound, "{spenders:?} {allowance:?} {o:?}");
        }
    }
}

/// 8 workers x 16 snapshots on 5 @ 5/s (counts), the server failing as `failing` says, spent
/// by `spenders`, over the seeds: learning's and the right fixed rate's mean time over the
/// floor, and mean requests while the server was down, in that order. Every call completes.
fn failing(spenders: Spenders, failing: Failing) -> [(f64, f64); 2] {
    let s = Scenario {
        spenders,
        snapshots: 16,
        failing,
        ..Scenario::new("failing", 5.0, 5.0)
    };
    let runs = seeded(&s);
    let floor = scenario_floor_ms(&s);
    [true, false].map(|learning| {
        assert!(of(&runs, learning).all(|o| o.completed == o.calls));
        let n = SEEDS.count() as f64;
        let ratio = of(&runs, learning).map(|o| o.done_ms / floor).sum::<f64>() / n;
        let down = of(&runs, learning).map(|o| o.while_down as f64).sum::<f64>() / n;
        println!(
            "{failing:?}, {spenders:?}, {}: {ratio:.2} x the floor, {down:.1} requests while down, on average",
            if learning { "learning" } else { "fixed" },
        );
        (ratio, down)
    })
}

// Without the cooldown (measured with it taken out): one answer in 7 a 503 at random, 1.09 x the
// floor learning and 1.23 x fixed on one thread, 1.28 x and 1.28 x on 8 threads, 1.14 x and
// 1.24 x on 2 processes; the server down from 5 s to 8 s, 15 requests while down (at the
// allowance's 5/s), 14 learning.

#[test]
fn a_server_that_fails_now_and_then_is_not_held() {
    // Failures at random come two in a row every 49 requests: only a third in a row holds.
    // Measured: 1.09 x learning and 1.22 x fixed (one thread), 1.34 x and 1.26 x (8 threads),
    // 1.19 x and 1.24 x (2 processes).
    let at_random = Failing {
        at_random: 1.0 / 7.0,
        down: None,
    };
    for (spenders, bounds) in [
        (Spenders::One, [1.10, 1.23]),
        (Spenders::Threads(8), [1.34, 1.26]),
        (Spenders::Fleet(2), [1.19, 1.24]),
    ] {
        let means = failing(spenders, at_random);
        for ((ratio, _), bound) in means.into_iter().zip(bounds) {
            assert!(ratio <= bound, "{spenders:?}: {means:?}");
        }
    }
}

#[test]
fn an_outage_after_answers_holds_the_gate_from_its_third_failure() {
    // Measured: 8.3 requests while down learning and 8.35 fixed (one thread), 8.8 and 8.85 (2
    // processes). Over 8 threads each thread counts the failures its own requests meet, and a
    // 3 s outage gives each fewer than three: 14 and 15, as without the cooldown.
    let down = Failing {
        at_random: 0.0,
        down: Some((5_000.0, 8_000.0)),
    };
    for (spenders, bounds) in [
        (Spenders::One, [8.3, 8.35]),
        (Spenders::Fleet(2), [8.8, 8.85]),
    ] {
        let means = failing(spenders, down);
        for ((_, down), bound) in means.into_iter().zip(bounds) {
            assert!(down <= bound, "{spenders:?}: {means:?}");
        }
    }
}

#[test]
fn a_first_request_that_hangs_holds_its_route_a_second() {
    // Six calls at once on a learning wrapper, 5 @ 5/s with counts; the first request never
    // gets an answer. The other five wait neither for its attempt's time limit (30 s) nor, with
    // retry: false, for ever: the opening's token comes back in a second, and the route's
    // scout, overdue, lets the calls behind it go.
    for retry in [true, false] {
        let s = Scenario {
            workers: 6,
            snapshots: 1,
            retry,
            quirks: Quirks {
                hang_first: 1,
                ..Quirks::default()
            },
            ..Scenario::new("hangs", 5.0, 5.0)
        };
        let learned = run(&s, Allowance::Learned(None));
        let mut delivered = learned.delivered.clone();
        delivered.sort_by(f64::total_cmp);
        let fifth = delivered.get(4).copied().unwrap_or(Millis::INFINITY);
        // 1,080 ms either way (31,193 ms, and never, before the scout went overdue).
        assert_eq!(fifth, 1_080.0, "retry {retry}");
    }
}

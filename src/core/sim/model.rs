//! The article's virtual-clock model, run on the production gates: every worker's call goes
//! through [`Gates`] exactly as `createFetch`'s do, driven by the [`World`], against a
//! simulated server (a token bucket with the same allowance, `Retry-After` on every 429). Beyond
//! the article: learning (the gates are not told the allowance), headers on every answer or on
//! 429s only, a second limiter, and several processes sharing a store or several threads
//! sharing memory; lanes of workers on the one shared gate ([`lanes`]); workers polling the
//! same snapshots through the core's cache (`cache`, `polls`).

use std::cell::RefCell;
use std::rc::Rc;

use super::home::{SharedMemory, SimHome};
use super::lanes::{self, Group, LaneReport, SimLane};
use super::month::{Metered, MonthReport, SimQuota};
use super::server::{Allowances, Headers, Limiter, Server};
use super::world::{Served, SimCall, World};
use crate::core::gate::action::{End, Event};
use crate::core::gate::store_link::StoreSettings;
use crate::core::gates::home::Home;
use crate::core::gates::ids::WrapperId;
use crate::core::gates::profile::{Keeping, Profile};
use crate::core::gates::scope::Scope;
use crate::core::gates::Gates;
use crate::core::rules::allowance::{at_least, positive, Allowance, ConfigError, Rate};
use crate::core::rules::batch::Batch;
use crate::core::rules::budget::BatchBudget;
use crate::core::rules::cache::CacheConfig;
use crate::core::rules::learn::Estimate;
use crate::core::rules::policy::RetryPolicy;
use crate::core::rules::ranges::{SIM_ATTEMPTS, SIM_CALLS};
use crate::core::Millis;

/// How workers are coordinated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coordination {
    /// Each worker honours `Retry-After` on its own: a gate per worker, which no other shares.
    Independent,
    /// Every attempt of every worker passes one gate.
    Shared,
    /// Worker `i` uses gate `i % n`: n processes with a gate each.
    Separate(u32),
    /// Worker `i` is in process `i % n`, and the processes' gates share a store.
    Fleet(u32),
    /// Worker `i` is in thread `i % n` of one process, whose threads share memory.
    Threads(u32),
}

impl Coordination {
    /// What `simulate()` was asked for: one `shared` gate (the default with `lanes`, which wait
    /// in its queue), a gate per process of `separate` ones, processes sharing a store or
    /// threads sharing memory (`[separate, processes, threads]`), at most one of them; else
    /// a gate per worker. The error says what to leave out.
    pub fn asked(
        shared: Option<bool>,
        [separate, processes, threads]: [Option<u32>; 3],
        lanes: bool,
        lookups: bool,
    ) -> Result<Coordination, &'static str> {
        let split = separate.is_some() || processes.is_some() || threads.is_some();
        if lanes && (shared == Some(false) || split) {
            return Err(
                "`lanes` wait in one shared gate's queue: leave out `shared: false`, \
                 `separateGates`, `processes` and `threads`",
            );
        }
        if lanes && lookups {
            return Err("Choose one of `lanes` and `lookups`");
        }
        let shared = shared.unwrap_or(lanes);
        let chosen = [
            shared,
            separate.is_some(),
            processes.is_some(),
            threads.is_some(),
        ];
        if chosen.iter().filter(|&&c| c).count() > 1 {
            return Err(
                "Choose one of `shared`, `separateGates`, `processes` and `threads`: one gate, \
                 one per process, processes sharing a store, or threads sharing memory",
            );
        }
        Ok(match (shared, separate, processes, threads) {
            (true, ..) => Coordination::Shared,
            (_, Some(n), ..) => Coordination::Separate(n),
            (_, _, Some(n), _) => Coordination::Fleet(n),
            (.., Some(n)) => Coordination::Threads(n),
            _ => Coordination::Independent,
        })
    }
}

/// A scenario. [`SimOptions::default`] is the article's: eight workers, burst 2, 2 per second,
/// `Retry-After: 1`, independent retries, ten attempts each, no retry budget.
#[derive(Debug, Clone, PartialEq)]
pub struct SimOptions {
    /// Logical workers, each wanting one snapshot, all starting at time 0 (the wrapper's own:
    /// none is allowed when there are lanes).
    pub workers: u32,
    /// The server's allowance, and the gates' (configured to match it).
    pub rate: Rate,
    /// The server's `Retry-After` on every 429, in milliseconds.
    pub retry_after_ms: Millis,
    /// Who decides when attempts go.
    pub coordination: Coordination,
    /// The server rejects everything: a persistent failure.
    pub always_reject: bool,
    /// Attempts per worker, the first included.
    pub max_attempts: u32,
    /// Retries allowed across all workers for the whole batch (not replenished).
    pub retry_budget: Option<u32>,
    /// The gates are not told the allowance: they learn it from the responses.
    pub learn: bool,
    /// Where the server sends `X-RateLimit-Limit` and `-Remaining` (and, with a second
    /// limiter, `X-RateLimit-Bucket`).
    pub headers: Headers,
    /// Snapshots each worker fetches, one after another.
    pub snapshots: u32,
    /// From a request's arrival at the server to its response's return, in milliseconds.
    pub latency_ms: Millis,
    /// A second limiter of the key, for event lookups (`GET /v1/events/{id}`).
    pub lookups: Option<Lookups>,
    /// A store operation's round trip, in milliseconds (with [`Coordination::Fleet`]).
    pub store_latency_ms: Millis,
    /// Lanes of workers beside the wrapper's own, on the gate of the first worker's key and
    /// process (the bindings take them with [`Coordination::Shared`] only: one gate).
    pub lanes: Vec<SimLane>,
    /// Times each of the wrapper's own workers fetches its snapshots.
    pub polls: u32,
    /// Poll `i` starts at `i x poll_every_ms`, or when the one before ends if later (with a
    /// quota and left out: the polls spread evenly over its periods).
    pub poll_every_ms: Millis,
    /// With a cache (`createFetch({ cache })`, in each process): how long the server's
    /// snapshots are fresh, and kept stale. The wrapper's own workers then fetch the same
    /// snapshots.
    pub cache: Option<SimCache>,
    /// The key's monthly credits (`quota`): the server counts them, the run ends with their
    /// period, and the gates spread them when asked.
    pub quota: Option<SimQuota>,
}

/// `simulate({ cache })`'s cache.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimCache {
    /// How long the server's snapshots are fresh (its `ttl_seconds`, in ms; 0: calls in
    /// flight share one request and nothing is kept fresh).
    pub ttl_ms: Millis,
    /// How long past that a kept entry answers a call the gate would hold (a cooldown, no
    /// credit) or refuse (a spent quota), as `cache.staleForMs` (0: never).
    pub stale_for_ms: Millis,
}

/// Event lookups on a limiter of their own, beside the snapshots.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Lookups {
    /// Lookups made, one per worker of their own, all at time 0.
    pub calls: u32,
    /// Their limiter's allowance.
    pub rate: Rate,
}

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions {
            workers: 8,
            rate: Rate::ARTICLE,
            retry_after_ms: 1000.0,
            coordination: Coordination::Independent,
            always_reject: false,
            max_attempts: 10,
            retry_budget: None,
            learn: false,
            headers: Headers::Never,
            snapshots: 1,
            latency_ms: 0.0,
            lookups: None,
            store_latency_ms: 1.0,
            lanes: Vec::new(),
            polls: 1,
            poll_every_ms: 0.0,
            cache: None,
            quota: None,
        }
    }
}

impl SimOptions {
    /// Checks the numbers a caller supplied; each error names its field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let (range, expected) = match self.lanes.is_empty() {
            true => (SIM_CALLS, "an integer from 1 to 100000"),
            false => (SIM_CALLS.from_zero(), "an integer from 0 to 100000"),
        };
        let workers = f64::from(self.workers);
        if range.holds(workers).is_none() {
            return Err(ConfigError::OutOfRange {
                field: "workers",
                expected,
                got: workers,
            });
        }
        at_least(
            "retryAfterMs",
            self.retry_after_ms,
            0.0,
            "a finite number >= 0",
        )?;
        if SIM_ATTEMPTS.holds(self.max_attempts.into()).is_none() {
            return Err(ConfigError::OutOfRange {
                field: "maxAttempts",
                expected: "an integer from 1 to 1000",
                got: self.max_attempts.into(),
            });
        }
        match self.coordination {
            Coordination::Separate(n) => positive("separateGates", n.into()).map(|_| ())?,
            Coordination::Fleet(n) => positive("processes", n.into()).map(|_| ())?,
            Coordination::Threads(n) => positive("threads", n.into()).map(|_| ())?,
            _ => {}
        }
        if let Some(lookups) = self.lookups {
            if f64::from(lookups.calls) > SIM_CALLS.max {
                return Err(ConfigError::OutOfRange {
                    field: "lookups",
                    expected: "an integer from 0 to 100000",
                    got: lookups.calls.into(),
                });
            }
        }
        at_least(
            "storeLatencyMs",
            self.store_latency_ms,
            0.0,
            "a finite number >= 0",
        )?;
        let calls = workers * f64::from(self.snapshots);
        if self.snapshots == 0 || calls > SIM_CALLS.max {
            return Err(ConfigError::OutOfRange {
                field: "snapshots",
                expected: "an integer from 1 with workers x snapshots at most 100000",
                got: self.snapshots.into(),
            });
        }
        let calls = calls * f64::from(self.polls);
        if self.polls == 0 || calls > SIM_CALLS.max {
            return Err(ConfigError::OutOfRange {
                field: "polls",
                expected: "an integer from 1 with workers x snapshots x polls at most 100000",
                got: self.polls.into(),
            });
        }
        at_least(
            "pollEveryMs",
            self.poll_every_ms,
            0.0,
            "a finite number >= 0",
        )?;
        if let Some(cache) = self.cache {
            at_least("cache.ttlMs", cache.ttl_ms, 0.0, "a finite number >= 0")?;
            at_least(
                "cache.staleForMs",
                cache.stale_for_ms,
                0.0,
                "a finite number >= 0",
            )?;
        }
        for lane in &self.lanes {
            lane.validate()?;
        }
        let split = matches!(
            self.coordination,
            Coordination::Fleet(_) | Coordination::Threads(_)
        );
        if split && self.quota.as_ref().is_some_and(|q| q.spread.is_some()) {
            return Err(ConfigError::Unsupported {
                field: "quota.spread",
                with: "is for one process for now: not with `processes` or `threads`",
            });
        }
        let laned: f64 = (self.lanes.iter())
            .map(|l| f64::from(l.workers) * f64::from(l.snapshots))
            .sum();
        if calls + laned > SIM_CALLS.max {
            return Err(ConfigError::OutOfRange {
                field: "lanes",
                expected: "lanes whose workers x snapshots, with the run's own, come to at most \
                           100000 calls",
                got: calls + laned,
            });
        }
        at_least("latencyMs", self.latency_ms, 0.0, "a finite number >= 0")?;
        Ok(())
    }
}

/// One attempt that reached the server, or (with `cache`) a call the cache answered.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Attempt {
    /// Virtual time of the attempt.
    pub at: Millis,
    /// Which worker made it.
    pub worker: u32,
    /// 200 or 429.
    pub status: u16,
    /// How the cache answered it, if it did (no request: not one of the attempts).
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub cache: Option<Served>,
}

/// What a run produced; the bindings hand it to JavaScript in the article's field names.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize),
    serde(rename_all = "camelCase")
)]
pub struct SimReport {
    /// Attempts that reached the server.
    pub attempts: usize,
    /// Of those, throttled (429).
    pub throttled: usize,
    /// The same count in the article's word, so its assertions run unchanged.
    pub rejected: usize,
    /// Workers that got their snapshot.
    pub completed: usize,
    /// Workers that gave up (attempts or retry budget spent): never counted as success.
    pub abandoned: usize,
    /// Time of the last attempt.
    pub last_attempt_ms: Millis,
    /// Every attempt, in order.
    pub timeline: Vec<Attempt>,
    /// A learning run's estimates as they changed (the first gate's), in order.
    #[cfg_attr(feature = "serde", serde(serialize_with = "estimates"))]
    pub learned: Vec<(Millis, Estimate)>,
    /// With lookups: attempts and 429s of each limiter, and when its last call was
    /// done (snapshots first, then lookups).
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Vec::is_empty"))]
    pub limiters: Vec<LimiterReport>,
    /// With lanes: each lane's figures, the wrapper's own workers first (if any).
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Vec::is_empty"))]
    pub lanes: Vec<LaneReport>,
    /// With `cache`: calls a fresh entry answered.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub hits: Option<u64>,
    /// With `cache`: calls that joined a request in flight.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub coalesced: Option<u64>,
    /// With `cache`: calls a kept entry past its lifetime answered, as the gate would have held
    /// or refused them.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub stale: Option<u64>,
    /// With `cache`: requests it saved (`hits + coalesced + stale`).
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub requests_saved: Option<u64>,
    /// With `quota`: how the month's credits went.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub quota: Option<MonthReport>,
}

/// A learning run's estimates for JavaScript: `{ at, burst, perSecond, atLeast, confidence }`.
#[cfg(feature = "serde")]
fn estimates<S: serde::Serializer>(
    learned: &[(Millis, Estimate)],
    s: S,
) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeStruct;
    struct At<'a>(Millis, &'a Estimate);
    impl serde::Serialize for At<'_> {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let At(at, e) = *self;
            let mut entry = s.serialize_struct("Estimated", 5)?;
            entry.serialize_field("at", &at)?;
            entry.serialize_field("burst", &e.burst)?;
            entry.serialize_field("perSecond", &e.per_second)?;
            entry.serialize_field("atLeast", &e.at_least)?;
            entry.serialize_field("confidence", &e.confidence)?;
            entry.end()
        }
    }
    s.collect_seq(learned.iter().map(|(at, estimate)| At(*at, estimate)))
}

/// One limiter's share of a run.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize),
    serde(rename_all = "camelCase")
)]
pub struct LimiterReport {
    /// Its name.
    pub name: String,
    /// Attempts it answered.
    pub attempts: u64,
    /// Of those, 429s.
    pub throttled: u64,
    /// When its last call was done (settled).
    pub done_ms: Millis,
}

/// Where a worker's calls go: its process and its key.
fn placement(options: &SimOptions, worker: u32) -> (usize, String) {
    let key = |k: u32| format!("key-{k}");
    match options.coordination {
        Coordination::Independent => (0, key(worker)),
        Coordination::Shared => (0, key(0)),
        Coordination::Separate(n) => (0, key(worker % n)),
        Coordination::Fleet(n) | Coordination::Threads(n) => ((worker % n) as usize, key(0)),
    }
}

/// Runs a scenario to the end: every worker's calls go through the production gates, one
/// [`Gates`] per coordinating process, against a server with the same allowance.
pub fn simulate(options: &SimOptions) -> Result<SimReport, ConfigError> {
    options.validate()?;
    let processes = match options.coordination {
        Coordination::Fleet(n) | Coordination::Threads(n) => n as usize,
        _ => 1,
    };
    let shared_memory: SharedMemory = Rc::default();
    let keeping = match options.coordination {
        Coordination::Fleet(_) => Keeping::Store(0),
        Coordination::Threads(_) => Keeping::Memory { threads: true },
        _ => Keeping::Memory { threads: false },
    };
    let policy = Rc::new(RetryPolicy {
        max_attempts: options.max_attempts,
        time_budget_ms: Millis::INFINITY,
        attempt_timeout_ms: Millis::INFINITY,
        ..RetryPolicy::default()
    });
    let profile = Profile {
        allowance: match options.learn {
            true => Allowance::Learned(None),
            false => Allowance::Fixed(options.rate),
        },
        budget: None,
        keeping,
        policy: Some(policy),
        max_wait_ms: None,
        max_waiting: None,
        reports_wait: false,
        typed_errors: false,
        spread: options.quota.as_ref().and_then(|q| q.spread.clone()),
    };
    let mut all = Vec::with_capacity(processes);
    let mut wrappers = Vec::with_capacity(processes);
    for p in 0..processes {
        let seed = 1 + 1_000 * p as u64;
        let home: Box<dyn Home> = match options.coordination {
            Coordination::Threads(_) => {
                Box::new(SimHome::sharing(seed, p as u32 + 1, shared_memory.clone()))
            }
            _ => Box::new(SimHome::alone(seed)),
        };
        let mut gates = Gates::new(home);
        let settings = StoreSettings {
            timeout_ms: 1_000.0 + 10.0 * options.store_latency_ms,
            ..StoreSettings::DEFAULT
        };
        if keeping == Keeping::Store(0) {
            gates.store("simulated", settings);
        }
        wrappers.push(gates.wrapper(profile.clone()));
        all.push(gates);
    }
    let named = options.lookups.is_some();
    let mut limiters = Vec::new();
    if let Some(lookups) = options.lookups {
        limiters.push(Limiter {
            name: Some("events".into()),
            path: "/lookup/".into(),
            rate: lookups.rate,
        });
    }
    limiters.push(Limiter {
        name: named.then(|| "snapshot".into()),
        path: String::new(),
        rate: options.rate,
    });
    let mut server = Allowances::new(limiters, options.retry_after_ms);
    server.headers = options.headers;
    server.always_reject = options.always_reject;
    server.latency_ms = options.latency_ms;
    // The article's workers defer the gate only before a retry: the answer to a call's last
    // attempt holds nobody (createFetch itself honours every Retry-After).
    server.quiet_from = Some(options.max_attempts);
    // Lanes on the gate of the first worker's key, in its process.
    let (lane_process, lane_key) = placement(options, 0);
    let lane_wrappers: Vec<WrapperId> = (options.lanes.iter())
        .map(|l| all[lane_process].lane(profile.clone(), (l.weight, false), l.name.as_deref()))
        .collect();
    let (server, meter): (Box<dyn Server>, _) = match &options.quota {
        Some(q) => {
            let metered = Metered::new(server, q);
            let meter = metered.meter.clone();
            (Box::new(metered), Some(meter))
        }
        None => (Box::new(server), None),
    };
    let mut world = World::new(all, server);
    world.store.latency = options.store_latency_ms;
    if let Some(cache) = options.cache {
        world.cache(CacheConfig {
            default_ttl_ms: cache.ttl_ms,
            stale_for_ms: cache.stale_for_ms,
            ..CacheConfig::DEFAULT
        });
    }
    let polling = Polling {
        polls: options.polls,
        every_ms: options.poll_every_ms,
        same: options.cache.is_some(),
    };
    let batch = Rc::new(RefCell::new(Batch {
        deadline: Millis::INFINITY,
        budget: options.retry_budget.map(BatchBudget::new),
    }));
    let call = |process: usize, wrapper: WrapperId, key: &str, url: String| SimCall {
        batch: Some(batch.clone()),
        ..SimCall::get(process, wrapper, key, &url)
    };
    let mut worker_of = Vec::new();
    for worker in 0..options.workers {
        let (process, key) = placement(options, worker);
        let wrapper = wrappers[process];
        let make = |url| call(process, wrapper, &key, url);
        let when = (0.0, options.snapshots, polling);
        start_worker(&mut world, &mut worker_of, worker, when, make);
    }
    let mut groups = Vec::new();
    if options.workers > 0 {
        groups.push(Group {
            wrapper: wrappers[0],
            name: None,
            workers: 0..options.workers,
            start_ms: 0.0,
        });
    }
    let mut next = options.workers;
    for (lane, &wrapper) in options.lanes.iter().zip(&lane_wrappers) {
        let workers = next..next + lane.workers;
        for worker in workers.clone() {
            let make = |url| call(lane_process, wrapper, &lane_key, url);
            let when = (lane.start_ms, lane.snapshots, Polling::ONCE);
            start_worker(&mut world, &mut worker_of, worker, when, make);
        }
        groups.push(Group {
            wrapper,
            name: lane.name.clone(),
            workers: workers.clone(),
            start_ms: lane.start_ms,
        });
        next = workers.end;
    }
    // Event lookups: a worker each, at time 0, on their own limiter.
    let lookups_from = worker_of.len();
    for i in 0..options.lookups.map_or(0, |l| l.calls) {
        let worker = next + i;
        let (process, key) = placement(options, worker);
        let url = format!("http://sim/v1/lookup/l{i}");
        world.start_at(0.0, call(process, wrappers[process], &key, url));
        worker_of.push(worker);
    }
    match &options.quota {
        // The month ends with its (last) period: calls still waiting for credit then are left so.
        Some(q) => world.run_until(q.run_ms()),
        None => world.run(),
    }
    let mut report = SimReport {
        attempts: 0,
        throttled: 0,
        rejected: 0,
        completed: 0,
        abandoned: 0,
        last_attempt_ms: 0.0,
        timeline: Vec::new(),
        learned: Vec::new(),
        limiters: Vec::new(),
        lanes: Vec::new(),
        hits: None,
        coalesced: None,
        stale: None,
        requests_saved: None,
        quota: meter.map(|m| MonthReport::of(&world, &m.borrow())),
    };
    for sent in world.log.sent.iter().filter(|s| !s.probe) {
        report.timeline.push(Attempt {
            at: sent.at,
            worker: worker_of[sent.index],
            status: sent.status.unwrap_or(0),
            cache: None,
        });
    }
    for (index, &(at, served, status)) in world.log.cached.iter() {
        report.timeline.push(Attempt {
            at,
            worker: worker_of[index],
            status,
            cache: Some(served),
        });
        match status {
            200 => report.completed += 1,
            _ => report.abandoned += 1,
        }
    }
    // In time order, the server's attempts first among equal times (a stable sort).
    report.timeline.sort_by(|a, b| a.at.total_cmp(&b.at));
    if let Some(figures) = world.cache_figures() {
        report.hits = Some(figures.hits);
        report.coalesced = Some(figures.coalesced);
        report.stale = Some(figures.stale);
        report.requests_saved = Some(figures.requests_saved());
    }
    for (_, end) in world.log.settled.values() {
        match end {
            End::Deliver => report.completed += 1,
            _ => report.abandoned += 1,
        }
    }
    report.abandoned += world.log.refused.len();
    // The first gate's estimates: the first worker's credential's, in the first process.
    let first = Scope::of(Some(&placement(options, 0).1), None);
    let first = world.processes[0].gates.find(&first);
    for (at, p, gate, event) in &world.log.events {
        if let (0, Event::Learned(estimate)) = (*p, event) {
            if Some(*gate) == first {
                report.learned.push((*at, *estimate));
            }
        }
    }
    if options.lookups.is_some() {
        for (name, lookups) in [("snapshot", false), ("events", true)] {
            let mine = |index: usize| index != usize::MAX && (index >= lookups_from) == lookups;
            let sent = world.log.sent.iter().filter(|s| mine(s.index));
            let (attempts, throttled) = sent.fold((0, 0), |(a, r), s| {
                (a + 1, r + u64::from(s.status == Some(429)))
            });
            let done_ms = world
                .log
                .settled
                .iter()
                .filter(|(i, _)| mine(*i))
                .map(|(_, (at, _))| *at)
                .fold(0.0, f64::max);
            report.limiters.push(LimiterReport {
                name: name.into(),
                attempts,
                throttled,
                done_ms,
            });
        }
    }
    if !options.lanes.is_empty() {
        report.lanes = lanes::report(&world, &worker_of, &groups);
    }
    let sent = || report.timeline.iter().filter(|a| a.cache.is_none());
    report.attempts = sent().count();
    report.throttled = sent().filter(|a| a.status == 429).count();
    report.rejected = report.throttled;
    report.last_attempt_ms = sent().next_back().map_or(0.0, |a| a.at);
    Ok(report)
}

/// How a worker repeats its snapshots: `polls` times, poll `i` not before `i x every_ms`;
/// `same`: every worker's snapshot `n` is the same URL (their cache's key), else its own.
#[derive(Debug, Clone, Copy)]
struct Polling {
    polls: u32,
    every_ms: Millis,
    same: bool,
}

impl Polling {
    /// Once, each worker its own snapshots.
    const ONCE: Polling = Polling {
        polls: 1,
        every_ms: 0.0,
        same: false,
    };
}

/// Starts `worker`'s snapshots (`when`: at what time, how many, how often), one after
/// another, each call made by `call` from its URL; notes the worker of each call, by its index.
fn start_worker(
    world: &mut World,
    worker_of: &mut Vec<u32>,
    worker: u32,
    (at, snapshots, polling): (Millis, u32, Polling),
    call: impl Fn(String) -> SimCall,
) {
    let snapshot = |n: u32| match polling.same {
        true => format!("http://sim/v1/events/e{n}/odds/snapshot"),
        false => format!("http://sim/v1/events/e{worker}-{n}/odds/snapshot"),
    };
    let mut index = world.start_at(at, call(snapshot(0)));
    worker_of.push(worker);
    for poll in 0..polling.polls {
        let from = at + f64::from(poll) * polling.every_ms;
        for n in 0..snapshots {
            if (poll, n) != (0, 0) {
                index = world.start_after_at(index, from, call(snapshot(n)));
                worker_of.push(worker);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Coordination;

    #[test]
    fn one_arrangement_at_a_time_and_lanes_in_one_shared_line() {
        let none = [None; 3];
        let asked = Coordination::asked;
        assert_eq!(
            asked(None, none, false, false),
            Ok(Coordination::Independent)
        );
        assert_eq!(asked(None, none, true, false), Ok(Coordination::Shared));
        let fleet = [None, Some(3), None];
        assert_eq!(asked(None, fleet, false, false), Ok(Coordination::Fleet(3)));
        assert!(asked(Some(true), [Some(2), None, None], false, false).is_err());
        let lanes = asked(None, [None, None, Some(2)], true, false);
        assert!(lanes.unwrap_err().starts_with("`lanes` wait"));
        assert_eq!(
            asked(None, none, true, true),
            Err("Choose one of `lanes` and `lookups`")
        );
    }
}

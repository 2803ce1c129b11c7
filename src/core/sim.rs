//! The article's virtual-clock model, driving the production [`Gate`] and [`TokenBucket`]
//! instead of copies of them. The next event in time order sets the clock; waiting means
//! scheduling an event later, so a run takes microseconds and is the same every time.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::bucket::TokenBucket;
use super::config::{at_least, positive, ConfigError, Rate};
use super::gate::Gate;
use super::Millis;

/// Upper bounds that keep a run small enough to finish in well under a second.
const MAX_WORKERS: f64 = 100_000.0;
const MAX_ATTEMPTS: f64 = 1_000.0;

/// How workers are coordinated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coordination {
    /// Each worker honours `Retry-After` on its own; no gate.
    Independent,
    /// Every attempt of every worker passes one gate.
    Shared,
    /// Worker `i` uses gate `i % n`: n processes with a gate each.
    Separate(u32),
}

/// A scenario. [`SimOptions::default`] is the article's: eight workers, burst 2, 2 per second,
/// `Retry-After: 1`, independent retries, ten attempts each, no retry budget.
#[derive(Debug, Clone, PartialEq)]
pub struct SimOptions {
    /// Logical workers, each wanting one snapshot, all starting at time 0.
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
        }
    }
}

impl SimOptions {
    /// Checks the numbers a caller supplied; each error names its field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        at_least(
            "workers",
            self.workers.into(),
            1.0,
            "an integer from 1 to 100000",
        )?;
        if f64::from(self.workers) > MAX_WORKERS {
            return Err(ConfigError::OutOfRange {
                field: "workers",
                expected: "an integer from 1 to 100000",
                got: self.workers.into(),
            });
        }
        at_least(
            "retryAfterMs",
            self.retry_after_ms,
            0.0,
            "a finite number >= 0",
        )?;
        if !(1.0..=MAX_ATTEMPTS).contains(&f64::from(self.max_attempts)) {
            return Err(ConfigError::OutOfRange {
                field: "maxAttempts",
                expected: "an integer from 1 to 1000",
                got: self.max_attempts.into(),
            });
        }
        if let Coordination::Separate(n) = self.coordination {
            positive("separateGates", n.into())?;
        }
        Ok(())
    }
}

/// One attempt that reached the server.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Attempt {
    /// Virtual time of the attempt.
    pub at: Millis,
    /// Which worker made it.
    pub worker: u32,
    /// 200 or 429.
    pub status: u16,
}

/// What a run produced; the bindings hand it to JavaScript in the article's field names.
#[derive(Debug, Clone, PartialEq)]
pub struct SimReport {
    /// Attempts that reached the server.
    pub attempts: usize,
    /// Of those, rejected with 429.
    pub rejected: usize,
    /// Workers that got their snapshot.
    pub completed: usize,
    /// Workers that gave up (attempts or retry budget spent): never counted as success.
    pub abandoned: usize,
    /// Time of the last attempt.
    pub last_attempt_ms: Millis,
    /// Every attempt, in order.
    pub timeline: Vec<Attempt>,
}

/// A worker's next step: at `at`, make attempt number `count` (0 is the first).
#[derive(Debug)]
struct Event {
    at: Millis,
    order: u64,
    worker: u32,
    count: u32,
}

impl Ord for Event {
    /// Earliest first, and among equal times the one scheduled first: a stable trace.
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .at
            .total_cmp(&self.at)
            .then(other.order.cmp(&self.order))
    }
}
impl PartialOrd for Event {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl PartialEq for Event {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Event {}

/// Runs a scenario to the end.
pub fn simulate(options: &SimOptions) -> Result<SimReport, ConfigError> {
    options.validate()?;
    let mut server = TokenBucket::new(options.rate, 0.0);
    let mut gates: Vec<Gate> = match options.coordination {
        Coordination::Independent => Vec::new(),
        Coordination::Shared => vec![Gate::new(options.rate, 0.0)],
        Coordination::Separate(n) => (0..n).map(|_| Gate::new(options.rate, 0.0)).collect(),
    };
    let mut queue = BinaryHeap::new();
    let mut order = 0;
    let mut schedule = |queue: &mut BinaryHeap<Event>, at, worker, count| {
        queue.push(Event {
            at,
            order,
            worker,
            count,
        });
        order += 1;
    };
    for worker in 0..options.workers {
        schedule(&mut queue, 0.0, worker, 0);
    }

    let mut timeline = Vec::new();
    let (mut completed, mut abandoned) = (0, 0);
    let mut retries_left = options.retry_budget;
    while let Some(Event {
        at, worker, count, ..
    }) = queue.pop()
    {
        if count > 0 && retries_left == Some(0) {
            abandoned += 1;
            continue;
        }
        let len = gates.len();
        let mut gate = gates.get_mut(worker as usize % len.max(1));
        if let Some(gate) = gate.as_deref_mut() {
            let next = gate.admit_at(at);
            if next > at {
                schedule(&mut queue, next, worker, count);
                continue;
            }
        }
        if count > 0 {
            retries_left = retries_left.map(|left| left - 1);
        }
        let allowed = !options.always_reject && server.take(at);
        timeline.push(Attempt {
            at,
            worker,
            status: if allowed { 200 } else { 429 },
        });
        if allowed {
            completed += 1;
            continue;
        }
        if count + 1 >= options.max_attempts {
            abandoned += 1;
            continue;
        }
        if let Some(gate) = gate {
            gate.defer(at, options.retry_after_ms)?;
        }
        schedule(&mut queue, at + options.retry_after_ms, worker, count + 1);
    }

    Ok(SimReport {
        attempts: timeline.len(),
        rejected: timeline.iter().filter(|a| a.status == 429).count(),
        completed,
        abandoned,
        last_attempt_ms: timeline.last().map_or(0.0, |a| a.at),
        timeline,
    })
}

//! The article's virtual-clock model, run on the production call machine: every worker's call
//! goes through a [`Gate`] exactly as `createFetch`'s do, against a simulated server (a token
//! bucket with the same allowance, `Retry-After` on every 429). The next event in time order
//! sets the clock; waiting means scheduling an event later, so a run takes microseconds and is
//! the same every time.

use std::cell::RefCell;
use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::rc::Rc;

use crate::core::authority::memory::MemoryAuthority;
use crate::core::authority::{AdmissionId, Answer, Authority, Op};
use crate::core::base::map::Map;
use crate::core::base::random::Seeded;
use crate::core::gate::action::{Action, End, Event as GateEvent};
use crate::core::gate::call::CallSpec;
use crate::core::gate::{CallId, Gate};
use crate::core::parse::feedback::Feedback;
use crate::core::rules::allowance::{at_least, positive, ConfigError, Rate};
use crate::core::rules::batch::Batch;
use crate::core::rules::bucket::TokenBucket;
use crate::core::rules::budget::BatchBudget;
use crate::core::rules::learn::Estimate;
use crate::core::rules::policy::RetryPolicy;
use crate::core::Millis;

/// Upper bounds that keep a run small enough to finish in well under a second.
const MAX_WORKERS: f64 = 100_000.0;
const MAX_ATTEMPTS: f64 = 1_000.0;

/// How workers are coordinated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coordination {
    /// Each worker honours `Retry-After` on its own: a gate per worker, which no other shares.
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
    /// The gates are not told the allowance: they learn it from the responses.
    pub learn: bool,
    /// The server sends `X-RateLimit-Limit` and `-Remaining` on every response.
    pub headers: bool,
    /// Snapshots each worker fetches, one after another.
    pub snapshots: u32,
    /// From a request's arrival at the server to its response's return, in milliseconds.
    pub latency_ms: Millis,
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
            headers: false,
            snapshots: 1,
            latency_ms: 0.0,
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
        let calls = f64::from(self.workers) * f64::from(self.snapshots);
        if !(1.0..=MAX_WORKERS).contains(&calls) {
            return Err(ConfigError::OutOfRange {
                field: "snapshots",
                expected: "an integer from 1 with workers x snapshots at most 100000",
                got: self.snapshots.into(),
            });
        }
        at_least("latencyMs", self.latency_ms, 0.0, "a finite number >= 0")?;
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
    /// A learning run's estimates as they changed (the first gate's), in order.
    pub learned: Vec<(Millis, Estimate)>,
}

/// The article's `Gate`: `admitAt(now)` and `defer(now, delayMs)` on a virtual clock. It is the
/// production [`MemoryAuthority`], each admission's response taken to come back at once.
#[derive(Debug, Clone)]
pub struct ArticleGate {
    authority: MemoryAuthority,
    next: AdmissionId,
}

impl ArticleGate {
    /// A gate with a full bucket at time 0.
    pub fn new(rate: Rate) -> ArticleGate {
        ArticleGate {
            authority: MemoryAuthority::new(rate, None, 0.0),
            next: 0,
        }
    }

    /// Admits at `now` (spending a token) and returns `now`, or returns the earliest time worth
    /// coming back, spending nothing. The cooldown is checked first, so after a cooldown only
    /// the burst goes at once and the rest wait for tokens.
    pub fn admit_at(&mut self, now: Millis) -> Millis {
        let id = self.next;
        self.next += 1;
        let admit = Op::Admit {
            id,
            want: 1,
            seen: None,
        };
        match self.authority.apply(now, &admit) {
            Answer::Admitted { .. } => {
                self.authority.apply(now, &Op::Resume { id });
                now
            }
            Answer::Wait(ms) | Answer::Exhausted(ms) => now + ms,
            _ => now,
        }
    }

    /// Holds every admission until `now + delay_ms`; a later, shorter delay never moves the
    /// end earlier.
    pub fn defer(&mut self, now: Millis, delay_ms: Millis) -> Result<(), ConfigError> {
        let delay_ms = at_least("delayMs", delay_ms, 0.0, "a finite number >= 0")?;
        let op = Op::Observe {
            cooldown_ms: Some(delay_ms),
            remaining: None,
        };
        self.authority.apply(now, &op);
        Ok(())
    }

    /// No admission before this time.
    pub fn blocked_until(&self) -> Millis {
        self.authority.cooldown_until()
    }
}

/// What the event queue holds: a worker starting a call, a gate to step, or a response
/// coming back to gate `g` (status, remaining count).
#[derive(Debug, Clone, Copy, PartialEq)]
enum What {
    Start(u32),
    Step(usize),
    Respond(usize, CallId, u16, u64),
}

#[derive(Debug)]
struct Event {
    at: Millis,
    order: u64,
    what: What,
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

/// The run in progress: the queue of events, the gates and who is on which.
struct Run<'a> {
    options: &'a SimOptions,
    server: TokenBucket,
    gates: Vec<Gate>,
    /// Each gate's pending step, so it is stepped once per wake-up.
    scheduled: Vec<Option<(Millis, u64)>>,
    workers: Vec<Map<CallId, u32>>,
    attempts: Vec<Map<CallId, u32>>,
    /// Snapshots each worker has still to start.
    left: Vec<u32>,
    queue: BinaryHeap<Event>,
    order: u64,
    report: SimReport,
}

impl Run<'_> {
    fn push(&mut self, at: Millis, what: What) -> u64 {
        let order = self.order;
        self.order += 1;
        self.queue.push(Event { at, order, what });
        order
    }

    /// Gate `g` hears the server's answer to `call`: `Retry-After` on a 429, and the counts
    /// when the server sends them.
    fn respond(&mut self, g: usize, now: Millis, call: CallId, status: u16, remaining: u64) {
        let headers = self.options.headers;
        // The article's workers defer the gate only before a retry: the answer to a call's
        // last attempt holds nobody.
        let last = self.attempts[g].get(&call).copied().unwrap_or(0) >= self.options.max_attempts;
        let retry_after_ms = if last {
            0.0
        } else {
            self.options.retry_after_ms
        };
        let feedback = Feedback {
            retry_after_ms: (status == 429).then_some(retry_after_ms),
            limit: headers.then_some(self.options.rate.burst() as u64),
            remaining: headers.then_some(remaining),
            ..Feedback::default()
        };
        self.gates[g].responded_with(now, call, status, feedback);
    }

    /// Steps gate `g` at `at` later, unless a step no later than that is already due.
    fn wake(&mut self, g: usize, at: Millis) {
        if matches!(self.scheduled[g], Some((due, _)) if due <= at) {
            return;
        }
        let order = self.push(at, What::Step(g));
        self.scheduled[g] = Some((at, order));
    }

    /// Performs gate `g`'s actions at `now` up to and including one attempt (then the other
    /// gates get their turn at the same instant, as the article's workers do).
    fn step(&mut self, g: usize, now: Millis) {
        while let Some(action) = self.gates[g].poll_action(now) {
            match action {
                Action::Send { call, .. } => {
                    let worker = self.workers[g][&call];
                    *self.attempts[g].entry(call).or_default() += 1;
                    let ok = !self.options.always_reject && self.server.take(now);
                    let status = if ok { 200 } else { 429 };
                    self.report.timeline.push(Attempt {
                        at: now,
                        worker,
                        status,
                    });
                    let remaining = self.server.tokens(now).floor() as u64;
                    if self.options.latency_ms > 0.0 {
                        let back = now + self.options.latency_ms;
                        self.push(back, What::Respond(g, call, status, remaining));
                        continue;
                    }
                    self.respond(g, now, call, status, remaining);
                    self.scheduled[g] = None;
                    return self.wake(g, now);
                }
                Action::Dispose { call, .. } => self.gates[g].disposed(now, call, None),
                Action::Settle { call, end } => {
                    if let Some(worker) = self.workers[g].remove(&call) {
                        if self.left[worker as usize] > 0 {
                            self.push(now, What::Start(worker));
                        }
                    }
                    match end {
                        End::Deliver => self.report.completed += 1,
                        _ => self.report.abandoned += 1,
                    }
                }
                Action::Event(GateEvent::Learned(estimate)) if g == 0 => {
                    self.report.learned.push((now, estimate));
                }
                _ => {}
            }
        }
        if let Some(at) = self.gates[g].poll_timeout(now) {
            self.wake(g, at.max(now));
        }
    }
}

/// Runs a scenario to the end: every worker's call goes through the production call machine
/// ([`Gate`]), one gate per coordinating process, against a server with the same allowance.
pub fn simulate(options: &SimOptions) -> Result<SimReport, ConfigError> {
    options.validate()?;
    let gate_count = match options.coordination {
        Coordination::Independent => options.workers as usize,
        Coordination::Shared => 1,
        Coordination::Separate(n) => n as usize,
    };
    let gates = (0..gate_count)
        .map(|g| {
            let gate = Gate::new(options.rate, None, 0.0, Box::new(Seeded::new(g as u64)));
            match options.learn {
                true => gate.learning(None, 0.0),
                false => gate,
            }
        })
        .collect();
    let policy = Rc::new(RetryPolicy {
        max_attempts: options.max_attempts,
        time_budget_ms: Millis::INFINITY,
        attempt_timeout_ms: Millis::INFINITY,
        ..RetryPolicy::default()
    });
    let batch = Rc::new(RefCell::new(Batch {
        deadline: Millis::INFINITY,
        budget: options.retry_budget.map(BatchBudget::new),
    }));
    let mut run = Run {
        options,
        server: TokenBucket::new(options.rate, 0.0),
        gates,
        scheduled: vec![None; gate_count],
        workers: (0..gate_count).map(|_| Map::default()).collect(),
        attempts: (0..gate_count).map(|_| Map::default()).collect(),
        left: vec![options.snapshots; options.workers as usize],
        queue: BinaryHeap::new(),
        order: 0,
        report: SimReport {
            attempts: 0,
            rejected: 0,
            completed: 0,
            abandoned: 0,
            last_attempt_ms: 0.0,
            timeline: Vec::new(),
            learned: Vec::new(),
        },
    };
    for worker in 0..options.workers {
        run.push(0.0, What::Start(worker));
    }
    while let Some(Event { at, order, what }) = run.queue.pop() {
        match what {
            What::Start(worker) => {
                run.left[worker as usize] -= 1;
                let g = worker as usize % gate_count;
                let spec = CallSpec {
                    policy: Some(policy.clone()),
                    batch: Some(batch.clone()),
                    replayable: true,
                    ..CallSpec::default()
                };
                let call = run.gates[g].start(at, spec);
                run.workers[g].insert(call, worker);
                run.step(g, at);
            }
            What::Respond(g, call, status, remaining) => {
                run.respond(g, at, call, status, remaining);
                run.step(g, at);
            }
            What::Step(g) => {
                if run.scheduled[g] != Some((at, order)) {
                    continue;
                }
                run.scheduled[g] = None;
                run.gates[g].handle_timeout(at);
                run.step(g, at);
            }
        }
    }
    let mut report = run.report;
    report.attempts = report.timeline.len();
    report.rejected = report.timeline.iter().filter(|a| a.status == 429).count();
    report.last_attempt_ms = report.timeline.last().map_or(0.0, |a| a.at);
    Ok(report)
}

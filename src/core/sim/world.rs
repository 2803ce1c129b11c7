//! The one driver of the gates on a virtual clock, for `simulate()` and for the tests: one
//! event queue, where the next event in time order sets the clock and waiting means scheduling
//! an event later, so minutes of waiting take microseconds and a run is the same every time.
//!
//! Each simulated process (or thread) has its own [`Gates`] and its one timer. The driver
//! performs what the gates ask: an attempt goes to the [`Server`] (an answer with no latency is
//! heard at once, then the process lets the other events of that instant go first, as the
//! article's workers take turns), a store operation to the [`FakeStore`], a `/usage` probe is
//! answered from [`World::usage`] (or the server's own count). With a cache
//! ([`World::cache`]), a GET asks the core's cache machine first
//! ([`CacheFlow`](crate::core::rules::cache_flow::CacheFlow)), as `createFetch({ cache })`'s
//! bindings do: a fresh entry answers it at once (a stale one too, when its gate would hold or
//! refuse it), a request in flight is joined, else it leads.

mod cache;
mod cache_state;
mod log;

pub use self::log::{Log, Sent, Served};

use std::cell::RefCell;
use std::rc::Rc;

use super::server::{Arrival, Reply, Server};
use super::store::FakeStore;
use crate::core::base::indexed::Indexed;
use crate::core::base::slab::Mirror;
use crate::core::base::timeline::Timeline;
use crate::core::gate::action::OpId;
use crate::core::gate::respond::BodyFacts;
use crate::core::gate::store_link::StoreReply;
use crate::core::gates::action::Action;
use crate::core::gates::fleet::Shared;
use crate::core::gates::ids::{CallRef, GateId, WrapperId};
use crate::core::gates::profile::{Keeping, Request};
use crate::core::gates::Gates;
use crate::core::rules::batch::Batch;
use crate::core::rules::cache_flow::Ended;
use crate::core::rules::classify::{Body, Failure};
use crate::core::rules::quota::Usage;
use crate::core::Millis;

/// A network failure: the request was fine, the fetch rejected.
const NETWORK: Failure = Failure::Rejected {
    request_valid: true,
};

/// Events a run may take before it counts as runaway.
const MAX_STEPS: usize = 20_000_000;

/// A snapshot's body length, as the cache counts its bytes.
const SNAPSHOT_BYTES: f64 = 2_000.0;

/// A call to make: who makes it and what it sends.
#[derive(Debug, Clone)]
pub struct SimCall {
    /// The process that makes it.
    pub process: usize,
    /// Its wrapper there.
    pub wrapper: WrapperId,
    /// The credential.
    pub key: String,
    /// The method.
    pub method: &'static str,
    /// The URL.
    pub url: String,
    /// The refresh round it belongs to.
    pub batch: Option<Rc<RefCell<Batch>>>,
    /// Whether its body can be sent again.
    pub body: Body,
}

impl SimCall {
    /// A `GET` of `url` with `key`, by `wrapper` of `process`.
    pub fn get(process: usize, wrapper: WrapperId, key: &str, url: &str) -> SimCall {
        SimCall {
            process,
            wrapper,
            key: key.to_owned(),
            method: "GET",
            url: url.to_owned(),
            batch: None,
            body: Body::None,
        }
    }
}

/// How a call started: on a wrapper (routed by the gates), or straight on a gate.
#[derive(Debug, Clone)]
enum How {
    Wrapper(SimCall),
    Gate(usize, GateId, crate::core::gate::call::CallSpec),
}

/// One simulated process: its gates, its timer, and what it has in flight.
pub struct Process {
    /// Its gates.
    pub gates: Gates,
    timer: Option<Millis>,
    /// When its sweep timer fires: one that does not keep the process alive.
    sweep: Option<Millis>,
    /// The attempt of each call that is out, by its number.
    in_flight: Mirror<u32>,
    attempts: Mirror<u32>,
    probes: Mirror<()>,
    bodies: Mirror<BodyFacts>,
    /// Each call's index and request.
    calls: Mirror<(usize, Rc<SimCall>)>,
    /// Its cache: calls are known by their index.
    cache: Option<cache_state::SimCache>,
}

#[derive(Debug, Clone)]
enum What {
    Start(usize),
    Arrive(usize, CallRef, u32, Reply),
    Reach(usize, CallRef, u32),
    AttemptTimeout(usize, CallRef, u32),
    Abort(usize),
    Timer(usize),
    Sweep(usize),
    Go(usize),
    StoreAnswer(usize, GateId, OpId, Option<Box<StoreReply>>),
    Recalled(usize, GateId, Vec<Shared>),
}

/// Processes, a server, a store, and the clock.
pub struct World {
    /// Virtual time now.
    pub now: Millis,
    /// What happens next: the earliest first, and among equal times the one scheduled first
    /// (a stable trace).
    queue: Timeline<What>,
    /// Events scheduled so far.
    order: u64,
    steps: usize,
    /// The processes.
    pub processes: Vec<Process>,
    /// The server.
    pub server: Box<dyn Server>,
    /// The store the processes' store gates share.
    pub store: FakeStore,
    /// What `/usage` says (`None`: it answers 500).
    pub usage: Option<Usage>,
    /// Whether `/usage` never answers (its request hangs until its time limit).
    pub usage_hangs: bool,
    /// How late every timer fires, in ms: a busy event loop's (0: on time).
    pub timer_late_ms: Millis,
    /// Each request reaches the server up to this long after it was sent (spread evenly by
    /// its call and attempt), so requests sent together reach it out of their order, as
    /// connections opening at their own pace do (0: at once, in order).
    pub reach_ms: Millis,
    /// Whether the processes' sweep timers run (off for one gate's tests, which look at their
    /// gate long after it went idle).
    pub sweeps: bool,
    /// What happened.
    pub log: Log,
    /// Calls in start order: how each is made, and, once made, where it is.
    starts: Vec<How>,
    /// Each started call's process and number, by index.
    pub calls: Vec<Option<(usize, CallRef)>>,
    /// Calls that start when another ends (not before a time), by the index of the one they
    /// follow.
    followers: Indexed<(usize, Millis)>,
}

impl Process {
    /// The attempt `number` of `call` is over, if it was still out.
    fn stop(&mut self, call: CallRef, number: u32) -> bool {
        let out = self.in_flight.get(call) == Some(&number);
        if out {
            self.in_flight.remove(call);
        }
        out
    }
}

impl World {
    /// A world of `processes` (each with its gates), answered by `server`.
    pub fn new(processes: Vec<Gates>, server: Box<dyn Server>) -> World {
        World {
            now: 0.0,
            queue: Timeline::default(),
            order: 0,
            steps: 0,
            processes: processes
                .into_iter()
                .map(|gates| Process {
                    gates,
                    timer: None,
                    sweep: None,
                    in_flight: Mirror::default(),
                    attempts: Mirror::default(),
                    probes: Mirror::default(),
                    bodies: Mirror::default(),
                    calls: Mirror::default(),
                    cache: None,
                })
                .collect(),
            server,
            store: FakeStore::default(),
            usage: None,
            usage_hangs: false,
            timer_late_ms: 0.0,
            reach_ms: 0.0,
            sweeps: true,
            log: Log::default(),
            starts: Vec::new(),
            calls: Vec::new(),
            followers: Indexed::default(),
        }
    }

    fn push(&mut self, at: Millis, what: What) {
        self.order += 1;
        self.queue.push(at, self.order, what);
    }

    /// Makes `call` at `at`; its index.
    pub fn start_at(&mut self, at: Millis, call: SimCall) -> usize {
        self.schedule_start(at, How::Wrapper(call))
    }

    /// Makes a call with `spec` straight on `gate` of `process` at `at`; its index.
    pub fn start_on(
        &mut self,
        at: Millis,
        process: usize,
        gate: GateId,
        spec: crate::core::gate::call::CallSpec,
    ) -> usize {
        self.schedule_start(at, How::Gate(process, gate, spec))
    }

    /// Makes `call` as soon as the `index`-th call ends (one worker's calls, one after
    /// another); its index.
    pub fn start_after(&mut self, index: usize, call: SimCall) -> usize {
        self.start_after_at(index, 0.0, call)
    }

    /// Makes `call` when the `index`-th call ends, but not before `at` (a worker's next poll);
    /// its index.
    pub fn start_after_at(&mut self, index: usize, at: Millis, call: SimCall) -> usize {
        let next = self.starts.len();
        self.starts.push(How::Wrapper(call));
        self.calls.push(None);
        self.followers.insert(index, (next, at));
        next
    }

    fn schedule_start(&mut self, at: Millis, how: How) -> usize {
        let index = self.starts.len();
        self.starts.push(how);
        self.calls.push(None);
        self.push(at, What::Start(index));
        index
    }

    /// The `index`-th call ended now: the call that follows it starts.
    fn ended_now(&mut self, index: usize) {
        if let Some((next, at)) = self.followers.remove(&index) {
            self.push(self.now.max(at), What::Start(next));
        }
    }

    /// The caller of the `index`-th call aborts at `at`.
    pub fn abort_at(&mut self, at: Millis, index: usize) {
        self.push(at, What::Abort(index));
    }

    /// Runs until nothing is left to happen but sweeps: as a process with only an unref'd timer
    /// left exits.
    pub fn run(&mut self) {
        self.run_until(Millis::INFINITY);
    }

    /// Runs every event up to `until`.
    pub fn run_until(&mut self, until: Millis) {
        while let Some((at, what)) = self.queue.peek() {
            let sweep = matches!(what, What::Sweep(_));
            if at > until || (sweep && until.is_infinite() && !self.alive()) {
                break;
            }
            let Some((at, what)) = self.queue.pop() else {
                break;
            };
            self.steps += 1;
            assert!(self.steps < MAX_STEPS, "the run did not end");
            assert!(at >= self.now, "time went backwards");
            self.now = at;
            if let Some(p) = self.handle(what) {
                self.drive(p);
            }
        }
        if until.is_finite() {
            self.now = self.now.max(until);
        }
    }

    /// Whether nothing is left to happen but sweeps.
    pub fn is_quiet(&self) -> bool {
        !self.alive()
    }

    /// Whether anything keeps the processes alive: an event other than a sweep, a timer that
    /// was re-armed or an attempt that ended since, which the bindings clear.
    fn alive(&self) -> bool {
        self.queue.iter().any(|(at, what)| match *what {
            What::Sweep(_) => false,
            What::Timer(p) => self.processes[p].timer == Some(at),
            What::AttemptTimeout(p, call, n) => self.processes[p].in_flight.get(call) == Some(&n),
            _ => true,
        })
    }

    /// Whether an attempt of `call` of process `p` is out.
    pub fn in_flight(&self, p: usize, call: CallRef) -> bool {
        self.processes[p].in_flight.get(call).is_some()
    }

    /// Whether the `index`-th call has ended (settled, refused, or aborted).
    pub fn ended(&self, index: usize) -> bool {
        self.log.settled.contains_key(&index)
            || self.log.refused.contains_key(&index)
            || self.log.aborted.contains_key(&index)
            || self.log.cached.contains_key(&index)
    }

    /// Handles one event; the process to drive after it.
    fn handle(&mut self, what: What) -> Option<usize> {
        let now = self.now;
        match what {
            What::Start(index) => self.start(index),
            What::Arrive(p, call, number, reply) => {
                if !self.processes[p].stop(call, number) {
                    return None;
                }
                self.answer(p, call, reply);
                Some(p)
            }
            What::Reach(p, call, number) => {
                if self.processes[p].in_flight.get(call) != Some(&number) {
                    return None;
                }
                self.reach(p, call, number);
                Some(p)
            }
            What::AttemptTimeout(p, call, number) => {
                if !self.processes[p].stop(call, number) {
                    return None;
                }
                let index = self.index_of(p, call);
                self.log.outcome(index, None);
                self.processes[p].gates.failed(now, call, Failure::TimedOut);
                Some(p)
            }
            What::Abort(index) => {
                let (p, call) = self.calls.get(index).copied().flatten()?;
                if self.log.settled.contains_key(&index) || self.log.aborted.contains_key(&index) {
                    return None;
                }
                let process = &mut self.processes[p];
                // As the bindings do: an attempt in flight ends through its own signal.
                process.in_flight.remove(call);
                process.gates.cancel(now, call);
                self.log.aborted.insert(index, ());
                self.ended_now(index);
                Some(p)
            }
            What::Timer(p) => {
                if self.processes[p].timer != Some(now) {
                    return None;
                }
                self.processes[p].timer = None;
                self.log.wakeups += 1;
                self.processes[p].gates.handle_timeout(now);
                Some(p)
            }
            What::Sweep(p) => {
                if self.processes[p].sweep != Some(now) {
                    return None;
                }
                self.processes[p].sweep = None;
                self.processes[p].gates.handle_sweep(now);
                Some(p)
            }
            What::Go(p) => Some(p),
            What::StoreAnswer(p, gate, op, answer) => {
                self.processes[p]
                    .gates
                    .store_answered(now, gate, op, answer.map(|a| *a));
                Some(p)
            }
            What::Recalled(p, gate, facts) => {
                self.processes[p].gates.recalled(now, gate, facts);
                Some(p)
            }
        }
    }

    fn start(&mut self, index: usize) -> Option<usize> {
        let now = self.now;
        self.log.started.insert(index, now);
        match self.starts[index].clone() {
            How::Wrapper(call) => {
                let p = call.process;
                if !self.leads(index, &call) {
                    return Some(p);
                }
                let call = Rc::new(call);
                let request = Request {
                    api_key: Some(&call.key),
                    authorization: None,
                    idempotency_key: false,
                    method: call.method,
                    body: call.body,
                    url: &call.url,
                    batch: call.batch.clone(),
                };
                match self.processes[p].gates.start(now, call.wrapper, &request) {
                    Ok(started) => {
                        self.calls[index] = Some((p, started.call));
                        let process = &mut self.processes[p];
                        process.calls.insert(started.call, (index, call));
                    }
                    Err(refused) => {
                        self.log.refused.insert(index, refused);
                        self.ended_now(index);
                        let failed = Ended::Failed { refusal: None };
                        let rest = self.cache_ended(p, index, failed, 0).unwrap_or_default();
                        self.land(p, &rest, 0);
                    }
                }
                Some(p)
            }
            How::Gate(p, gate, spec) => {
                let made = self.processes[p].gates.start_on(now, gate, spec);
                if let Some(call) = made {
                    self.calls[index] = Some((p, call));
                    let request = Rc::new(SimCall::get(p, 0, "", ""));
                    self.processes[p].calls.insert(call, (index, request));
                }
                Some(p)
            }
        }
    }

    /// The index of `call` of process `p` (`usize::MAX` for a probe).
    fn index_of(&self, p: usize, call: CallRef) -> usize {
        self.processes[p]
            .calls
            .get(call)
            .map_or(usize::MAX, |(index, _)| *index)
    }

    /// An answer to `call` of process `p` arrives now.
    fn answer(&mut self, p: usize, call: CallRef, reply: Reply) {
        let now = self.now;
        let index = self.index_of(p, call);
        if let Some(sent) = self
            .log
            .sent
            .iter_mut()
            .rev()
            .find(|s| s.process == p && s.call == call)
        {
            sent.status = match &reply {
                Reply::Status { status, .. } | Reply::Read { status, .. } => Some(*status),
                _ => None,
            };
        }
        let process = &mut self.processes[p];
        match reply {
            Reply::Status {
                status,
                headers,
                body,
                ..
            } => {
                process.bodies.insert(call, body.unwrap_or_default());
                let lookup = |name: &str| {
                    headers
                        .iter()
                        .find(|(k, _)| k.eq_ignore_ascii_case(name))
                        .map(|(_, v)| v.clone())
                };
                self.log
                    .responses
                    .push((now, index, status, lookup("retry-after")));
                self.log.outcome(index, Some(status));
                let wall = move || 1.7e12 + now;
                process.gates.responded(now, &wall, call, status, &lookup);
            }
            Reply::Read {
                status, feedback, ..
            } => {
                process.bodies.insert(call, BodyFacts::default());
                // Its headers were never text: the gate hears them as they are.
                self.log.responses.push((now, index, status, None));
                self.log.outcome(index, Some(status));
                process.gates.responded_with(now, call, status, feedback);
            }
            Reply::Fail { .. } => {
                self.log.outcome(index, None);
                process.gates.failed(now, call, NETWORK);
            }
            Reply::Hang => {}
        }
    }

    /// Performs process `p`'s actions until one attempt goes out (then the other events of
    /// this instant go first) or none is left; then sets its timer.
    fn drive(&mut self, p: usize) {
        let now = self.now;
        while let Some(action) = self.processes[p].gates.poll_action(now) {
            match action {
                Action::Send {
                    call, timeout_ms, ..
                } => {
                    self.send(p, call, timeout_ms);
                    self.push(now, What::Go(p));
                    return;
                }
                Action::Dispose { call, read, gate } => {
                    let index = self.index_of(p, call);
                    self.log.disposed.push(index);
                    let process = &mut self.processes[p];
                    let body = read.then(|| process.bodies.get(call).cloned().unwrap_or_default());
                    process.gates.disposed(now, gate, call, body);
                }
                Action::ReadUsage { call } => {
                    let usage = self.usage_now();
                    self.processes[p].gates.usage(now, call, usage);
                }
                Action::StartProbe { probe, .. } => {
                    self.processes[p].probes.insert(probe, ());
                }
                Action::Store { gate, id, op, .. } => {
                    let gates = &self.processes[p].gates;
                    let (Some(scope), Some((Keeping::Store(_), rate, _))) =
                        (gates.scope(gate).cloned(), gates.keeping(gate))
                    else {
                        continue;
                    };
                    let budget = gates.budget(gate);
                    let who = p as f64 + 1.0;
                    if let Some(reply) = self.store.run(now, (&scope, who), &op, rate, budget) {
                        let at = now + self.store.latency;
                        let reply = Some(Box::new(reply));
                        self.push(at, What::StoreAnswer(p, gate, id, reply));
                    }
                }
                Action::Share {
                    credential, facts, ..
                } => self.store.share(&credential, facts),
                Action::Recall {
                    gate, credential, ..
                } => {
                    if let Some(facts) = self.store.recall(&credential) {
                        let at = now + self.store.latency;
                        self.push(at, What::Recalled(p, gate, facts));
                    }
                }
                Action::Event { gate, event, .. } => self.log.events.push((now, p, gate, event)),
                Action::Settle { call, end, .. } => {
                    let Some((index, _)) = self.processes[p].calls.remove(call) else {
                        continue;
                    };
                    assert!(
                        !self.log.aborted.contains_key(&index),
                        "an aborted call settled"
                    );
                    let status = (self.log.outcomes.get(&index))
                        .and_then(|o| o.last().copied().flatten())
                        .unwrap_or(0);
                    let ended = cache_state::ended_of(&end, status);
                    let Some(rest) = self.cache_ended(p, index, ended, status) else {
                        continue;
                    };
                    let again = self.log.settled.insert(index, (now, end));
                    assert!(again.is_none(), "call {index} settled twice");
                    self.ended_now(index);
                    self.land(p, &rest, status);
                }
                Action::Forgotten { .. } | Action::DropAnswer { .. } => {}
            }
        }
        let late = self.timer_late_ms;
        let process = &mut self.processes[p];
        let due = process.gates.poll_timeout();
        if let Some(at) = rearm(&mut process.timer, due, now, late) {
            self.push(at, What::Timer(p));
        }
        let process = &mut self.processes[p];
        let due = process.gates.sweep_timeout(now).filter(|_| self.sweeps);
        if let Some(at) = rearm(&mut process.sweep, due, now, late) {
            self.push(at, What::Sweep(p));
        }
    }

    /// Sends `call`'s attempt: the server answers it (at once, with no latency).
    fn send(&mut self, p: usize, call: CallRef, timeout_ms: Millis) {
        let now = self.now;
        let process = &mut self.processes[p];
        let number = {
            let n = process.attempts.get(call).copied().unwrap_or(0) + 1;
            process.attempts.insert(call, n);
            n
        };
        let probe = process.probes.get(call).is_some();
        let index = process
            .calls
            .get(call)
            .map_or(usize::MAX, |(index, _)| *index);
        let gates = &process.gates;
        let scope = gates.gate_of(call).and_then(|g| gates.scope(g)).cloned();
        self.log.sent.push(Sent {
            at: now,
            process: p,
            call,
            index: if probe { usize::MAX } else { index },
            probe,
            scope,
            status: None,
        });
        self.processes[p].in_flight.insert(call, number);
        if timeout_ms > 0.0 && timeout_ms.is_finite() {
            self.push(now + timeout_ms, What::AttemptTimeout(p, call, number));
        }
        if probe || self.reach_ms <= 0.0 {
            return self.reach(p, call, number);
        }
        // A spread that is the same every run: by the call's index and the attempt.
        let spread = (index
            .wrapping_mul(7_919)
            .wrapping_add(number as usize * 104_729)
            % 1_000) as f64;
        self.push(
            now + self.reach_ms * spread / 1_000.0,
            What::Reach(p, call, number),
        );
    }

    /// What `/usage` says now: the server's count, or the world's fixed answer.
    fn usage_now(&mut self) -> Option<Usage> {
        self.server.usage(self.now).or(self.usage)
    }

    /// Attempt `number` of `call` reaches the server now: it answers (at once, with no latency).
    fn reach(&mut self, p: usize, call: CallRef, number: u32) {
        let now = self.now;
        let process = &self.processes[p];
        let probe = process.probes.get(call).is_some();
        let (index, request) = process
            .calls
            .get(call)
            .cloned()
            .unwrap_or((usize::MAX, Rc::new(SimCall::get(p, 0, "", ""))));
        let reply = if probe && self.usage_hangs {
            Reply::Hang
        } else if probe {
            match self.usage_now() {
                Some(_) => Reply::ok(),
                None => Reply::status(500, &[]),
            }
        } else {
            let attempt = Arrival {
                process: p,
                index,
                number,
                method: request.method,
                url: &request.url,
                key: &request.key,
            };
            self.server.reply(now, &attempt)
        };
        match reply.latency() {
            Some(0.0) => {
                self.processes[p].in_flight.remove(call);
                self.answer(p, call, reply);
            }
            Some(latency) => self.push(now + latency, What::Arrive(p, call, number, reply)),
            None => {}
        }
    }
}

/// Sets a process's timer (`armed`) to fire `late` ms after `due` (not before `now`), or clears
/// it; when it fires somewhere new, that time, for an event to be scheduled then.
fn rearm(
    armed: &mut Option<Millis>,
    due: Option<Millis>,
    now: Millis,
    late: Millis,
) -> Option<Millis> {
    let at = due.map(|at| at.max(now) + late);
    let new = at.filter(|&at| *armed != Some(at));
    *armed = at;
    new
}

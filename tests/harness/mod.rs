//! A driver for the call machine on a virtual clock, for tests: it performs the gate's actions
//! against a scripted server (a status, headers and a latency per attempt, or a failure, or a
//! hang), fires the gate's timer when asked, and records everything that settles. Time jumps
//! straight to the next event, so minutes of waiting take microseconds.
#![allow(dead_code)]

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap, HashSet};

use odds_gate::core::authority::memory::MemoryAuthority;
use odds_gate::core::authority::{Answer, Authority};
use odds_gate::core::gate::action::{Action, End, Event};
use odds_gate::core::gate::call::CallSpec;
use odds_gate::core::gate::BodyFacts;
use odds_gate::core::gate::{CallId, Gate};
use odds_gate::core::rules::classify::Failure;
use odds_gate::core::rules::quota::Usage;
use odds_gate::core::Millis;

/// What the server does with one attempt.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// A response after `latency` ms.
    Status {
        status: u16,
        headers: Vec<(&'static str, String)>,
        body: Option<BodyFacts>,
        latency: Millis,
    },
    /// The inner fetch rejects after `latency` ms.
    Fail { latency: Millis },
    /// Nothing comes back (only the attempt's timeout ends it).
    Hang,
}

impl Reply {
    pub fn ok() -> Reply {
        Reply::status(200, &[])
    }

    pub fn status(status: u16, headers: &[(&'static str, &str)]) -> Reply {
        Reply::Status {
            status,
            headers: headers.iter().map(|(k, v)| (*k, v.to_string())).collect(),
            body: None,
            latency: 0.0,
        }
    }

    pub fn after(mut self, ms: Millis) -> Reply {
        match &mut self {
            Reply::Status { latency, .. } | Reply::Fail { latency } => *latency = ms,
            Reply::Hang => {}
        }
        self
    }

    pub fn saying(mut self, code: &str, detail: &str) -> Reply {
        if let Reply::Status { body, .. } = &mut self {
            *body = Some(BodyFacts {
                code: Some(code.into()),
                detail: Some(detail.into()),
            });
        }
        self
    }
}

/// One attempt the server saw.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Seen {
    pub at: Millis,
    pub call: CallId,
    pub probe: bool,
}

#[derive(Debug, Clone, PartialEq)]
enum What {
    Start(usize),
    Arrive(CallId, u32, Reply),
    AttemptTimeout(CallId, u32),
    Abort(CallId),
    Timer,
    StoreAnswer(u64, Option<Answer>),
}

struct Ev {
    at: Millis,
    order: u64,
    what: What,
}

impl Ord for Ev {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .at
            .total_cmp(&self.at)
            .then(other.order.cmp(&self.order))
    }
}
impl PartialOrd for Ev {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl PartialEq for Ev {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Ev {}

/// How the fake store behaves (for gates made with `Gate::shared`).
pub struct FakeStore {
    pub authority: MemoryAuthority,
    /// Milliseconds before each answer.
    pub latency: Millis,
    /// While true, operations get no answer at all.
    pub down: bool,
    pub ops: usize,
}

/// A network failure: the request was fine, the fetch rejected.
const NETWORK: Failure = Failure::Rejected {
    request_valid: true,
};

pub type Server = Box<dyn FnMut(Millis, CallId, u32) -> Reply>;

pub struct Harness {
    pub gate: Gate,
    pub now: Millis,
    queue: BinaryHeap<Ev>,
    order: u64,
    timer: Option<Millis>,
    pub server: Server,
    /// What `/usage` says.
    pub usage: Option<Usage>,
    pub store: Option<FakeStore>,
    specs: Vec<CallSpec>,
    /// Started calls by the index of their start, once started.
    pub calls: Vec<Option<CallId>>,
    attempts: HashMap<CallId, u32>,
    /// What the last response's body said, by call.
    bodies: HashMap<CallId, BodyFacts>,
    in_flight: HashSet<(CallId, u32)>,
    probes: HashSet<CallId>,
    pub sent: Vec<Seen>,
    /// Responses as they arrived: when, to which call, the status and the `Retry-After` sent.
    pub responses: Vec<(Millis, CallId, u16, Option<String>)>,
    /// How each attempt of each call ended: a status, or `None` for a failure or timeout.
    pub outcomes: HashMap<CallId, Vec<Option<u16>>>,
    pub settled: HashMap<CallId, (Millis, End)>,
    pub aborted: HashSet<CallId>,
    pub events: Vec<(Millis, Event)>,
    /// What calls learned of their route's limiter bucket (`Action::Route`).
    pub routes: Vec<(CallId, Option<String>)>,
    pub wakeups: usize,
    steps: usize,
}

impl Harness {
    pub fn new(gate: Gate, server: Server) -> Harness {
        Harness {
            gate,
            now: 0.0,
            queue: BinaryHeap::new(),
            order: 0,
            timer: None,
            server,
            usage: None,
            store: None,
            specs: Vec::new(),
            calls: Vec::new(),
            attempts: HashMap::new(),
            bodies: HashMap::new(),
            in_flight: HashSet::new(),
            probes: HashSet::new(),
            sent: Vec::new(),
            responses: Vec::new(),
            outcomes: HashMap::new(),
            settled: HashMap::new(),
            aborted: HashSet::new(),
            events: Vec::new(),
            routes: Vec::new(),
            wakeups: 0,
            steps: 0,
        }
    }

    fn push(&mut self, at: Millis, what: What) {
        self.order += 1;
        self.queue.push(Ev {
            at,
            order: self.order,
            what,
        });
    }

    /// Makes a call at `at`; its index (see [`call`](Self::call)).
    pub fn start_at(&mut self, at: Millis, spec: CallSpec) -> usize {
        let index = self.specs.len();
        self.specs.push(spec);
        self.calls.push(None);
        self.push(at, What::Start(index));
        index
    }

    /// The call id of the `index`-th call made (once it has been made).
    pub fn call(&self, index: usize) -> CallId {
        self.calls[index].expect("the call has been made")
    }

    /// The caller of the `index`-th call aborts at `at`.
    pub fn abort_at(&mut self, at: Millis, index: usize) {
        self.push(at, What::Abort(index as CallId));
    }

    /// Runs until nothing is left to happen (bounded).
    pub fn run(&mut self) {
        self.run_until(Millis::INFINITY);
    }

    /// Runs every event up to `until`.
    pub fn run_until(&mut self, until: Millis) {
        while let Some(ev) = self.queue.peek() {
            if ev.at > until {
                break;
            }
            let Ev { at, what, .. } = self.queue.pop().unwrap();
            self.steps += 1;
            assert!(self.steps < 5_000_000, "the run did not end");
            assert!(at >= self.now, "time went backwards");
            self.now = at;
            self.handle(what);
            self.drive();
        }
        if until.is_finite() {
            self.now = self.now.max(until);
        }
    }

    fn handle(&mut self, what: What) {
        let now = self.now;
        match what {
            What::Start(index) => {
                let id = self.gate.start(now, self.specs[index].clone());
                self.calls[index] = Some(id);
            }
            What::Arrive(call, attempt, reply) => {
                if !self.in_flight.remove(&(call, attempt)) {
                    return;
                }
                match reply {
                    Reply::Status {
                        status,
                        headers,
                        body,
                        ..
                    } => {
                        self.bodies.insert(call, body.unwrap_or_default());
                        let retry_after = headers
                            .iter()
                            .find(|(k, _)| k.eq_ignore_ascii_case("retry-after"))
                            .map(|(_, v)| v.clone());
                        self.responses.push((now, call, status, retry_after));
                        self.outcomes.entry(call).or_default().push(Some(status));
                        let lookup = |name: &str| {
                            headers
                                .iter()
                                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                                .map(|(_, v)| v.clone())
                        };
                        self.gate
                            .responded(now, &|| 1.7e12 + now, call, status, &lookup);
                    }
                    Reply::Fail { .. } => {
                        self.outcomes.entry(call).or_default().push(None);
                        self.gate.failed(now, call, NETWORK);
                    }
                    Reply::Hang => {}
                }
            }
            What::AttemptTimeout(call, attempt) => {
                if self.in_flight.remove(&(call, attempt)) {
                    self.outcomes.entry(call).or_default().push(None);
                    self.gate.failed(now, call, Failure::TimedOut);
                }
            }
            What::Abort(index) => {
                let Some(call) = self.calls[index as usize] else {
                    return;
                };
                if self.settled.contains_key(&call) || self.aborted.contains(&call) {
                    return;
                }
                // As the bindings do: an attempt in flight ends through its own signal.
                self.in_flight.retain(|&(c, _)| c != call);
                self.gate.cancel(now, call);
                self.aborted.insert(call);
            }
            What::Timer => {
                if self.timer != Some(now) {
                    return;
                }
                self.timer = None;
                self.wakeups += 1;
                self.gate.handle_timeout(now);
            }
            What::StoreAnswer(op, answer) => self.gate.store_answered(now, op, answer),
        }
    }

    /// Performs every action the gate has, then sets its one timer.
    fn drive(&mut self) {
        let now = self.now;
        while let Some(action) = self.gate.poll_action(now) {
            match action {
                Action::Send { call, timeout_ms } => {
                    let attempt = self.attempts.entry(call).or_default();
                    *attempt += 1;
                    let attempt = *attempt;
                    let probe = self.probes.contains(&call);
                    self.sent.push(Seen {
                        at: now,
                        call,
                        probe,
                    });
                    let reply = if probe {
                        match self.usage {
                            Some(_) => Reply::ok(),
                            None => Reply::status(500, &[]),
                        }
                    } else {
                        (self.server)(now, call, attempt)
                    };
                    self.in_flight.insert((call, attempt));
                    match &reply {
                        Reply::Status { latency, .. } | Reply::Fail { latency } => {
                            let at = now + latency;
                            self.push(at, What::Arrive(call, attempt, reply.clone()));
                        }
                        Reply::Hang => {}
                    }
                    if timeout_ms > 0.0 && timeout_ms.is_finite() {
                        self.push(now + timeout_ms, What::AttemptTimeout(call, attempt));
                    }
                }
                Action::Dispose { call, read } => {
                    let body = read.then(|| self.bodies.get(&call).cloned().unwrap_or_default());
                    self.gate.disposed(now, call, body);
                }
                Action::ReadUsage { call } => self.gate.usage(now, call, self.usage),
                Action::StartProbe { probe, .. } => {
                    self.probes.insert(probe);
                }
                Action::Store { id, op } => {
                    let Some(store) = &mut self.store else {
                        panic!("a store operation on a memory gate");
                    };
                    store.ops += 1;
                    if !store.down {
                        let answer = store.authority.apply(now, &op);
                        let at = now + store.latency;
                        self.push(at, What::StoreAnswer(id, Some(answer)));
                    }
                }
                Action::Event(event) => self.events.push((now, event)),
                Action::Route { call, bucket } => self.routes.push((call, bucket)),
                Action::Settle { call, end } => {
                    assert!(!self.aborted.contains(&call), "an aborted call settled");
                    let again = self.settled.insert(call, (now, end));
                    assert!(again.is_none(), "call {call} settled twice");
                }
            }
        }
        let due = self.gate.poll_timeout(now);
        if let Some(at) = due {
            if self.timer != Some(at.max(now)) {
                let at = at.max(now);
                self.timer = Some(at);
                self.push(at, What::Timer);
            }
        } else {
            self.timer = None;
        }
    }

    /// How the `index`-th call ended.
    pub fn end(&self, index: usize) -> Option<End> {
        self.settled.get(&self.call(index)).map(|(_, end)| *end)
    }

    /// When the `index`-th call ended.
    pub fn ended_at(&self, index: usize) -> Millis {
        self.settled[&self.call(index)].0
    }

    /// Attempts the server saw for the `index`-th call.
    pub fn attempts_of(&self, index: usize) -> Vec<Millis> {
        let call = self.call(index);
        self.sent
            .iter()
            .filter(|s| s.call == call)
            .map(|s| s.at)
            .collect()
    }

    /// Times of every attempt that was not a probe.
    pub fn attempt_times(&self) -> Vec<Millis> {
        self.sent
            .iter()
            .filter(|s| !s.probe)
            .map(|s| s.at)
            .collect()
    }

    /// Whether the `index`-th call's attempt is still out (it hung, and nothing limits it).
    pub fn hung(&self, index: usize) -> bool {
        let call = self.call(index);
        self.in_flight.iter().any(|&(c, _)| c == call)
    }

    /// Whether anything is still waiting to happen.
    pub fn is_quiet(&self) -> bool {
        self.queue.is_empty()
    }
}

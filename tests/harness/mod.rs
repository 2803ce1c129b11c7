//! One gate's tests on the virtual clock: the simulator's own driver ([`World`]) with a single
//! gate made by the test, calls started on it with the test's specs, and a scripted server.
//! Time jumps straight to the next event, so minutes of waiting take microseconds.
#![allow(dead_code)]

use std::ops::{Deref, DerefMut};

use odds_gate::core::gate::action::{End, Event};
use odds_gate::core::gate::call::CallSpec;
use odds_gate::core::gate::Gate;
use odds_gate::core::gates::ids::{CallRef, GateId};
use odds_gate::core::gates::profile::Keeping;
use odds_gate::core::gates::scope::Scope;
use odds_gate::core::gates::Gates;
use odds_gate::core::sim::home::SimHome;
use odds_gate::core::sim::server::Arrival;
pub use odds_gate::core::sim::server::Reply;
#[allow(unused_imports)]
pub use odds_gate::core::sim::store::FakeStore;
use odds_gate::core::sim::world::{Sent, World};
use odds_gate::core::Millis;

/// What the server does with each attempt: given the time, the call's index and the attempt's
/// number (1 for the first).
pub type Server = Box<dyn FnMut(Millis, usize, u32) -> Reply>;

/// A world of one process with one gate.
pub struct Harness {
    pub world: World,
    gate: GateId,
    scope: Scope,
}

impl Deref for Harness {
    type Target = World;
    fn deref(&self) -> &World {
        &self.world
    }
}

impl DerefMut for Harness {
    fn deref_mut(&mut self) -> &mut World {
        &mut self.world
    }
}

impl Harness {
    /// `gate` (its state in this process's memory, or in the world's store when made with
    /// `Gate::shared`) answered by `server`.
    pub fn new(gate: Gate, mut server: Server) -> Harness {
        let mut gates = Gates::new(Box::new(SimHome::alone(1)));
        let scope = Scope::of(Some("harness"), None);
        let keeping = match gate.store_counts() {
            Some(_) => Keeping::Store(0),
            None => Keeping::Memory { threads: false },
        };
        let gate = gates.insert(scope.clone(), gate, keeping);
        let server = move |now: Millis, a: &Arrival| server(now, a.index, a.number);
        let mut world = World::new(vec![gates], Box::new(server));
        world.sweeps = false;
        Harness { world, gate, scope }
    }

    /// Makes a call at `at`; its index (see [`call`](Self::call)).
    pub fn start_at(&mut self, at: Millis, spec: CallSpec) -> usize {
        let gate = self.gate;
        self.world.start_on(at, 0, gate, spec)
    }

    /// The gate, to look at (or change: what changes this way is performed at the next event).
    pub fn gate(&mut self) -> &mut Gate {
        let scope = self.scope.clone();
        self.world.processes[0]
            .gates
            .gate_mut(&scope)
            .expect("the harness's gate is never forgotten while it is looked at")
    }

    /// The gate's figures now.
    pub fn figures(&mut self) -> odds_gate::core::gate::figures::Figures {
        let now = self.world.now;
        self.gate().figures(now)
    }

    /// What the gate learned so far, if it learns.
    pub fn learned(&mut self) -> Option<odds_gate::core::rules::learn::Estimate> {
        let now = self.world.now;
        self.gate().learned(now)
    }

    /// The call number of the `index`-th call made (once it has been made).
    pub fn call(&self, index: usize) -> CallRef {
        self.world.calls[index].expect("the call has been made").1
    }

    /// How the `index`-th call ended.
    pub fn end(&self, index: usize) -> Option<End> {
        self.log.settled.get(&index).map(|(_, end)| *end)
    }

    /// When the `index`-th call ended.
    pub fn ended_at(&self, index: usize) -> Millis {
        self.log.settled[&index].0
    }

    /// Attempts the server saw for the `index`-th call.
    pub fn attempts_of(&self, index: usize) -> Vec<Millis> {
        self.sent()
            .iter()
            .filter(|s| s.index == index)
            .map(|s| s.at)
            .collect()
    }

    /// Every attempt, probes included.
    pub fn sent(&self) -> &[Sent] {
        &self.log.sent
    }

    /// Times of every attempt that was not a probe.
    pub fn attempt_times(&self) -> Vec<Millis> {
        self.sent()
            .iter()
            .filter(|s| !s.probe)
            .map(|s| s.at)
            .collect()
    }

    /// The events, with their times.
    pub fn events(&self) -> Vec<(Millis, Event)> {
        self.log
            .events
            .iter()
            .map(|(at, _, _, event)| (*at, event.clone()))
            .collect()
    }

    /// Whether the `index`-th call's attempt is still out (it hung, and nothing limits it).
    pub fn hung(&self, index: usize) -> bool {
        self.world.calls[index].is_some_and(|(p, call)| self.world.in_flight(p, call))
    }
}

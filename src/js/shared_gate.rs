//! A core [`Gate`] made live: the one place where its line of waiters meets real time. Waiting
//! calls park on a [`Slot`]; one timer per gate wakes the line when the core says a token will
//! be there; an abort or a deadline takes a waiter out of line without spending a token.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::{Rc, Weak};

use wasm_bindgen::prelude::*;

use super::abort::AbortListener;
use super::clock;
use super::errors::abort_reason;
use super::timer::Timer;
use super::wait::Slot;
use crate::core::budget::RefillingConfig;
use crate::core::config::Rate;
use crate::core::feedback::Feedback;
use crate::core::gate::{Admission, Figures, Gate, Ticket};
use crate::core::quota::{QuotaState, Usage};
use crate::core::scope::Scope;
use crate::core::Millis;

/// Why a call did not get through the gate.
pub enum Refusal {
    /// The caller's signal aborted; reject with this reason.
    Aborted(JsValue),
    /// It could not be admitted before its deadline.
    Late,
    /// The monthly quota is spent; the period ends then (Unix ms), if known.
    Exhausted(Option<f64>),
}

type Admit = Result<(), Refusal>;

struct Waiter {
    slot: Slot<Admit>,
    asked: Millis,
}

/// One credential's gate, shared by every wrapper in the process.
pub struct SharedGate {
    scope: Scope,
    state: RefCell<State>,
    timer: RefCell<Option<Timer>>,
    /// Calls waiting for the one `/usage` probe; `Some` while it runs.
    probe: RefCell<Option<Vec<Slot<()>>>>,
}

struct State {
    gate: Gate,
    waiters: HashMap<u64, Waiter>,
}

/// A call's place at the gate: admitted already, or waiting in line.
pub enum Entry {
    /// A token was spent; go.
    Admitted(Ticket),
    /// In line until the timer admits it, or its signal or deadline lets it go.
    Waiting {
        /// The place in line, which becomes the admitted ticket.
        ticket: Ticket,
        /// Settled by whichever comes first.
        slot: Slot<Admit>,
        /// Removed when the wait ends, whichever way.
        listener: Option<AbortListener>,
    },
}

impl Entry {
    /// Resolves with the ticket once admitted.
    pub async fn admitted(self) -> Result<Ticket, Refusal> {
        match self {
            Entry::Admitted(ticket) => Ok(ticket),
            Entry::Waiting {
                ticket,
                slot,
                listener,
            } => {
                let outcome = slot.wait().await;
                drop(listener);
                outcome.map(|()| ticket)
            }
        }
    }
}

impl SharedGate {
    /// A fresh gate for `scope`, full bucket, nobody waiting.
    pub fn new(scope: Scope, rate: Rate, budget: Option<RefillingConfig>) -> Rc<SharedGate> {
        let shared = Rc::new(SharedGate {
            scope,
            state: RefCell::new(State {
                gate: Gate::new(rate, clock::now()).with_budget(budget),
                waiters: HashMap::new(),
            }),
            timer: RefCell::new(None),
            probe: RefCell::new(None),
        });
        let weak = Rc::downgrade(&shared);
        let callback = Closure::<dyn FnMut()>::new(move || {
            if let Some(shared) = weak.upgrade() {
                shared.on_timer();
            }
        });
        *shared.timer.borrow_mut() = Some(Timer::new(callback));
        shared
    }

    /// The credential's scope (a hash).
    pub fn scope(&self) -> &Scope {
        &self.scope
    }

    /// The allowance and retry budget this gate enforces.
    pub fn config(&self) -> (Rate, Option<RefillingConfig>) {
        let state = self.state.borrow();
        (state.gate.rate(), state.gate.budget_config())
    }

    /// Runs `f` on the core gate (for decisions and figures).
    pub fn with<R>(&self, f: impl FnOnce(&mut Gate) -> R) -> R {
        f(&mut self.state.borrow_mut().gate)
    }

    /// Joins the gate at once, so the place in line is the order of the calls. Refuses at
    /// once, spending no token, if `signal` has already aborted, if admission is predicted
    /// after `deadline`, or if the quota is spent.
    pub fn enter(
        self: &Rc<Self>,
        signal: Option<&web_sys::AbortSignal>,
        deadline: Millis,
    ) -> Result<Entry, Refusal> {
        if let Some(signal) = signal.filter(|s| s.aborted()) {
            return Err(Refusal::Aborted(abort_reason(signal)));
        }
        let now = clock::now();
        let admission = self.state.borrow_mut().gate.request(now, deadline);
        let (ticket, wake_at) = match admission {
            Admission::Now { ticket } => return Ok(Entry::Admitted(ticket)),
            Admission::Late { .. } => return Err(Refusal::Late),
            Admission::Exhausted { until } => return Err(Refusal::Exhausted(to_wall(until, now))),
            Admission::Wait { ticket, wake_at } => (ticket, wake_at),
        };
        let slot = Slot::default();
        let waiter = Waiter {
            slot: slot.clone(),
            asked: now,
        };
        self.state.borrow_mut().waiters.insert(ticket.id(), waiter);
        self.arm(wake_at, now);
        let listener = signal.map(|signal| {
            let gate: Weak<SharedGate> = Rc::downgrade(self);
            let reason_from = signal.clone();
            AbortListener::new(signal, move || {
                if let Some(gate) = gate.upgrade() {
                    gate.cancel(ticket, Refusal::Aborted(abort_reason(&reason_from)));
                }
            })
        });
        Ok(Entry::Waiting {
            ticket,
            slot,
            listener,
        })
    }

    /// Learns from a response's status and headers; waiters it made hopeless are let go.
    pub fn observe(&self, status: u16, feedback: Feedback) {
        let expired = self
            .state
            .borrow_mut()
            .gate
            .observe(clock::now(), status, feedback);
        self.settle(expired, || Refusal::Late);
    }

    /// An admitted call's attempt is over: restarts an anchored refill, re-timing the line.
    pub fn responded(&self, ticket: Ticket) {
        let now = clock::now();
        let next = {
            let mut state = self.state.borrow_mut();
            if !state.gate.responded(ticket, now) {
                return;
            }
            state.gate.next_wake(now)
        };
        if let (Some(due), Some(timer)) = (next, self.timer.borrow_mut().as_mut()) {
            timer.set(due, now);
        }
    }

    /// Whether a `/usage` probe is running; if so, `wait` joins the calls awaiting it.
    pub fn probe_running(&self, wait: Option<&Slot<()>>) -> bool {
        match self.probe.borrow_mut().as_mut() {
            Some(waiting) => {
                waiting.extend(wait.cloned());
                true
            }
            None => false,
        }
    }

    /// Marks the probe as started.
    pub fn probe_started(&self) {
        *self.probe.borrow_mut() = Some(Vec::new());
    }

    /// The probe's answer: on a confirmed exhaustion everyone in line is rejected; then every
    /// call that awaited the probe resumes.
    pub fn probe_finished(&self, usage: Option<Usage>) -> QuotaState {
        let now = clock::now();
        let (state, drained) = self.state.borrow_mut().gate.quota_probed(usage);
        if let QuotaState::Exhausted { until } = state {
            let end = to_wall(until, now);
            self.settle(drained, || Refusal::Exhausted(end));
        }
        for slot in self.probe.borrow_mut().take().unwrap_or_default() {
            slot.settle(());
        }
        state
    }

    /// The core's figures, plus whether the timer is armed.
    pub fn figures(&self) -> (Figures, bool) {
        let armed = self.timer.borrow().as_ref().is_some_and(Timer::is_armed);
        (self.state.borrow_mut().gate.figures(clock::now()), armed)
    }

    fn arm(&self, due: Millis, now: Millis) {
        if let Some(timer) = self.timer.borrow_mut().as_mut() {
            timer.arm(due, now);
        }
    }

    /// Admits whoever the gate lets through and lets go of the late, then re-arms for the
    /// next, or leaves no timer.
    fn on_timer(&self) {
        if let Some(timer) = self.timer.borrow_mut().as_mut() {
            timer.fired();
        }
        let now = clock::now();
        let (wakeup, admitted) = {
            let mut state = self.state.borrow_mut();
            let State { gate, waiters } = &mut *state;
            let wakeup = gate.poll(now, |t| waiters.get(&t.id()).map_or(now, |w| w.asked));
            let admitted: Vec<Waiter> = wakeup
                .admitted
                .iter()
                .filter_map(|t| waiters.remove(&t.id()))
                .collect();
            (wakeup, admitted)
        };
        for waiter in admitted {
            waiter.slot.settle(Ok(()));
        }
        self.settle(wakeup.expired, || Refusal::Late);
        if let Some(due) = wakeup.next {
            self.arm(due, now);
        }
    }

    /// Settles waiters already out of the core's line, and drops the timer if nobody is left.
    fn settle(&self, tickets: Vec<Ticket>, mut refusal: impl FnMut() -> Refusal) {
        if tickets.is_empty() {
            return;
        }
        let (slots, empty) = {
            let mut state = self.state.borrow_mut();
            let slots: Vec<Slot<Admit>> = tickets
                .iter()
                .filter_map(|t| state.waiters.remove(&t.id()))
                .map(|w| w.slot)
                .collect();
            (slots, state.gate.waiting() == 0)
        };
        if empty {
            if let Some(timer) = self.timer.borrow_mut().as_mut() {
                timer.disarm();
            }
        }
        for slot in slots {
            slot.settle(Err(refusal()));
        }
    }

    /// Takes a waiter out of line and rejects it.
    fn cancel(&self, ticket: Ticket, refusal: Refusal) {
        let cancelled = self.state.borrow_mut().gate.cancel(ticket);
        if cancelled {
            let mut refusal = Some(refusal);
            self.settle(vec![ticket], || refusal.take().unwrap_or(Refusal::Late));
        }
    }
}

/// A time on the gate's clock as Unix milliseconds.
fn to_wall(at: Option<Millis>, now: Millis) -> Option<f64> {
    at.map(|at| clock::wall_now() + (at - now))
}

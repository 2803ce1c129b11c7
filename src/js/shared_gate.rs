//! A core [`Gate`] made live: the one place where its line of waiters meets real time. Waiting
//! calls park on a [`Slot`]; one timer per gate wakes the line when the core says a token will
//! be there, and an abort takes a waiter out of line without spending a token.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::{Rc, Weak};

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::clock;
use super::errors::abort_reason;
use super::timer::Timer;
use super::wait::Slot;
use crate::core::config::Rate;
use crate::core::feedback::Feedback;
use crate::core::gate::{Admission, Figures, Gate, Ticket};
use crate::core::scope::Scope;

/// One credential's gate, shared by every wrapper in the process.
pub struct SharedGate {
    scope: Scope,
    state: RefCell<State>,
    timer: RefCell<Option<Timer>>,
}

struct State {
    gate: Gate,
    waiters: HashMap<u64, Slot>,
}

impl SharedGate {
    /// A fresh gate for `scope`, full bucket, nobody waiting.
    pub fn new(scope: Scope, rate: Rate) -> Rc<SharedGate> {
        let shared = Rc::new(SharedGate {
            scope,
            state: RefCell::new(State {
                gate: Gate::new(rate, clock::now()),
                waiters: HashMap::new(),
            }),
            timer: RefCell::new(None),
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

    /// The allowance this gate enforces.
    pub fn rate(&self) -> Rate {
        self.state.borrow().gate.rate()
    }

    /// Joins the gate at once, so the place in line is the order of the calls. Rejects with the
    /// abort reason, spending no token, if `signal` has already aborted.
    pub fn enter(self: &Rc<Self>, signal: Option<web_sys::AbortSignal>) -> Result<Entry, JsValue> {
        if let Some(signal) = &signal {
            if signal.aborted() {
                return Err(abort_reason(signal));
            }
        }
        let now = clock::now();
        let admission = self.state.borrow_mut().gate.request(now);
        let (ticket, wake_at) = match admission {
            Admission::Now => return Ok(Entry::Admitted),
            Admission::Wait { ticket, wake_at } => (ticket, wake_at),
        };
        let slot = Slot::default();
        self.state
            .borrow_mut()
            .waiters
            .insert(ticket.id(), slot.clone());
        self.arm(wake_at, now);
        let listener = signal.map(|signal| AbortListener::new(self, signal, ticket, &slot));
        Ok(Entry::Waiting { slot, listener })
    }

    /// Records a throttled response's feedback (and the cooldown it sets).
    pub fn observe_throttle(&self, feedback: Feedback) {
        self.state
            .borrow_mut()
            .gate
            .observe_throttle(clock::now(), feedback);
    }

    /// The core's figures, plus whether the timer is armed.
    pub fn figures(&self) -> (Figures, bool) {
        let armed = self.timer.borrow().as_ref().is_some_and(Timer::is_armed);
        (self.state.borrow().gate.figures(), armed)
    }

    fn arm(&self, due: f64, now: f64) {
        if let Some(timer) = self.timer.borrow_mut().as_mut() {
            timer.arm(due, now);
        }
    }

    /// Admits whoever the gate lets through, then re-arms for the next, or leaves no timer.
    fn on_timer(&self) {
        if let Some(timer) = self.timer.borrow_mut().as_mut() {
            timer.fired();
        }
        let now = clock::now();
        let mut admitted = Vec::new();
        let (next, slots) = {
            let mut state = self.state.borrow_mut();
            let next = state.gate.poll(now, &mut admitted);
            let slots: Vec<Slot> = admitted
                .iter()
                .filter_map(|t| state.waiters.remove(&t.id()))
                .collect();
            (next, slots)
        };
        for slot in slots {
            slot.settle(Ok(()));
        }
        if let Some(due) = next {
            self.arm(due, now);
        }
    }

    /// Takes an aborted waiter out of line; drops the timer when nobody is left.
    fn cancel(&self, ticket: Ticket) -> Option<Slot> {
        let (slot, empty) = {
            let mut state = self.state.borrow_mut();
            if !state.gate.cancel(ticket) {
                return None;
            }
            (
                state.waiters.remove(&ticket.id()),
                state.gate.waiting() == 0,
            )
        };
        if empty {
            if let Some(timer) = self.timer.borrow_mut().as_mut() {
                timer.disarm();
            }
        }
        slot
    }
}

/// A call's place at the gate: admitted already, or waiting in line.
pub enum Entry {
    /// A token was spent; go.
    Admitted,
    /// In line until the timer admits it or its signal aborts.
    Waiting {
        /// Settled by whichever comes first.
        slot: Slot,
        /// Removed when the wait ends, whichever way.
        listener: Option<AbortListener>,
    },
}

impl Entry {
    /// Resolves once admitted; rejects with the abort reason if the signal aborts first.
    pub async fn admitted(self) -> Result<(), JsValue> {
        match self {
            Entry::Admitted => Ok(()),
            Entry::Waiting { slot, listener } => {
                let outcome = slot.wait().await;
                drop(listener);
                outcome
            }
        }
    }
}

/// An `abort` listener that lives exactly as long as the wait: removed on drop, so a
/// long-lived signal does not collect listeners from calls that were admitted.
pub struct AbortListener {
    signal: web_sys::AbortSignal,
    callback: Closure<dyn FnMut()>,
}

impl AbortListener {
    fn new(
        gate: &Rc<SharedGate>,
        signal: web_sys::AbortSignal,
        ticket: Ticket,
        slot: &Slot,
    ) -> Self {
        let gate: Weak<SharedGate> = Rc::downgrade(gate);
        let slot = slot.clone();
        let reason_from = signal.clone();
        let callback = Closure::<dyn FnMut()>::new(move || {
            if let Some(gate) = gate.upgrade() {
                if gate.cancel(ticket).is_some() {
                    slot.settle(Err(abort_reason(&reason_from)));
                }
            }
        });
        let _ = signal.add_event_listener_with_callback("abort", callback.as_ref().unchecked_ref());
        AbortListener { signal, callback }
    }
}

impl Drop for AbortListener {
    fn drop(&mut self) {
        let _ = self
            .signal
            .remove_event_listener_with_callback("abort", self.callback.as_ref().unchecked_ref());
    }
}

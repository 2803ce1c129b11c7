//! What only a gate with calls needs: its queue, its calls, their backoffs and deadlines, the
//! scouts and the probe out, the attempts in flight. Made when the gate's first call comes
//! and dropped once it has none ([`Busy::release`]: when the gate has nothing left to wake
//! for, and by the sweep), so an idle gate holds its learned state and its counts, not room
//! for calls: memory grows with calls waiting, not with keys.

use std::ops::{Deref, DerefMut};

use super::call::{Call, Stage};
use super::ids::CallId;
use super::queue::{Place, Queue, Turns};
use crate::core::base::slab::Slab;
use crate::core::base::timeline::Timeline;
use crate::core::Millis;

/// A route's scout, overdue at `at`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Due {
    pub(super) at: Millis,
    pub(super) call: CallId,
}

/// Whether `place` in queue is still the live visit of a waiting call.
pub(super) fn live(calls: &Slab<Call>, place: Place) -> bool {
    calls
        .get(place.call)
        .is_some_and(|c| matches!(c.stage, Stage::Queued { visit, .. } if visit == place.visit))
}

/// The busy gate's state.
#[derive(Debug, Default)]
pub(super) struct State {
    pub(super) queue: Queue,
    pub(super) calls: Slab<Call>,
    /// Calls in a backoff, by when it ends (equal times by call number).
    pub(super) sleepers: Timeline<CallId>,
    /// When waiting calls with a deadline are due to be let go, should they still wait then:
    /// a call behind a head that may wait longer (a retry, whose bound is its time budget)
    /// is let go at its own deadline, not when it reaches the head.
    pub(super) deadlines: Timeline<CallId>,
    /// Routes' scouts out, and when each is overdue (a handful at most: one per route).
    pub(super) scouts: Vec<Due>,
    /// The `/usage` probe in progress, and the calls waiting for its answer.
    pub(super) probe: Option<CallId>,
    pub(super) awaiting_probe: Vec<CallId>,
    /// The spread's `/usage` reading out.
    pub(super) reading: Option<CallId>,
    /// Attempts admitted whose outcome has not come back.
    pub(super) sending: usize,
    /// Their requests' numbers, in order, and when each went.
    pub(super) out: Vec<(f64, Millis)>,
    /// Calls waiting beside the queue for their routes' scouts.
    pub(super) behind_scout: usize,
}

/// The busy state when there is one. Read through [`Deref`] (an idle gate reads an empty
/// state); written through [`DerefMut`], which makes it. What an idle gate must keep of it
/// stays here: the queue's place in the fair order, and the calls' numbering.
#[derive(Debug, Default)]
pub(super) struct Busy {
    state: Option<Box<State>>,
    turns: Turns,
    /// The generation the calls' numbers go on from.
    floor: u32,
}

thread_local! {
    /// What an idle gate reads: an empty state, one per thread for the thread's life.
    static EMPTY: &'static State = Box::leak(Box::default());
}

impl State {
    /// No call, no attempt out, no probe or reading: nothing but stale marks (a place in
    /// queue, a backoff or a deadline of a call gone, which nobody finds again).
    fn is_empty(&self) -> bool {
        self.calls.is_empty()
            && self.sending == 0
            && self.out.is_empty()
            && self.probe.is_none()
            && self.reading.is_none()
            && self.awaiting_probe.is_empty()
    }

    /// The head of the queue, dropping stale places in front of it (see [`Queue::front`]).
    pub(super) fn front(&mut self) -> Option<Place> {
        let calls = &self.calls;
        self.queue.front(|p| live(calls, p))
    }

    /// The first of the lanes that draw on the reserve (see [`Queue::reserve_front`]).
    pub(super) fn reserve_front(&mut self) -> Option<Place> {
        let calls = &self.calls;
        self.queue.reserve_front(|p| live(calls, p))
    }
}

impl Busy {
    /// The state, if made: for what only tidies it (an idle gate has nothing to tidy).
    pub(super) fn made(&mut self) -> Option<&mut State> {
        self.state.as_deref_mut()
    }

    /// Drops the state when no call is left (nor anything a call left behind), keeping what
    /// the next call needs of it.
    pub(super) fn release(&mut self) {
        let Some(state) = self.state.take_if(|s| s.is_empty()) else {
            return;
        };
        self.turns = state.queue.turns();
        self.floor = state.calls.floor();
    }
}

impl Deref for Busy {
    type Target = State;
    fn deref(&self) -> &State {
        match &self.state {
            Some(state) => state,
            None => EMPTY.with(|empty| *empty),
        }
    }
}

impl DerefMut for Busy {
    fn deref_mut(&mut self) -> &mut State {
        self.state.get_or_insert_with(|| {
            Box::new(State {
                queue: Queue::resume(std::mem::take(&mut self.turns)),
                calls: Slab::from_floor(self.floor),
                ..State::default()
            })
        })
    }
}

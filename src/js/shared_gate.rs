//! A core [`Gate`] made live: the one place where its line of waiters meets real time. Waiting
//! calls park on a [`Slot`]; one timer per gate wakes the line when the core says a token will
//! be there; an abort or a deadline takes a waiter out of line without spending a token.

use std::cell::{Cell, OnceCell, RefCell};
use std::rc::Rc;

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::spawn_local;

use super::clock;
use super::errors::abort_reason;
use super::map::Map;
use super::redis::{OnFailure, RedisStore};
use super::timer::{Timer, EARLY_MS};
use super::wait::Slot;
use super::watch::Watches;
use crate::core::budget::RefillingConfig;
use crate::core::config::Rate;
use crate::core::feedback::Feedback;
use crate::core::gate::{Admission, Figures, Gate, Ticket};
use crate::core::quota::{QuotaState, Usage};
use crate::core::scope::Scope;
use crate::core::Millis;
use crate::store::{Answer, Op};

/// Why a call did not get through the gate.
pub enum Refusal {
    /// The caller's signal aborted; reject with this reason.
    Aborted(JsValue),
    /// It could not be admitted before its deadline.
    Late,
    /// The monthly quota is spent; the period ends then (Unix ms), if known.
    Exhausted(Option<f64>),
    /// The shared store is down and the gate fails closed.
    StoreDown,
}

type Admit = Result<(), Refusal>;

struct Waiter {
    slot: Slot<Admit>,
    asked: Millis,
    /// The abort watch this waiter is in, if its call has a signal.
    watch: Option<u32>,
}

/// One credential's gate, shared by every wrapper in the process.
pub struct SharedGate {
    scope: Scope,
    state: RefCell<State>,
    timer: RefCell<Option<Timer>>,
    /// The signals of waiting calls, one listener each.
    watches: RefCell<Watches>,
    /// What every one of those listeners calls, with its watch's number.
    on_abort: OnceCell<Closure<dyn FnMut(u32)>>,
    /// Calls waiting for the one `/usage` probe; `Some` while it runs.
    probe: RefCell<Option<Vec<Slot<()>>>>,
    /// The shared store that decides admissions, when the allowance spans processes.
    remote: Option<Remote>,
}

/// Admission through a shared store: the line stays local and only its head asks the store,
/// when the last answer said a token may be ready.
pub struct Remote {
    store: Rc<RedisStore>,
    key: Rc<String>,
    /// The whole allowance (the local gate holds only the fail-safe share).
    rate: Rate,
    budget: Cell<Option<RefillingConfig>>,
    /// One head at a time asks the store.
    pumping: Cell<bool>,
    /// When the store last said the next token would be there, on our clock.
    ready_at: Cell<Millis>,
    /// The admission whose response restarts the shared refill, and its id in the store.
    anchor: RefCell<Option<(Ticket, String)>>,
    /// Tells this process's anchors from other processes'.
    process_id: String,
    /// Refunds of successes not yet credited: they ride along with the next charge.
    refunds: Cell<f64>,
}

struct State {
    gate: Gate,
    waiters: Map<u64, Waiter>,
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
    },
}

impl Entry {
    /// Resolves with the ticket once admitted.
    pub async fn admitted(self) -> Result<Ticket, Refusal> {
        match self {
            Entry::Admitted(ticket) => Ok(ticket),
            Entry::Waiting { ticket, slot } => slot.wait().await.map(|()| ticket),
        }
    }
}

impl SharedGate {
    /// A fresh gate for `scope`, full bucket, nobody waiting. With a store, the store decides
    /// admissions and the local bucket holds only the fail-safe share of the allowance.
    pub fn new(
        scope: Scope,
        rate: Rate,
        budget: Option<RefillingConfig>,
        store: Option<Rc<RedisStore>>,
    ) -> Rc<SharedGate> {
        let local_rate = store.as_ref().map_or(rate, |s| s.local_rate(rate));
        let remote = store.map(|store| Remote {
            key: Rc::new(store.key(&scope)),
            anchor: RefCell::new(None),
            store,
            rate,
            budget: Cell::new(budget),
            pumping: Cell::new(false),
            ready_at: Cell::new(f64::NEG_INFINITY),
            process_id: hex(getrandom::u64().unwrap_or_default()),
            refunds: Cell::new(0.0),
        });
        let shared = Rc::new(SharedGate {
            scope,
            state: RefCell::new(State {
                gate: Gate::new(local_rate, clock::now()).with_budget(budget),
                waiters: Map::default(),
            }),
            timer: RefCell::new(None),
            watches: RefCell::new(Watches::default()),
            on_abort: OnceCell::new(),
            probe: RefCell::new(None),
            remote,
        });
        let weak = Rc::downgrade(&shared);
        let callback = Box::new(move || {
            if let Some(shared) = weak.upgrade() {
                let due = shared.timer.borrow_mut().as_mut().and_then(Timer::fired);
                shared.wake(due);
            }
        });
        *shared.timer.borrow_mut() = Some(Timer::new(callback));
        let weak = Rc::downgrade(&shared);
        let on_abort = Closure::<dyn FnMut(u32)>::new(move |watch| {
            if let Some(shared) = weak.upgrade() {
                shared.aborted(watch);
            }
        });
        let _ = shared.on_abort.set(on_abort);
        shared
    }

    /// The credential's scope (a hash).
    pub fn scope(&self) -> &Scope {
        &self.scope
    }

    /// The allowance, retry budget and store this gate was made with.
    pub fn config(&self) -> (Rate, Option<RefillingConfig>, String) {
        let state = self.state.borrow();
        match &self.remote {
            Some(r) => (r.rate, r.budget.get(), r.store.identity()),
            None => (
                state.gate.rate(),
                state.gate.budget_config(),
                "memory".into(),
            ),
        }
    }

    /// Gives a gate made without a retry budget (by a `retry: false` wrapper) the budget a
    /// retrying wrapper brings.
    pub fn install_budget(&self, config: RefillingConfig) {
        self.state.borrow_mut().gate.install_budget(config);
        if let Some(remote) = &self.remote {
            remote.budget.set(Some(config));
        }
    }

    /// The shared store, when there is one.
    pub fn store(&self) -> Option<&RedisStore> {
        self.remote.as_ref().map(|r| &*r.store)
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
        let admission = match &self.remote {
            Some(remote) if !remote.store.is_down() => {
                let mut state = self.state.borrow_mut();
                let ahead = state.gate.waiting() as f64;
                let predicted = remote.ready_at.get().max(now) + ahead * remote.rate.ms_per_token();
                state.gate.join(now, deadline, predicted)
            }
            Some(remote) if remote.store.on_failure() == OnFailure::Closed => {
                return Err(Refusal::StoreDown);
            }
            _ => self.state.borrow_mut().gate.request(now, deadline),
        };
        let (ticket, wake_at) = match admission {
            Admission::Now { ticket } => return Ok(Entry::Admitted(ticket)),
            Admission::Late { .. } => return Err(Refusal::Late),
            Admission::Exhausted { until } => return Err(Refusal::Exhausted(to_wall(until, now))),
            Admission::Wait { ticket, wake_at } => (ticket, wake_at),
        };
        let slot = Slot::default();
        let on_abort = self.on_abort.get();
        let watch = signal.zip(on_abort).map(|(signal, on_abort)| {
            let on_abort = on_abort.as_ref().unchecked_ref();
            self.watches.borrow_mut().add(signal, ticket.id(), on_abort)
        });
        let waiter = Waiter {
            slot: slot.clone(),
            asked: now,
            watch,
        };
        self.state.borrow_mut().waiters.insert(ticket.id(), waiter);
        if self.remote.is_some() {
            self.clone().pump();
        } else {
            self.arm(wake_at, now);
        }
        Ok(Entry::Waiting { ticket, slot })
    }

    /// A signal some waiters share aborted: take each of them out of line.
    fn aborted(&self, watch: u32) {
        let Some((signal, tickets)) = self.watches.borrow_mut().take(watch) else {
            return;
        };
        let reason = abort_reason(&signal);
        for ticket in tickets {
            self.cancel(Ticket::from_id(ticket), Refusal::Aborted(reason.clone()));
        }
    }

    /// A waiter has left the line (admitted, let go, or aborted): its watch forgets it.
    fn unwatch(&self, ticket: Ticket, waiter: &Waiter) {
        if let Some(id) = waiter.watch {
            self.watches.borrow_mut().remove(id, ticket.id());
        }
    }

    /// Learns from a response's status and headers; waiters it made hopeless are let go.
    pub fn observe(&self, status: u16, feedback: Feedback) {
        let observed = self
            .state
            .borrow_mut()
            .gate
            .observe(clock::now(), status, feedback);
        self.settle(observed.expired, &mut || Refusal::Late);
        if let (Some(delay), Some(_)) = (observed.hold_ms, &self.remote) {
            // Every process must hold, not just this one.
            self.tell_store(Op::Defer(delay));
        }
    }

    /// Sends an operation to the store without waiting for it (a failure marks it down).
    fn tell_store(&self, op: Op<'static>) {
        if let Some(remote) = &self.remote {
            let (store, key, rate) = (remote.store.clone(), remote.key.clone(), remote.rate);
            let budget = remote.budget.get().map(|b| b.capacity);
            spawn_local(async move {
                let _ = store.run(&key, op, rate, budget).await;
            });
        }
    }

    /// Spends a retry's cost from the shared budget. With a store, the store's budget decides
    /// (the local one while it is down); without, the caller used the local one already.
    pub async fn charge(&self, cost: f64) -> bool {
        let Some(remote) = &self.remote else {
            return true;
        };
        if remote.budget.get().is_none() {
            return true;
        }
        let capacity = remote.budget.get().map(|b| b.capacity);
        if !remote.store.is_down() {
            let refund = remote.refunds.replace(0.0);
            let op = Op::Charge { cost, refund };
            match remote
                .store
                .run(&remote.key, op, remote.rate, capacity)
                .await
            {
                Ok(Answer::Charged) => return true,
                Ok(_) => return false,
                Err(_) => remote.refunds.set(remote.refunds.get() + refund),
            }
        }
        self.with(|g| match g.budget_mut() {
            Some(b) if b.available() >= cost => {
                b.withdraw_amount(cost);
                true
            }
            Some(_) => false,
            None => true,
        })
    }

    /// Owes a success's refund to the shared budget; it is credited with the next charge,
    /// which is when it matters, so a success costs no call to the store.
    pub fn refund(&self, amount: f64) {
        if let Some(remote) = &self.remote {
            remote.refunds.set(remote.refunds.get() + amount);
        }
    }

    /// Tells every process the quota is spent for `ms` (0 reopens it).
    pub fn share_quota(&self, ms: Millis) {
        self.tell_store(Op::Quota(ms));
    }

    /// An admitted call's attempt is over: restarts an anchored refill, re-timing the line.
    pub fn responded(&self, ticket: Ticket) {
        if let Some(remote) = &self.remote {
            let anchored = remote
                .anchor
                .borrow()
                .as_ref()
                .is_some_and(|(t, _)| *t == ticket);
            if anchored {
                if let Some((_, id)) = remote.anchor.borrow_mut().take() {
                    let (store, key, rate) =
                        (remote.store.clone(), remote.key.clone(), remote.rate);
                    spawn_local(async move {
                        let _ = store.run(&key, Op::Resume(&id), rate, None).await;
                    });
                }
            }
        }
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
    pub fn probe_running(&self, wait: &Slot<()>) -> bool {
        match self.probe.borrow_mut().as_mut() {
            Some(waiting) => {
                waiting.push(wait.clone());
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
            self.settle(drained, &mut || Refusal::Exhausted(end));
            // Unknown period end: close for a day; resetQuota() reopens sooner.
            self.share_quota(until.map_or(86_400_000.0, |u| (u - now).max(1.0)));
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

    /// The timer fired: ask the store for the head, or (locally, or while the store is down)
    /// poll the local bucket.
    fn wake(self: Rc<Self>, due: Option<Millis>) {
        match &self.remote {
            Some(remote) if !remote.store.is_down() => self.pump(),
            _ => self.poll_local(due),
        }
    }

    /// Asks the store for the head of the line, one head at a time, until the store says
    /// "not yet" (then one timer for when it said) or the line is empty.
    fn pump(self: Rc<Self>) {
        let Some(remote) = &self.remote else { return };
        if remote.pumping.replace(true) {
            return;
        }
        spawn_local(async move {
            self.pump_line().await;
            if let Some(remote) = &self.remote {
                remote.pumping.set(false);
            }
        });
    }

    async fn pump_line(self: &Rc<Self>) {
        let Some(remote) = &self.remote else { return };
        loop {
            let now = clock::now();
            let Some((ticket, deadline)) = self.with(|g| g.head()) else {
                return;
            };
            if deadline < now {
                let expired = self.with(|g| g.expire_head());
                self.settle(expired.into_iter().collect(), &mut || Refusal::Late);
                continue;
            }
            if remote.store.is_down() {
                return self.store_down();
            }
            let id = format!("{}-{}", remote.process_id, ticket.id());
            let capacity = remote.budget.get().map(|b| b.capacity);
            let answer = remote
                .store
                .run(&remote.key, Op::Admit(&id), remote.rate, capacity)
                .await;
            let now = clock::now();
            match answer {
                Ok(Answer::Admitted { anchor, next_ms }) => {
                    // The head may have left (aborted) while we asked; the token goes to
                    // whoever is at the head now (an anchor it carries then resumes by itself).
                    let admitted = {
                        let mut state = self.state.borrow_mut();
                        let State { gate, waiters } = &mut *state;
                        let asked = |t: Ticket| waiters.get(&t.id()).map_or(now, |w| w.asked);
                        let head = gate.head().map(|(t, _)| t);
                        head.and_then(|t| gate.admit_head(now - asked(t)))
                            .and_then(|t| waiters.remove(&t.id()).map(|w| (t, w)))
                    };
                    if let Some((admitted, waiter)) = admitted {
                        if anchor {
                            *remote.anchor.borrow_mut() = Some((admitted, id));
                        }
                        self.unwatch(admitted, &waiter);
                        waiter.slot.settle(Ok(()));
                    }
                    // No token for the next head yet: wait for it rather than ask now.
                    if next_ms > 0.0 && self.with(|g| g.waiting()) > 0 {
                        remote.ready_at.set(now + next_ms);
                        if let Some(timer) = self.timer.borrow_mut().as_mut() {
                            timer.set(now + next_ms, now);
                        }
                        return;
                    }
                }
                Ok(Answer::Wait(ms)) => {
                    remote.ready_at.set(now + ms);
                    if let Some(timer) = self.timer.borrow_mut().as_mut() {
                        timer.set(now + ms, now);
                    }
                    return;
                }
                Ok(Answer::Exhausted(ms)) => {
                    let drained = self.with(|g| g.quota_closed(now, ms));
                    let end = Some(clock::wall_now() + ms);
                    self.settle(drained, &mut || Refusal::Exhausted(end));
                    return;
                }
                Ok(_) | Err(_) => return self.store_down(),
            }
        }
    }

    /// The store did not answer: fail closed, or carry on locally at the fail-safe share
    /// (the next wake-up after `retryMs` asks the store again).
    fn store_down(self: &Rc<Self>) {
        let closed = self
            .store()
            .is_some_and(|s| s.on_failure() == OnFailure::Closed);
        if closed {
            let drained = self.with(|g| g.drain());
            self.settle(drained, &mut || Refusal::StoreDown);
        } else {
            self.clone().poll_local(None);
        }
    }

    /// Admits whoever the local bucket lets through and lets go of the late, then re-arms for
    /// the next, or leaves no timer.
    fn poll_local(self: Rc<Self>, due: Option<Millis>) {
        let now = clock::now();
        // A timer that fired a hair early is on time (see `EARLY_MS`).
        let now = match due {
            Some(due) if due > now && due - now <= EARLY_MS => due,
            _ => now,
        };
        let (wakeup, admitted) = {
            let mut state = self.state.borrow_mut();
            let State { gate, waiters } = &mut *state;
            let wakeup = gate.poll(now, |t| waiters.get(&t.id()).map_or(now, |w| w.asked));
            let admitted: Vec<(Ticket, Waiter)> = wakeup
                .admitted
                .iter()
                .filter_map(|&t| waiters.remove(&t.id()).map(|w| (t, w)))
                .collect();
            (wakeup, admitted)
        };
        for (ticket, waiter) in admitted {
            self.unwatch(ticket, &waiter);
            waiter.slot.settle(Ok(()));
        }
        self.settle(wakeup.expired, &mut || Refusal::Late);
        if let Some(due) = wakeup.next {
            // While the store is down, come back no later than when it may be up again.
            let retry = self.store().map_or(due, |_| due.min(now + 1_000.0));
            self.arm(retry, now);
        }
    }

    /// Settles waiters already out of the core's line, and drops the timer if nobody is left.
    /// `refusal` makes each one's error (`dyn`: one copy of this for every caller).
    fn settle(&self, tickets: Vec<Ticket>, refusal: &mut dyn FnMut() -> Refusal) {
        if tickets.is_empty() {
            return;
        }
        let (slots, empty) = {
            let mut state = self.state.borrow_mut();
            let left: Vec<(Ticket, Waiter)> = tickets
                .iter()
                .filter_map(|&t| state.waiters.remove(&t.id()).map(|w| (t, w)))
                .collect();
            (left, state.gate.waiting() == 0)
        };
        if empty {
            if let Some(timer) = self.timer.borrow_mut().as_mut() {
                timer.disarm();
            }
        }
        for (ticket, waiter) in slots {
            self.unwatch(ticket, &waiter);
            waiter.slot.settle(Err(refusal()));
        }
    }

    /// Takes a waiter out of line and rejects it.
    fn cancel(&self, ticket: Ticket, refusal: Refusal) {
        let cancelled = self.state.borrow_mut().gate.cancel(ticket);
        if cancelled {
            let mut refusal = Some(refusal);
            self.settle(vec![ticket], &mut || {
                refusal.take().unwrap_or(Refusal::Late)
            });
        }
    }
}

/// `n` as 16 lower-case hex digits (by hand: `{:016x}` brings padded integer formatting).
fn hex(n: u64) -> String {
    (0..16)
        .rev()
        .map(|i| char::from(b"0123456789abcdef"[(n >> (4 * i) & 15) as usize]))
        .collect()
}

/// A time on the gate's clock as Unix milliseconds.
fn to_wall(at: Option<Millis>, now: Millis) -> Option<f64> {
    at.map(|at| clock::wall_now() + (at - now))
}

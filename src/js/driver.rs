//! The gates made live: the core's [`Gates`] driven in real time, one driver per thread. The
//! driver performs what the gates ask (attempts through `attempt.js`, bodies disposed of, the
//! `/usage` probe, Redis operations, hooks, settling callers' promises), reports back what
//! happened with `performance.now()`, and keeps the one timer where the gates ask for it. It
//! decides nothing.

use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::spawn_local;

use super::attempt::{self, global_fetch};
use super::body;
use super::calls::{self, CallArgs, JsCall, Waiter};
use super::clock;
use super::errors::{abort_reason, range_error};
use super::events::Events;
use super::headers;
use super::home::JsHome;
use super::metrics::Metrics;
use super::cache_wake;
use super::options::{CacheCell, Config};
use super::random::process_id;
use super::redis::RedisStore;
use super::replay;
use super::requests;
use super::timer::Timer;
use super::watch::Watches;
use crate::core::base::map::Map;
use crate::core::base::slab::Mirror;
use crate::core::gate::action::Event;
use crate::core::gates::action::{Action, Refused, Started};
use crate::core::gates::ids::{CallRef, GateId, WrapperId};
use crate::core::gates::profile::{Request, StoreId};
use crate::core::gates::Gates;
use crate::core::rules::classify::{Ended, Failure};
use crate::core::Millis;

/// `attempt.js`'s `settle(id, value, how, status, feedback)` for attempts the driver sends.
type AttemptEnded = Closure<dyn FnMut(f64, JsValue, u8, u16, Option<String>)>;

/// A gate's metrics attributes, by the name of the lane measured.
type ByLane = Vec<(Rc<str>, JsValue)>;

/// Every gate of this thread, and their calls' JavaScript sides.
pub struct Driver {
    gates: RefCell<Gates>,
    calls: RefCell<Mirror<JsCall>>,
    timer: RefCell<Timer>,
    /// The sweep's timer, which does not keep the process alive.
    sweeper: RefCell<Timer>,
    /// The signals of waiting calls, one listener per run of calls sharing one.
    watches: RefCell<Watches>,
    /// What those listeners call, with their watch's number.
    on_abort: Closure<dyn FnMut(u32)>,
    /// What `attempt.js` calls when an attempt the driver started ends.
    on_attempt: AttemptEnded,
    /// The stores, by the gates' numbers for them.
    stores: RefCell<Vec<Rc<RedisStore>>>,
    /// Each wrapper's configuration, for events about its gates.
    configs: RefCell<Mirror<Rc<Config>>>,
    /// Each gate's metrics attributes for each lane measured on it, made when first measured.
    attributes: RefCell<Mirror<ByLane>>,
    /// The 429 each gate keeps to give again to the calls a spent quota refuses, as the gates
    /// say (see [`QuotaAnswer`](crate::core::rules::quota::QuotaAnswer)).
    answers: RefCell<Map<GateId, JsValue>>,
    /// The caches whose machines wait for a time (a poll of the shared cache): the timer wakes
    /// them too.
    caches: RefCell<Vec<Weak<CacheCell>>>,
    /// Actions are being performed: a call made meanwhile (from a hook or an inner fetch)
    /// leaves its actions to the loop already running.
    driving: Cell<bool>,
    /// Calls keep to their own requests (`requests.rs`: workerd).
    per_request: Cell<bool>,
}

thread_local! {
    static DRIVER: Rc<Driver> = Rc::new_cyclic(|weak: &Weak<Driver>| {
        // The callbacks reach the driver while it lives.
        let live = |f: fn(&Rc<Driver>)| -> Box<dyn FnMut()> {
            let weak = weak.clone();
            Box::new(move || {
                if let Some(driver) = weak.upgrade() {
                    f(&driver);
                }
            })
        };
        let (abort, attempt) = (weak.clone(), weak.clone());
        Driver {
        gates: RefCell::new(Gates::new(Box::new(JsHome))),
        calls: RefCell::new(Mirror::default()),
        timer: RefCell::new(Timer::new(live(Driver::woken), true)),
        sweeper: RefCell::new(Timer::new(live(Driver::swept), false)),
        watches: RefCell::new(Watches::default()),
        on_abort: Closure::new(move |watch| {
            if let Some(driver) = abort.upgrade() {
                driver.aborted(watch);
            }
        }),
        on_attempt: Closure::new(move |id: f64, value, how, status, feedback: Option<String>| {
            if let Some(driver) = attempt.upgrade() {
                let how = Ended::from_code(how);
                driver.attempted(id as CallRef, value, how, status, feedback.as_deref());
            }
        }),
        stores: RefCell::new(Vec::new()),
        configs: RefCell::new(Mirror::default()),
        answers: RefCell::new(Map::default()),
        attributes: RefCell::new(Mirror::default()),
        caches: RefCell::new(Vec::new()),
        driving: Cell::new(false),
        per_request: Cell::new(false),
        }
    });
}

/// This thread's driver.
pub fn driver() -> Rc<Driver> {
    DRIVER.with(Rc::clone)
}

/// Turns per-request calls on for this thread (`requests.rs`): the edge entry, as it loads.
#[wasm_bindgen(js_name = perRequest)]
pub fn per_request() {
    if !driver().per_request.replace(true) {
        requests::listen(|| driver().tick());
    }
}

impl Driver {
    /// Runs `f` on the gates.
    pub fn with<R>(&self, f: impl FnOnce(&mut Gates) -> R) -> R {
        f(&mut self.gates.borrow_mut())
    }

    /// The number of `store` among the gates' stores: the gates it makes reach it.
    pub fn store(&self, store: &Rc<RedisStore>) -> StoreId {
        let id = self.with(|g| g.store(&store.identity(), store.settings()));
        self.stores.borrow_mut().push(store.clone());
        id
    }

    /// A wrapper's configuration joins the gates.
    pub fn add_wrapper(&self, wrapper: WrapperId, config: &Rc<Config>) {
        self.configs.borrow_mut().insert(wrapper, config.clone());
    }

    /// The wrappers whose calls are measured on `metrics` (one made with a `meter`, and its
    /// lanes), with their lanes' names.
    pub fn measured_by(&self, metrics: &Rc<Metrics>) -> Vec<(WrapperId, Rc<str>)> {
        let configs = self.configs.borrow();
        let measured = configs
            .iter()
            .filter(|(_, c)| (c.metrics.as_ref()).is_some_and(|m| Rc::ptr_eq(m, metrics)));
        measured.map(|(w, c)| (w, c.lane_name.clone())).collect()
    }

    /// A holder of `wrapper` is gone; with the last, its configuration goes too.
    pub fn release(&self, wrapper: WrapperId) {
        if self.with(|g| g.release(wrapper)) {
            self.configs.borrow_mut().remove(wrapper);
        }
    }

    /// Makes a call of `wrapper` and performs what follows at once. The caller then takes the
    /// outcome with [`outcome`](Self::outcome).
    pub fn start(
        self: &Rc<Self>,
        wrapper: WrapperId,
        config: &Rc<Config>,
        request: &Request,
        call: CallArgs,
    ) -> Result<CallRef, Refused> {
        let now = clock::now();
        let started = self.with(|g| g.start(now, wrapper, request));
        let Started { call: id, split } = started?;
        let js = JsCall::new(call, config, split);
        self.calls.borrow_mut().insert(id, js);
        self.drive_at(now);
        Ok(id)
    }

    /// What a call made or concluded synchronously came to (see [`calls::outcome`]).
    pub fn outcome(&self, call: CallRef) -> Result<Option<Millis>, Result<JsValue, JsValue>> {
        calls::outcome(&mut self.calls.borrow_mut(), call)
    }

    /// Whether each attempt of `call` sends a copy of its stream body (so the driver sends it).
    pub fn splits(&self, call: CallRef) -> bool {
        self.calls.borrow().get(call).is_some_and(|c| c.split)
    }

    /// The attempt's time limit the gate gave `call`.
    pub fn timeout(&self, call: CallRef) -> Millis {
        self.calls.borrow().get(call).map_or(0.0, |c| c.timeout)
    }

    /// The caller's promise for a call that goes on asynchronously: the driver settles it. Its
    /// signal is watched from now on (an attempt in flight watches it itself).
    pub fn promise(self: &Rc<Self>, call: CallRef) -> js_sys::Promise {
        let mut settle = None;
        let promise = js_sys::Promise::new(&mut |resolve, reject| settle = Some((resolve, reject)));
        let mut calls = self.calls.borrow_mut();
        let (Some(js), Some((resolve, reject))) = (calls.get_mut(call), settle) else {
            return js_sys::Promise::reject(&range_error("Unknown call"));
        };
        js.waiter = Waiter::Promise(resolve, reject);
        if let Some(signal) = &js.signal {
            let on_abort = self.on_abort.as_ref().unchecked_ref();
            js.watch = Some(self.watches.borrow_mut().add(signal, call, on_abort));
        }
        drop(calls);
        if self.per_request.get() {
            requests::waits(call, self.timer.borrow().left(clock::now()));
        }
        promise
    }

    /// A waiting call's own timer fired: wakes the gates if they are due; how long until they
    /// are due next (infinite: nothing is).
    fn tick(self: &Rc<Self>) -> Millis {
        let now = clock::now();
        if self.timer.borrow().left(now) == Some(0.0) {
            self.timer.borrow_mut().disarm();
            self.wake_at(now);
        }
        let left = self.timer.borrow().left(clock::now());
        left.unwrap_or(Millis::INFINITY)
    }

    /// The promise of a call just started or just attempted, which the driver settles (an
    /// attempt it was admitted to sent first), or what it already came to.
    pub fn pending(
        self: &Rc<Self>,
        call: CallRef,
    ) -> Result<js_sys::Promise, Result<JsValue, JsValue>> {
        if let Some(timeout) = self.outcome(call)? {
            self.send(call, timeout);
        }
        Ok(self.promise(call))
    }

    /// An attempt ended as `attempt.js` says (`status` and `feedback` are a response's: see
    /// [`headers::lookup`]); performs what follows.
    pub fn attempted(
        self: &Rc<Self>,
        call: CallRef,
        value: JsValue,
        how: Ended,
        status: u16,
        feedback: Option<&str>,
    ) {
        let now = clock::now();
        let lookup = headers::lookup(feedback);
        // Only a header's date or epoch needs the wall clock: without any, no read.
        let wall_now: &dyn Fn() -> Millis = match feedback {
            Some(_) => &clock::wall_now,
            None => &|| 0.0,
        };
        self.with(|g| g.attempt_ended(now, wall_now, call, how, status, &lookup));
        if how == Ended::CallerAborted {
            self.finish(call, Err(value));
            return self.drive_at(now);
        }
        if let Some(js) = self.calls.borrow_mut().get_mut(call) {
            js.last = Some(match how {
                Ended::Response => Ok(value),
                _ => Err(value),
            });
        }
        self.drive_at(now);
    }

    /// Performs every action the gates have, then sets the timer to what they ask for.
    pub fn drive(self: &Rc<Self>) {
        self.drive_at(clock::now());
    }

    /// As [`drive`](Self::drive), with the time already read.
    fn drive_at(self: &Rc<Self>, now: Millis) {
        if self.driving.replace(true) {
            return;
        }
        loop {
            let action = self.with(|g| g.poll_action(now));
            let Some(action) = action else { break };
            self.perform(action);
        }
        self.driving.set(false);
        let (due, sweep) = self.with(|g| (g.poll_timeout(), g.sweep_timeout(now)));
        let due = match (due, self.cache_due()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        set_timer(&self.timer, due, now);
        set_timer(&self.sweeper, sweep, now);
    }

    fn perform(self: &Rc<Self>, action: Action) {
        match action {
            Action::Send {
                call,
                timeout_ms,
                again,
            } => {
                let mut calls = self.calls.borrow_mut();
                let Some(js) = calls.get_mut(call) else {
                    return;
                };
                js.again = again;
                if let Waiter::Sync { send, .. } = &mut js.waiter {
                    // Being started: the caller sends it (the fast path) or has it sent.
                    *send = Some(timeout_ms);
                    return;
                }
                drop(calls);
                self.send(call, timeout_ms);
            }
            Action::Dispose { call, read, gate } => {
                let response = calls::last_response(&self.calls.borrow(), call);
                let discarded = async move { body::discard(&response?, read).await };
                self.then(discarded, move |driver, now, read| {
                    let (facts, kept) = read.map(|read| (read.facts, read.kept)).unzip();
                    let keeps = driver.with(|g| g.disposed(now, gate, call, facts));
                    if let (true, Some(kept)) = (keeps, kept) {
                        driver.answers.borrow_mut().insert(gate, kept);
                    }
                });
            }
            Action::ReadUsage { call } => {
                let response = calls::last_response(&self.calls.borrow(), call);
                let usage = async move { body::usage(&response?).await };
                self.then(usage, move |driver, now, usage| {
                    driver.with(|g| g.usage(now, call, usage));
                });
            }
            Action::StartProbe { probe, origin } => {
                let mut calls = self.calls.borrow_mut();
                if let Some(js) = calls.get(origin).map(JsCall::probe) {
                    calls.insert(probe, js);
                }
            }
            Action::Store {
                gate,
                id,
                op,
                store,
                scope,
                rate,
                budget,
            } => {
                let Some(store) = self.stores.borrow().get(store).cloned() else {
                    return;
                };
                let pending = store.run(store.key(&scope), &op, rate, budget, &process_id());
                self.then(pending, move |driver, now, answer| {
                    driver.with(|g| g.store_answered(now, gate, id, answer.ok()));
                });
            }
            Action::Share {
                store,
                credential,
                facts,
            } => {
                if let Some(store) = self.stores.borrow().get(store) {
                    store.share(&credential, &facts);
                }
            }
            Action::Recall {
                gate,
                store,
                credential,
            } => {
                let Some(store) = self.stores.borrow().get(store).cloned() else {
                    return;
                };
                self.then(store.recall(&credential), move |driver, now, facts| {
                    driver.with(|g| g.recalled(now, gate, facts));
                });
            }
            Action::Event {
                gate,
                call,
                event,
                users,
            } => self.emit(gate, call, event, &users),
            Action::Settle { call, end, answer } => {
                let answer = answer.and_then(|gate| self.answers.borrow().get(&gate).cloned());
                let result = calls::result(&mut self.calls.borrow_mut(), call, end, answer);
                self.finish(call, result);
            }
            Action::DropAnswer { gate } => {
                self.answers.borrow_mut().remove(&gate);
            }
            Action::Forgotten { gate } => {
                self.attributes.borrow_mut().remove(gate);
                self.answers.borrow_mut().remove(&gate);
            }
        }
    }

    /// Awaits `work`, then `report`s what it came to, at the time it came, and performs what
    /// follows.
    fn then<T>(
        self: &Rc<Self>,
        work: impl std::future::Future<Output = T> + 'static,
        report: impl FnOnce(&Driver, Millis, T) + 'static,
    ) {
        let driver = self.clone();
        spawn_local(async move {
            let done = work.await;
            report(&driver, clock::now(), done);
            driver.drive();
        });
    }

    /// Sends a call's attempt through `attempt.js`, which reports back to `on_attempt`.
    pub fn send(self: &Rc<Self>, call: CallRef, timeout: Millis) {
        let mut calls = self.calls.borrow_mut();
        let Some(js) = calls.get_mut(call) else {
            return;
        };
        let again = js.again;
        let (input, init) = match &js.waiter {
            Waiter::Probe(Some((url, init))) => (url.clone(), init.clone()),
            Waiter::Probe(None) => {
                drop(calls);
                // No request could be made: the probe finds nothing.
                return self.with(|g| g.failed(clock::now(), call, Failure::UNSENT));
            }
            _ if js.split && !again => {
                // No attempt can follow: the stream (or the copy kept for this attempt) goes
                // as it is, and nothing more is kept.
                js.split = false;
                (js.input.clone(), js.init.clone())
            }
            _ if js.split => {
                // One copy of the stream goes now; the other is kept for the next attempt.
                let parts = replay::split(&js.input, &js.init);
                js.input = parts.get(2);
                js.init = parts.get(3);
                (parts.get(0), parts.get(1))
            }
            _ => (js.input.clone(), js.init.clone()),
        };
        let fetch = match &js.config.fetch {
            Some(fetch) => Ok(fetch.clone()),
            None => global_fetch(),
        };
        drop(calls);
        let Ok(fetch) = fetch else {
            return self.with(|g| g.failed(clock::now(), call, Failure::UNSENT));
        };
        let settle = self.on_attempt.as_ref().unchecked_ref();
        attempt::send(&fetch, &input, &init, timeout, settle, call as f64);
    }

    /// Settles the caller's promise (or keeps the result for a synchronous caller) and forgets
    /// the call.
    fn finish(&self, call: CallRef, result: Result<JsValue, JsValue>) {
        let mut calls = self.calls.borrow_mut();
        let Some(js) = calls.get_mut(call) else {
            return;
        };
        if let Waiter::Sync { end, .. } = &mut js.waiter {
            *end = Some(result);
            return;
        }
        let Some(js) = calls.remove(call) else {
            return;
        };
        drop(calls);
        if let Some(watch) = js.watch {
            self.watches.borrow_mut().remove(watch, call);
        }
        if self.per_request.get() {
            requests::settled(call);
        }
        js.settle(result);
    }

    /// A signal some waiting calls share aborted: each leaves its gate and rejects with its
    /// reason, unless its attempt is out (that attempt ends through the signal by itself).
    fn aborted(self: &Rc<Self>, watch: u32) {
        let Some((signal, calls)) = self.watches.borrow_mut().take(watch) else {
            return;
        };
        let reason = abort_reason(&signal);
        let now = clock::now();
        for call in calls {
            if !self.with(|g| g.abort(now, call)) {
                continue;
            }
            if let Some(js) = self.calls.borrow_mut().get_mut(call) {
                js.watch = None;
            }
            self.finish(call, Err(reason.clone()));
        }
        self.drive();
    }

    /// The timer fired: the gates and the caches that wait for a time are woken.
    fn woken(self: &Rc<Self>) {
        self.timer.borrow_mut().fired();
        self.wake_at(clock::now());
    }

    /// Wakes the caches that wait for a time and the gates, at `now`.
    fn wake_at(self: &Rc<Self>, now: Millis) {
        let caches: Vec<Rc<CacheCell>> = (self.caches.borrow().iter())
            .filter_map(Weak::upgrade)
            .collect();
        for cache in caches {
            cache_wake::wake(&cache, now);
        }
        self.with(|g| g.handle_timeout(now));
        self.drive_at(now);
    }

    /// `cache`'s machine waits for a time: the timer wakes it (see [`drive`](Self::drive)).
    pub fn watch_cache(&self, cache: &Rc<CacheCell>) {
        let mut caches = self.caches.borrow_mut();
        caches.retain(|c| c.strong_count() > 0);
        if !caches.iter().any(|c| c.as_ptr() == Rc::as_ptr(cache)) {
            caches.push(Rc::downgrade(cache));
        }
    }

    /// When the earliest cache machine waits for; the caches that wait for nothing are let go.
    fn cache_due(&self) -> Option<Millis> {
        let mut caches = self.caches.borrow_mut();
        let mut due: Option<Millis> = None;
        caches.retain(|c| {
            let Some(c) = c.upgrade() else { return false };
            let Ok(c) = c.try_borrow() else { return true };
            match c.0.next_wake() {
                Some(at) => {
                    due = Some(due.map_or(at, |d| d.min(at)));
                    true
                }
                None => false,
            }
        });
        due
    }

    /// The sweep's timer fired.
    fn swept(self: &Rc<Self>) {
        self.fired(&self.sweeper, Gates::handle_sweep);
    }

    /// The timer in `cell` fired: the gates `handle` it now, then whatever follows is done.
    fn fired(self: &Rc<Self>, cell: &RefCell<Timer>, handle: fn(&mut Gates, Millis)) {
        cell.borrow_mut().fired();
        let now = clock::now();
        self.with(|g| handle(g, now));
        self.drive_at(now);
    }

    /// Records an admission's wait or a backoff on the call's wrapper's metrics, if it has any.
    fn measure(&self, gate: GateId, call: CallRef, event: &Event) {
        let Some(config) = self.calls.borrow().get(call).map(|js| js.config.clone()) else {
            return;
        };
        if let Some(metrics) = &config.metrics {
            metrics.record(event, || self.attributes(gate, &config.lane_name));
        }
    }

    /// The metrics attributes of `gate`'s calls in the lane called `lane`.
    fn attributes(&self, gate: GateId, lane: &Rc<str>) -> JsValue {
        let known = self.attributes.borrow().get(gate).and_then(|lanes| {
            let found = lanes.iter().find(|(name, _)| name == lane);
            found.map(|(_, attributes)| attributes.clone())
        });
        if let Some(attributes) = known {
            return attributes;
        }
        let scope = self.with(|g| g.scope(gate).map(|s| s.as_str().to_owned()));
        let attributes = Metrics::attributes(scope.as_deref().unwrap_or_default(), lane);
        let mut all = self.attributes.borrow_mut();
        match all.get_mut(gate) {
            Some(lanes) => lanes.push((lane.clone(), attributes.clone())),
            None => all.insert(gate, vec![(lane.clone(), attributes.clone())]),
        }
        attributes
    }

    /// Tells the hooks: a call's own wrapper for events about a call, the gate's `users` for
    /// events about the gate.
    fn emit(&self, gate: GateId, call: Option<CallRef>, event: Event, users: &[WrapperId]) {
        if let Some(call) = call {
            self.measure(gate, call, &event);
        }
        let Some(scope) = self.with(|g| g.scope(gate).map(|s| s.as_str().to_owned())) else {
            return;
        };
        let hooks = match call {
            Some(call) => {
                let events = self
                    .calls
                    .borrow()
                    .get(call)
                    .map(|js| js.config.events.clone());
                events.into_iter().collect()
            }
            None => {
                let configs = self.configs.borrow();
                let mut hooks: Vec<Events> = Vec::new();
                for config in users.iter().filter_map(|&w| configs.get(w)) {
                    if config.events.is_set() && !hooks.contains(&config.events) {
                        hooks.push(config.events.clone());
                    }
                }
                hooks
            }
        };
        for hook in hooks {
            hook.deliver(&scope, &event);
        }
    }
}

/// Arms the timer in `cell` for `due`, or disarms it when nothing is due.
fn set_timer(cell: &RefCell<Timer>, due: Option<Millis>, now: Millis) {
    match due {
        Some(due) => cell.borrow_mut().arm(due, now),
        None => cell.borrow_mut().disarm(),
    }
}

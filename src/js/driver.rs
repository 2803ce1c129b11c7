//! A gate made live: the core's call machine ([`Gate`]) driven in real time. The driver
//! performs the gate's actions (attempts through `attempt.js`, bodies disposed of, the `/usage`
//! probe, Redis operations, hooks, settling callers' promises), feeds back what happened with
//! `performance.now()`, and keeps the gate's one timer set to what the gate asks for. It decides
//! nothing.

use std::cell::{Cell, OnceCell, RefCell};
use std::rc::{Rc, Weak};

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::spawn_local;

use super::attempt::{self, global_fetch, How};
use super::body;
use super::clock;
use super::errors::{abandoned_error, abort_reason, quota_error, range_error};
use super::events::Events;
use super::figures::{to_js, Learned};
use super::headers;
use super::metrics::Metrics;
use super::options::Config;
use super::props::set;
use super::random::process_id;
use super::redis::RedisStore;
use super::registry;
use super::replay;
use super::timer::Timer;
use super::watch::Watches;
use crate::core::base::slab::Mirror;
use crate::core::gate::action::{Action, End, Event};
use crate::core::gate::call::CallSpec;
use crate::core::gate::figures::Figures;
use crate::core::gate::{CallId, Gate};
use crate::core::gates::scope::Scope;
use crate::core::rules::classify::Failure;
use crate::core::rules::quota::usage_url_for;
use crate::core::Millis;
use crate::store::Shared;

/// What the caller's promise is.
enum Waiter {
    /// The call is being started or concluded synchronously: an admission (its attempt's time
    /// limit) or an end is kept for the caller to pick up before it returns.
    Sync {
        send: Option<Millis>,
        end: Option<Result<JsValue, JsValue>>,
    },
    /// A promise the driver settles: its resolve and reject functions. Nothing else per
    /// waiter (no task, no future): a call settles by one call into JavaScript, exactly once,
    /// because the call is forgotten as it settles.
    Promise(js_sys::Function, js_sys::Function),
    /// The gate's `/usage` probe: the request to send, if one could be made.
    Probe(Option<(JsValue, JsValue)>),
}

/// What a caller's `fetch(input, init)` brings to [`GateDriver::start`].
pub struct Request {
    /// `fetch`'s arguments.
    pub input: JsValue,
    /// `fetch`'s arguments.
    pub init: JsValue,
    /// The caller's signal.
    pub signal: Option<web_sys::AbortSignal>,
    /// Its body is a stream that each attempt sends a copy of.
    pub split: bool,
    /// Its route, when the wrapper learns allowances.
    pub route: Option<String>,
}

/// A call's JavaScript side.
struct JsCall {
    input: JsValue,
    init: JsValue,
    signal: Option<web_sys::AbortSignal>,
    config: Rc<Config>,
    /// The last attempt's result: a response, or the inner fetch's rejection.
    last: Option<Result<JsValue, JsValue>>,
    /// The last attempt's time limit, for the fast path.
    timeout: Millis,
    /// Its body is a stream that each attempt sends a copy of.
    split: bool,
    waiter: Waiter,
    watch: Option<u32>,
    /// The request's route, when the wrapper learns allowances (limiter buckets are told
    /// apart by route).
    route: Option<String>,
}

/// An attempt that could not be sent (no fetch to call, no probe request): it counts as a
/// network failure, and the call goes on as the policy says.
const UNSENT: Failure = Failure::Rejected {
    request_valid: true,
};

/// A credential's 128-bit fingerprint, as wrappers find its gate by.
pub type Print = (u64, u64);

/// A wrapper that uses the gate: when the gate is forgotten (idle), the wrapper forgets it too
/// and keeps its figures in its totals.
pub trait Owner {
    /// The gate known by `print` is gone; these were its figures.
    fn forget(&self, print: Print, figures: &Figures);
}

/// The wrappers that know a gate, and the fingerprint they know it by.
type Owners = (Option<Print>, Vec<Weak<dyn Owner>>);

/// `attempt.js`'s `settle(id, value, how, status)` for attempts the driver sends.
type AttemptEnded = Closure<dyn FnMut(f64, JsValue, u8, u16)>;

/// One credential's gate, shared by every wrapper in the process.
pub struct GateDriver {
    scope: Scope,
    gate: RefCell<Gate>,
    calls: RefCell<Mirror<JsCall>>,
    timer: RefCell<Option<Timer>>,
    /// The signals of waiting calls, one listener per run of calls sharing one.
    watches: RefCell<Watches>,
    /// What those listeners call, with their watch's number.
    on_abort: OnceCell<Closure<dyn FnMut(u32)>>,
    /// What `attempt.js` calls when an attempt the driver started ends.
    on_attempt: OnceCell<AttemptEnded>,
    store: Option<(Rc<RedisStore>, Rc<String>)>,
    /// The hooks of every wrapper that used the gate, for events about the gate itself.
    hooks: RefCell<Vec<Events>>,
    /// Actions are being performed: a call made meanwhile (from a hook or an inner fetch)
    /// leaves its actions to the loop already running.
    driving: Cell<bool>,
    /// The wrappers that know the gate, and the fingerprint they know it by.
    owners: RefCell<Owners>,
    /// When it was last used, in calls made process-wide (for `stats()`'s order).
    used: Cell<u64>,
    /// Its metrics' attributes, made when first measured.
    attributes: OnceCell<JsValue>,
}

thread_local! {
    /// Calls made process-wide: a clock for "most recently used".
    static CALLS_MADE: Cell<u64> = const { Cell::new(0) };
}

impl GateDriver {
    /// A driver for `gate`, the gate of `scope`, with its state in `store` when there is one.
    pub fn new(scope: Scope, gate: Gate, store: Option<Rc<RedisStore>>) -> Rc<GateDriver> {
        let store = store.map(|s| {
            let key = Rc::new(s.key(&scope));
            (s, key)
        });
        Rc::new(GateDriver {
            scope,
            gate: RefCell::new(gate),
            calls: RefCell::new(Mirror::default()),
            timer: RefCell::new(None),
            watches: RefCell::new(Watches::default()),
            on_abort: OnceCell::new(),
            on_attempt: OnceCell::new(),
            store,
            hooks: RefCell::new(Vec::new()),
            driving: Cell::new(false),
            owners: RefCell::new((None, Vec::new())),
            used: Cell::new(0),
            attributes: OnceCell::new(),
        })
    }

    /// The gate's timer, made the first time the gate needs waking (most gates never wait).
    fn timer(self: &Rc<Self>) -> std::cell::RefMut<'_, Timer> {
        let weak = Rc::downgrade(self);
        std::cell::RefMut::map(self.timer.borrow_mut(), |timer| {
            timer.get_or_insert_with(|| {
                Timer::new(Box::new(move || {
                    if let Some(driver) = weak.upgrade() {
                        driver.woken();
                    }
                }))
            })
        })
    }

    /// What an abort listener of a waiting call calls, made when first needed.
    fn on_abort(self: &Rc<Self>) -> &js_sys::Function {
        let weak = Rc::downgrade(self);
        self.on_abort
            .get_or_init(|| {
                Closure::<dyn FnMut(u32)>::new(move |watch| {
                    if let Some(driver) = weak.upgrade() {
                        driver.aborted(watch);
                    }
                })
            })
            .as_ref()
            .unchecked_ref()
    }

    /// What `attempt.js` calls when an attempt the driver sent ends, made when first needed.
    fn on_attempt(self: &Rc<Self>) -> &js_sys::Function {
        let weak = Rc::downgrade(self);
        self.on_attempt
            .get_or_init(|| {
                Closure::<dyn FnMut(f64, JsValue, u8, u16)>::new(
                    move |id: f64, value, how, status| {
                        if let Some(driver) = weak.upgrade() {
                            driver.attempted(id as CallId, value, How::from_js(how), status);
                        }
                    },
                )
            })
            .as_ref()
            .unchecked_ref()
    }

    /// The credential's scope (a hash).
    pub fn scope(&self) -> &Scope {
        &self.scope
    }

    /// The shared store, when there is one.
    pub fn store(&self) -> Option<&RedisStore> {
        self.store.as_ref().map(|(s, _)| &**s)
    }

    /// Runs `f` on the gate.
    pub fn with<R>(&self, f: impl FnOnce(&mut Gate) -> R) -> R {
        f(&mut self.gate.borrow_mut())
    }

    /// Whether the gate's timer is set.
    pub fn timer_armed(&self) -> bool {
        self.timer.borrow().as_ref().is_some_and(Timer::is_armed)
    }

    /// A wrapper keeps the gate under `print`; it hears when the gate is forgotten.
    pub fn adopt(&self, print: Print, owner: Weak<dyn Owner>) {
        let mut owners = self.owners.borrow_mut();
        owners.0 = Some(print);
        owners.1.retain(|o| o.strong_count() > 0);
        owners.1.push(owner);
    }

    /// When the gate was last used (a count of calls made process-wide).
    pub fn used(&self) -> u64 {
        self.used.get()
    }

    /// Whether the gate holds nothing worth keeping (see `Gate::idle`) and waits for nothing.
    pub fn idle(&self, now: Millis) -> bool {
        !self.driving.get() && !self.timer_armed() && self.with(|g| g.idle(now))
    }

    /// The gate is forgotten: every wrapper that knew it forgets it and keeps its figures.
    pub fn retire(&self, now: Millis) {
        let figures = self.with(|g| g.figures(now));
        let (print, owners) = std::mem::take(&mut *self.owners.borrow_mut());
        let Some(print) = print else { return };
        for owner in owners.iter().filter_map(Weak::upgrade) {
            owner.forget(print, &figures);
        }
    }

    /// Remembers a wrapper's hook for events about the gate itself.
    pub fn hear(&self, events: &Events) {
        let mut hooks = self.hooks.borrow_mut();
        if events.is_set() && !hooks.iter().any(|h| h == events) {
            hooks.push(events.clone());
        }
    }

    /// Makes a call and performs what follows at once. The caller then takes the outcome with
    /// [`outcome`](Self::outcome).
    pub fn start(self: &Rc<Self>, spec: CallSpec, config: &Rc<Config>, request: Request) -> CallId {
        let now = clock::now();
        let tick = CALLS_MADE.with(|c| {
            c.set(c.get() + 1);
            c.get()
        });
        self.used.set(tick);
        let call = self.gate.borrow_mut().start(now, spec);
        let Request {
            input,
            init,
            signal,
            split,
            route,
        } = request;
        let js = JsCall {
            input,
            init,
            signal,
            config: config.clone(),
            last: None,
            timeout: 0.0,
            split,
            waiter: Waiter::Sync {
                send: None,
                end: None,
            },
            watch: None,
            route,
        };
        self.calls.borrow_mut().insert(call, js);
        self.drive_at(now);
        call
    }

    /// What a call made or concluded synchronously came to: `Ok(Some(timeout))` when it was
    /// admitted and its attempt is the caller's to send, `Ok(None)` when it waits (its promise
    /// is [`promise`](Self::promise)), or its end.
    pub fn outcome(&self, call: CallId) -> Result<Option<Millis>, Result<JsValue, JsValue>> {
        let mut calls = self.calls.borrow_mut();
        let Some(js) = calls.get_mut(call) else {
            return Ok(None);
        };
        match &mut js.waiter {
            Waiter::Sync { end: Some(_), .. } => {
                let Some(JsCall {
                    waiter: Waiter::Sync { end: Some(end), .. },
                    split,
                    input,
                    init,
                    ..
                }) = calls.remove(call)
                else {
                    return Ok(None);
                };
                if split {
                    replay::release(&input, &init);
                }
                Err(end)
            }
            Waiter::Sync { send, .. } => match send.take() {
                Some(timeout) => {
                    js.timeout = timeout;
                    Ok(Some(timeout))
                }
                None => Ok(None),
            },
            _ => Ok(None),
        }
    }

    /// Whether each attempt of `call` sends a copy of its stream body (so the driver sends it).
    pub fn splits(&self, call: CallId) -> bool {
        self.calls.borrow().get(call).is_some_and(|c| c.split)
    }

    /// The attempt's time limit the gate gave `call`.
    pub fn timeout(&self, call: CallId) -> Millis {
        self.calls.borrow().get(call).map_or(0.0, |c| c.timeout)
    }

    /// The caller's promise for a call that goes on asynchronously: the driver settles it. Its
    /// signal is watched from now on (an attempt in flight watches it itself).
    pub fn promise(self: &Rc<Self>, call: CallId) -> js_sys::Promise {
        let mut settle = None;
        let promise = js_sys::Promise::new(&mut |resolve, reject| settle = Some((resolve, reject)));
        let mut calls = self.calls.borrow_mut();
        let (Some(js), Some((resolve, reject))) = (calls.get_mut(call), settle) else {
            return js_sys::Promise::reject(&range_error("Unknown call"));
        };
        js.waiter = Waiter::Promise(resolve, reject);
        if let Some(signal) = &js.signal {
            let on_abort = self.on_abort();
            js.watch = Some(self.watches.borrow_mut().add(signal, call, on_abort));
        }
        promise
    }

    /// What `call` learned of its route's limiter bucket (see `Action::Route`): the route's
    /// calls still held or waiting here, never sent, move to the bucket's gate when it is
    /// another, rather than wait for this bucket's tokens; held ones here join the line.
    fn reroute(self: &Rc<Self>, call: CallId, bucket: Option<&str>) {
        let known = self.calls.borrow().get(call).and_then(|js| {
            let route = js.route.clone()?;
            Some((route, js.config.clone()))
        });
        let Some((route, config)) = known else {
            return;
        };
        let credential = self.scope.credential();
        let target = match bucket {
            Some(bucket) => {
                registry::heard_route(&credential, &route, bucket);
                self.share(&[Shared::Route(route.clone(), bucket.to_owned())]);
                registry::routed(&credential, &route).unwrap_or(credential)
            }
            None => {
                registry::scout_ended(&credential, &route);
                self.scope.clone()
            }
        };
        let same: Vec<CallId> = self
            .calls
            .borrow()
            .iter()
            .filter(|&(id, js)| id != call && js.route.as_deref() == Some(route.as_str()))
            .map(|(id, _)| id)
            .collect();
        let elsewhere = match target == self.scope {
            true => None,
            false => registry::gate_for(&target, &config).ok(),
        };
        let now = clock::now();
        for id in same {
            let Some(driver) = &elsewhere else {
                self.gate.borrow_mut().release_held(now, id);
                continue;
            };
            let Some(spec) = self.gate.borrow_mut().withdraw(id) else {
                continue;
            };
            let Some(mut js) = self.calls.borrow_mut().remove(id) else {
                continue;
            };
            if let Some(watch) = js.watch.take() {
                self.watches.borrow_mut().remove(watch, id);
            }
            driver.take_over(spec, js);
        }
    }

    /// Tells the fleet `facts` (and the credential's first bucket, when known), when the gate
    /// lives in a store.
    fn share(&self, facts: &[Shared]) {
        let Some((store, _)) = &self.store else {
            return;
        };
        let credential = self.scope.credential();
        let mut facts = facts.to_vec();
        facts.extend(registry::first_bucket(&credential).map(Shared::First));
        store.share(&credential, &facts);
    }

    /// A learning gate in a store starts from what the fleet learned: the credential's first
    /// bucket, the routes' buckets, and this gate's estimate (when it has heard nothing yet).
    pub fn recall(self: &Rc<Self>, store: &RedisStore) {
        let recall = store.recall(&self.scope.credential());
        let weak = Rc::downgrade(self);
        spawn_local(async move {
            let facts = recall.await;
            if let Some(driver) = weak.upgrade() {
                driver.recalled(facts);
            }
        });
    }

    fn recalled(self: &Rc<Self>, facts: Vec<Shared>) {
        let credential = self.scope.credential();
        let now = clock::now();
        for fact in &facts {
            match fact {
                Shared::First(bucket) if self.scope == credential => {
                    self.with(|g| g.assume_bucket(bucket));
                }
                Shared::Estimate(scope, rate) if scope == self.scope.as_str() => {
                    self.with(|g| g.adopt(now, *rate));
                }
                _ => {}
            }
        }
        for fact in facts {
            if let Shared::Route(route, bucket) = fact {
                registry::heard_route(&credential, &route, &bucket);
            }
        }
        self.drive_at(now);
    }

    /// Makes a call another gate gave up (see [`reroute`](Self::reroute)), its caller still
    /// waiting on the same promise.
    fn take_over(self: &Rc<Self>, spec: CallSpec, mut js: JsCall) {
        let now = clock::now();
        let call = self.gate.borrow_mut().start(now, spec);
        if let Some(signal) = &js.signal {
            js.watch = Some(self.watches.borrow_mut().add(signal, call, self.on_abort()));
        }
        self.calls.borrow_mut().insert(call, js);
        self.drive_at(now);
    }

    /// Sends the attempt of a call admitted while it was being started (not by the fast path).
    pub fn send_now(self: &Rc<Self>, call: CallId, timeout: Millis) {
        self.send(call, timeout);
    }

    /// An attempt ended as `attempt.js` says (`status` is a response's); performs what follows.
    pub fn attempted(self: &Rc<Self>, call: CallId, value: JsValue, how: How, status: u16) {
        let now = clock::now();
        match how {
            How::CallerAborted => {
                self.gate.borrow_mut().cancel(now, call);
                return self.finish(call, Err(value));
            }
            How::Response => {
                let lookup = headers::lookup(&value);
                let mut gate = self.gate.borrow_mut();
                gate.responded(now, &clock::wall_now, call, status, &lookup);
            }
            How::TimedOut => self.gate.borrow_mut().failed(now, call, Failure::TimedOut),
            How::Failed | How::Invalid => {
                let failure = Failure::Rejected {
                    request_valid: how == How::Failed,
                };
                self.gate.borrow_mut().failed(now, call, failure);
            }
        }
        if let Some(js) = self.calls.borrow_mut().get_mut(call) {
            js.last = Some(match how {
                How::Response => Ok(value),
                _ => Err(value),
            });
        }
        self.drive_at(now);
    }

    /// Performs every action the gate has, then sets its timer to what it asks for.
    pub fn drive(self: &Rc<Self>) {
        self.drive_at(clock::now());
    }

    /// As [`drive`](Self::drive), with the time already read.
    fn drive_at(self: &Rc<Self>, now: Millis) {
        if self.driving.replace(true) {
            return;
        }
        loop {
            let action = self.gate.borrow_mut().poll_action(now);
            let Some(action) = action else { break };
            self.perform(action);
        }
        self.driving.set(false);
        match self.gate.borrow_mut().poll_timeout(now) {
            Some(due) => self.timer().arm(due, now),
            None => {
                if let Some(timer) = self.timer.borrow_mut().as_mut() {
                    timer.disarm();
                }
            }
        }
    }

    fn perform(self: &Rc<Self>, action: Action) {
        match action {
            Action::Send { call, timeout_ms } => {
                let mut calls = self.calls.borrow_mut();
                if let Some(JsCall {
                    waiter: Waiter::Sync { send, .. },
                    ..
                }) = calls.get_mut(call)
                {
                    // Being started: the caller sends it (the fast path) or has it sent.
                    *send = Some(timeout_ms);
                    return;
                }
                drop(calls);
                self.send(call, timeout_ms);
            }
            Action::Dispose { call, read } => {
                let response = self.last_response(call);
                let driver = self.clone();
                spawn_local(async move {
                    let facts = match &response {
                        Some(response) => body::discard(response, read).await,
                        None => None,
                    };
                    driver.with(|g| g.disposed(clock::now(), call, facts));
                    driver.drive();
                });
            }
            Action::ReadUsage { call } => {
                let response = self.last_response(call);
                let driver = self.clone();
                spawn_local(async move {
                    let usage = match &response {
                        Some(response) => body::usage(response).await,
                        None => None,
                    };
                    driver.with(|g| g.usage(clock::now(), call, usage));
                    driver.drive();
                });
            }
            Action::StartProbe { probe, origin } => self.prepare_probe(probe, origin),
            Action::Store { id, op } => {
                let Some((store, key)) = &self.store else {
                    return;
                };
                let (rate, budget) = self.with(|g| (g.rate(), g.budget_config()));
                let pending = store.run(
                    key.to_string(),
                    &op,
                    rate,
                    budget.map(|b| b.capacity),
                    &process_id(),
                );
                let driver = self.clone();
                spawn_local(async move {
                    let answer = pending.await.ok();
                    driver.with(|g| g.store_answered(clock::now(), id, answer));
                    driver.drive();
                });
            }
            Action::Route { call, bucket } => self.reroute(call, bucket.as_deref()),
            Action::Event(event) => self.emit(event),
            Action::Settle { call, end } => {
                let result = self.result(call, end);
                self.finish(call, result);
            }
        }
    }

    /// Sends a call's attempt through `attempt.js`, which reports back to `on_attempt`.
    fn send(self: &Rc<Self>, call: CallId, timeout: Millis) {
        let mut calls = self.calls.borrow_mut();
        let Some(js) = calls.get_mut(call) else {
            return;
        };
        let (input, init) = match &js.waiter {
            Waiter::Probe(Some((url, init))) => (url.clone(), init.clone()),
            Waiter::Probe(None) => {
                drop(calls);
                // No request could be made: the probe finds nothing.
                return self.with(|g| g.failed(clock::now(), call, UNSENT));
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
            return self.with(|g| g.failed(clock::now(), call, UNSENT));
        };
        let settle = self.on_attempt();
        let _ = attempt::send(&fetch, &input, &init, timeout, settle, call as f64);
    }

    fn last_response(&self, call: CallId) -> Option<JsValue> {
        let calls = self.calls.borrow();
        match calls.get(call)?.last.as_ref()? {
            Ok(response) => Some(response.clone()),
            Err(_) => None,
        }
    }

    /// Builds the probe's `GET /usage` beside `origin`'s request, with its credential.
    fn prepare_probe(&self, probe: CallId, origin: CallId) {
        let mut calls = self.calls.borrow_mut();
        let Some(from) = calls.get(origin) else {
            return;
        };
        let config = from.config.clone();
        let url = config
            .usage_url
            .clone()
            .or_else(|| usage_url_for(&headers::request_url(&from.input)));
        let request = url.map(|url| {
            let (credential, _, _) = headers::request(&from.input, &from.init);
            let headers = js_sys::Object::new();
            set(&headers, "Accept", "application/json".into());
            if let Some(key) = credential.api_key {
                set(&headers, "X-API-Key", key.into());
            }
            if let Some(auth) = credential.authorization {
                set(&headers, "Authorization", auth.into());
            }
            let init = js_sys::Object::new();
            set(&init, "method", "GET".into());
            set(&init, "headers", headers.into());
            (JsValue::from_str(&url), JsValue::from(init))
        });
        let js = JsCall {
            input: JsValue::UNDEFINED,
            init: JsValue::UNDEFINED,
            signal: None,
            config,
            last: None,
            timeout: 0.0,
            split: false,
            waiter: Waiter::Probe(request),
            watch: None,
            route: None,
        };
        calls.insert(probe, js);
    }

    /// What the caller gets for `end`.
    fn result(&self, call: CallId, end: End) -> Result<JsValue, JsValue> {
        let last = self
            .calls
            .borrow_mut()
            .get_mut(call)
            .and_then(|js| js.last.take());
        match end {
            End::Deliver => last.unwrap_or(Ok(JsValue::UNDEFINED)),
            End::Abandoned { abandoned, cause } => {
                let cause = last.and_then(Result::err).filter(|_| cause);
                Err(abandoned_error(abandoned, cause))
            }
            End::Exhausted { until } => Err(quota_error(until.map(clock::to_wall))),
            End::RetryAfterTooLarge => {
                if let Some(Ok(response)) = &last {
                    body::cancel(&super::props::get(response, "body"));
                }
                Err(range_error("Retry-After exceeds the supported delay"))
            }
        }
    }

    /// Settles the caller's promise (or keeps the result for a synchronous caller) and forgets
    /// the call.
    fn finish(&self, call: CallId, result: Result<JsValue, JsValue>) {
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
        if js.split {
            replay::release(&js.input, &js.init);
        }
        if let Some(watch) = js.watch {
            self.watches.borrow_mut().remove(watch, call);
        }
        // Settling runs no JavaScript of anyone's at once: a promise's reactions wait for a
        // microtask, and a Response or an error is no thenable to be asked for `then`.
        if let Waiter::Promise(resolve, reject) = js.waiter {
            let _ = match result {
                Ok(value) => resolve.call1(&JsValue::UNDEFINED, &value),
                Err(error) => reject.call1(&JsValue::UNDEFINED, &error),
            };
        }
    }

    /// A signal some waiting calls share aborted: each leaves the gate and rejects with its
    /// reason, unless its attempt is out (that attempt ends through the signal by itself).
    fn aborted(self: &Rc<Self>, watch: u32) {
        let Some((signal, calls)) = self.watches.borrow_mut().take(watch) else {
            return;
        };
        let reason = abort_reason(&signal);
        let now = clock::now();
        for call in calls {
            if self.with(|g| g.in_flight(call)) {
                continue;
            }
            self.with(|g| g.cancel(now, call));
            if let Some(js) = self.calls.borrow_mut().get_mut(call) {
                js.watch = None;
            }
            self.finish(call, Err(reason.clone()));
        }
        self.drive();
    }

    /// The timer fired.
    fn woken(self: &Rc<Self>) {
        if let Some(timer) = self.timer.borrow_mut().as_mut() {
            timer.fired();
        }
        self.with(|g| g.handle_timeout(clock::now()));
        self.drive();
    }

    /// Records an admission's wait or a backoff on the call's wrapper's metrics, if it has any.
    fn measure(&self, event: &Event) {
        let (call, ms, wait) = match *event {
            Event::Admitted { call, wait_ms } => (call, wait_ms, true),
            Event::Retry {
                call,
                delay_ms,
                server_delay: false,
                ..
            } => (call, delay_ms, false),
            _ => return,
        };
        let config = self.calls.borrow().get(call).map(|js| js.config.clone());
        let Some(metrics) = config.as_ref().and_then(|c| c.metrics.as_ref()) else {
            return;
        };
        let attributes = self
            .attributes
            .get_or_init(|| Metrics::attributes(self.scope.as_str()));
        if wait {
            metrics.waited(ms, attributes);
        } else {
            metrics.backed_off(ms, attributes);
        }
    }

    /// Tells the hooks: a call's own wrapper for events about a call, every wrapper that used
    /// the gate for events about the gate.
    fn emit(&self, event: Event) {
        self.measure(&event);
        let scope = self.scope.as_str();
        let (kind, call) = match &event {
            Event::Admitted { .. } => return,
            Event::Throttled { call, .. } => ("throttled", Some(*call)),
            Event::Retry { call, .. } => ("retry", Some(*call)),
            Event::Abandoned { call, .. } => ("abandoned", Some(*call)),
            Event::QuotaProbe { .. } => ("quota-probe", None),
            Event::Learned(_) => {
                let rate = self.with(|g| g.rate());
                self.share(&[Shared::Estimate(scope.to_owned(), rate)]);
                ("learned", None)
            }
            Event::StoreDown => ("store-down", None),
            Event::StoreUp => ("store-up", None),
        };
        let fields = |e: &js_sys::Object| match &event {
            Event::Throttled { retry_after_ms, .. } => set(
                e,
                "retryAfterMs",
                retry_after_ms.map_or(JsValue::NULL, JsValue::from),
            ),
            Event::Retry {
                attempt,
                delay_ms,
                server_delay,
                ..
            } => {
                set(e, "attempt", (*attempt).into());
                set(e, "delayMs", (*delay_ms).into());
                set(e, "serverDelay", (*server_delay).into());
            }
            Event::Abandoned {
                reason, attempts, ..
            } => {
                set(e, "reason", reason.as_str().into());
                set(e, "attempts", (*attempts).into());
            }
            Event::QuotaProbe {
                exhausted,
                answered,
            } => {
                set(e, "exhausted", (*exhausted).into());
                set(e, "answered", (*answered).into());
            }
            Event::Learned(estimate) => {
                let learned = to_js(&Learned::from(*estimate));
                set(e, "learned", learned);
            }
            Event::Admitted { .. } | Event::StoreDown | Event::StoreUp => {}
        };
        match call {
            Some(call) => {
                let events = self
                    .calls
                    .borrow()
                    .get(call)
                    .map(|js| js.config.events.clone());
                if let Some(events) = events {
                    events.emit(kind, scope, &fields);
                }
            }
            None => {
                let hooks = self.hooks.borrow().clone();
                for hook in hooks {
                    hook.emit(kind, scope, &fields);
                }
            }
        }
    }
}

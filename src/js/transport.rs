//! `createFetch`'s engine: a wrapper's configuration, the gates it has used, and its batches.
//! For every call it finds the credential's gate and hands the call to that gate's driver.

use std::cell::RefCell;
use std::rc::Rc;

use wasm_bindgen::prelude::*;

use super::attempt::{global_fetch, How};
use super::clock;
use super::driver::{GateDriver, Owner, Print, Request};
use super::errors::{abort_reason, range_error, type_error};
use super::figures;
use super::headers::{self, Credential};
use super::options::{self, Config};
use super::random::fingerprint_keys;
use super::registry::{self, gate_for, routed};
use super::Exported;
use crate::core::base::map::Map;
use crate::core::gate::call::CallSpec;
use crate::core::gate::figures::Figures;
use crate::core::gate::CallId;
use crate::core::gates::scope::{fingerprint, route_of, sendable, Role, Scope};
use crate::core::rules::allowance::Allowance;
use crate::core::rules::batch::Batch;
use crate::core::rules::classify::Body;

/// A gated `fetch`. The package's `createFetch` wraps it in a plain function.
#[wasm_bindgen]
pub struct Transport {
    config: Rc<Config>,
    gates: Rc<RefCell<Known>>,
    batch: Option<Rc<RefCell<Batch>>>,
    /// Calls admitted at once whose attempt the package's fast path is making, by handle.
    parked: RefCell<Vec<Option<Parked>>>,
    free: RefCell<Vec<u32>>,
}

/// A call the fast path is sending: its gate, and its number there.
type Parked = (Rc<GateDriver>, CallId);

/// The gates a wrapper (and its batches) have used, by a 128-bit keyed fingerprint of the
/// credential: no SHA-256 per call for a key seen before, and no raw key kept. Also the
/// figures of gates since forgotten (idle), which stay in the wrapper's totals.
#[derive(Default)]
struct Known {
    gates: Map<Print, Rc<GateDriver>>,
    /// The gates of limiter buckets other than their credential's first, by scope (learning
    /// gates, which are never forgotten).
    buckets: Map<Scope, Rc<GateDriver>>,
    retired: Figures,
}

impl Known {
    /// Every gate known: the credentials' and their other limiter buckets'.
    fn drivers(&self) -> Vec<Rc<GateDriver>> {
        self.gates
            .values()
            .chain(self.buckets.values())
            .cloned()
            .collect()
    }

    /// `stats()` over these gates, most recently used first; with a batch's time and retries
    /// left.
    fn stats(&self, batch: Option<(f64, Option<u32>)>) -> JsValue {
        let mut drivers = self.drivers();
        drivers.sort_unstable_by_key(|d| std::cmp::Reverse(d.used()));
        figures::stats(&drivers, &self.retired, batch)
    }
}

impl Owner for RefCell<Known> {
    fn forget(&self, print: Print, figures: &Figures) {
        let mut known = self.borrow_mut();
        known.gates.remove(&print);
        known.retired.absorb(figures);
    }
}

#[wasm_bindgen]
impl Transport {
    /// Validates the options; see the package's `index.d.ts` for each one.
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue) -> Result<Transport, JsValue> {
        let config = Rc::new(options::config(&options)?);
        let gates: Rc<RefCell<Known>> = Rc::default();
        if let Some(metrics) = &config.metrics {
            let known = Rc::downgrade(&gates);
            metrics.observe(Closure::new(move || {
                Ok(known
                    .upgrade()
                    .map_or(JsValue::UNDEFINED, |k| k.borrow().stats(None)))
            }));
        }
        Ok(Transport {
            config,
            gates,
            batch: None,
            parked: RefCell::default(),
            free: RefCell::default(),
        })
    }

    /// `fetch(input, init)` through the credential's gate; always a promise.
    pub fn fetch(&self, input: JsValue, init: JsValue) -> Exported {
        let (driver, call) = match self.start(input, init) {
            Ok(started) => started,
            Err(refused) => return Ok(settled(refused).into()),
        };
        Ok(match driver.outcome(call) {
            Err(end) => settled(end).into(),
            Ok(Some(timeout)) => {
                driver.send_now(call, timeout);
                driver.promise(call).into()
            }
            Ok(None) => driver.promise(call).into(),
        })
    }

    /// The package's fast path. Makes the call as `fetch` does; a call the gate admits at once
    /// comes back as a number, a handle for `settle` while `attempt.js` sends it: `h >= 0` when
    /// its attempt has a time limit (`attemptTimeout(h)`), `-h - 1` when it goes out untouched
    /// (no limit: one call across the boundary fewer). Any other call comes back as `fetch`'s
    /// promise.
    pub fn call(&self, input: JsValue, init: JsValue) -> Exported {
        let (driver, call) = match self.start(input, init) {
            Ok(started) => started,
            Err(refused) => return Ok(settled(refused).into()),
        };
        Ok(match driver.outcome(call) {
            Err(end) => settled(end).into(),
            // A stream body is split before each attempt: the driver sends that one.
            Ok(Some(timeout)) if driver.splits(call) => {
                driver.send_now(call, timeout);
                driver.promise(call).into()
            }
            Ok(Some(0.0)) => JsValue::from(-f64::from(self.park(driver, call)) - 1.0),
            Ok(Some(_)) => JsValue::from(self.park(driver, call)),
            Ok(None) => driver.promise(call).into(),
        })
    }

    /// The time limit the gate gave the attempt of the call parked under `handle`, in ms: 0
    /// for none.
    #[wasm_bindgen(js_name = attemptTimeout)]
    pub fn attempt_timeout(&self, handle: u32) -> f64 {
        let parked = self.parked.borrow();
        match parked.get(handle as usize) {
            Some(Some((driver, call))) => driver.timeout(*call),
            _ => 0.0,
        }
    }

    /// Concludes a fast-path attempt that ended as `attempt.js` says (`how`): the response,
    /// a rejection, or, when the call goes on, a promise of what it comes to.
    pub fn settle(&self, handle: u32, value: JsValue, how: u8, status: u16) -> Exported {
        let (driver, call) = self
            .unpark(handle)
            .ok_or_else(|| range_error("Unknown call handle"))?;
        driver.attempted(call, value, How::from_js(how), status);
        match driver.outcome(call) {
            Err(end) => end,
            Ok(Some(timeout)) => {
                driver.send_now(call, timeout);
                Ok(driver.promise(call).into())
            }
            Ok(None) => Ok(driver.promise(call).into()),
        }
    }

    /// The `fetch` option, or undefined for the global `fetch`.
    #[wasm_bindgen(js_name = innerFetch)]
    pub fn inner_fetch(&self) -> Exported {
        Ok(self
            .config
            .fetch
            .clone()
            .map_or(JsValue::UNDEFINED, JsValue::from))
    }

    /// A `fetchImpl` for one refresh round sharing this wrapper's gates: every call in it
    /// gives up rather than be admitted after `deadlineMs` from now, and the round's retries
    /// are limited to `retryBudget` in all.
    pub fn batch(&self, options: JsValue) -> Result<Transport, JsValue> {
        let (deadline_ms, retry_budget) = options::batch(&options)?;
        Ok(Transport {
            config: self.config.clone(),
            gates: self.gates.clone(),
            batch: Some(Rc::new(RefCell::new(Batch::new(
                clock::now(),
                deadline_ms,
                retry_budget,
            )))),
            parked: RefCell::default(),
            free: RefCell::default(),
        })
    }

    /// Live figures of every gate this wrapper has used.
    pub fn stats(&self) -> Exported {
        let batch = self.batch.as_ref().map(|b| {
            let b = b.borrow();
            (
                b.remaining_ms(clock::now()),
                b.budget.as_ref().map(|b| b.left()),
            )
        });
        Ok(self.gates.borrow().stats(batch))
    }

    /// The configuration summary, as an object with a `text` rendering.
    pub fn describe(&self) -> Exported {
        Ok(figures::describe(&self.config, &self.drivers()))
    }

    /// Declares the quota available again on every gate this wrapper has used.
    #[wasm_bindgen(js_name = resetQuota)]
    pub fn reset_quota(&self) {
        for driver in self.drivers() {
            driver.with(|g| g.reset_quota(clock::now()));
            driver.drive();
        }
    }

    /// Ends the cooldown on every gate this wrapper has used (for every process sharing them):
    /// the way out of a hold nobody wants any more.
    #[wasm_bindgen(js_name = clearCooldown)]
    pub fn clear_cooldown(&self) {
        for driver in self.drivers() {
            driver.with(|g| g.clear_cooldown(clock::now()));
            driver.drive();
        }
    }
}

/// A promise already settled with `result`.
fn settled(result: Result<JsValue, JsValue>) -> js_sys::Promise {
    match result {
        Ok(value) => js_sys::Promise::resolve(&value),
        Err(error) => js_sys::Promise::reject(&error),
    }
}

impl Transport {
    /// Finds the gate and makes the call, or refuses it before it reaches the gate.
    fn start(
        &self,
        input: JsValue,
        init: JsValue,
    ) -> Result<(Rc<GateDriver>, CallId), Result<JsValue, JsValue>> {
        let signal = headers::caller_signal(&input, &init);
        if let Some(signal) = signal.as_ref().filter(|s| s.aborted()) {
            return Err(Err(abort_reason(signal)));
        }
        if self.config.fetch.is_none() {
            global_fetch().map_err(Err)?;
        }
        let (credential, method, body) = headers::request(&input, &init);
        for (name, value) in [
            ("X-API-Key", &credential.api_key),
            ("Authorization", &credential.authorization),
        ] {
            if value.as_deref().is_some_and(|v| !sendable(v)) {
                return Err(Err(type_error(&format!(
                    "`{name}` holds a character a header value may not hold (CR, LF or NUL); \
                     the request was not sent"
                ))));
            }
        }
        let mut driver = self.gate(&credential).map_err(Err)?;
        // A learning wrapper tells limiter buckets apart by route.
        let route = match self.config.rate {
            Allowance::Learned(_) => Some(route_of(&method, &headers::request_url(&input))),
            Allowance::Fixed(_) => None,
        };
        let mut role = Role::Free;
        if let Some(route) = route.as_deref() {
            match routed(driver.scope(), route) {
                Some(scope) => driver = self.bucket_gate(&scope).map_err(Err)?,
                None => role = registry::role(driver.scope(), route),
            }
        }
        let replayable = self.config.retry.as_ref().is_some_and(|policy| {
            policy
                .rules
                .may_replay(&method, credential.idempotency_key, body)
        });
        let spec = CallSpec {
            policy: self.config.retry.clone(),
            batch: self.batch.clone(),
            replayable,
            max_wait_ms: self.config.max_wait_ms,
            max_waiting: self.config.max_waiting,
            reports_wait: self.config.metrics.is_some(),
            scout: role == Role::Scout,
            held: role == Role::Held,
        };
        let split = replayable && body == Body::Stream;
        let request = Request {
            input,
            init,
            signal,
            split,
            route,
        };
        let call = driver.start(spec, &self.config, request);
        Ok((driver, call))
    }

    fn gate(&self, credential: &Credential) -> Result<Rc<GateDriver>, JsValue> {
        let (key, auth) = (
            credential.api_key.as_deref(),
            credential.authorization.as_deref(),
        );
        let print = fingerprint(key, auth, fingerprint_keys());
        if let Some(driver) = self.gates.borrow().gates.get(&print) {
            return Ok(driver.clone());
        }
        // Not borrowed while the registry runs: making a gate may forget idle ones, and a
        // forgotten gate's owners (this wrapper among them) hear of it.
        let driver = gate_for(&Scope::of(key, auth), &self.config)?;
        let owner: Rc<RefCell<Known>> = self.gates.clone();
        let owner: Rc<dyn Owner> = owner;
        driver.adopt(print, Rc::downgrade(&owner));
        self.gates.borrow_mut().gates.insert(print, driver.clone());
        Ok(driver)
    }

    /// The gate of another limiter bucket than its credential's first.
    fn bucket_gate(&self, scope: &Scope) -> Result<Rc<GateDriver>, JsValue> {
        if let Some(driver) = self.gates.borrow().buckets.get(scope) {
            return Ok(driver.clone());
        }
        let driver = gate_for(scope, &self.config)?;
        let known = &mut self.gates.borrow_mut().buckets;
        known.insert(scope.clone(), driver.clone());
        Ok(driver)
    }

    /// The gates this wrapper knows.
    fn drivers(&self) -> Vec<Rc<GateDriver>> {
        self.gates.borrow().drivers()
    }

    fn park(&self, driver: Rc<GateDriver>, call: CallId) -> u32 {
        let mut parked = self.parked.borrow_mut();
        match self.free.borrow_mut().pop() {
            Some(handle) => {
                parked[handle as usize] = Some((driver, call));
                handle
            }
            None => {
                parked.push(Some((driver, call)));
                (parked.len() - 1) as u32
            }
        }
    }

    fn unpark(&self, handle: u32) -> Option<Parked> {
        let taken = self.parked.borrow_mut().get_mut(handle as usize)?.take()?;
        self.free.borrow_mut().push(handle);
        Some(taken)
    }
}

//! `createFetch`'s engine: a wrapper's configuration and its batches. For every call it reads
//! the request's facts and hands the call to this thread's driver; the gates choose the gate.

use std::cell::RefCell;
use std::rc::Rc;

use wasm_bindgen::prelude::*;

use super::attempt::global_fetch;
use super::calls::CallArgs;
use super::clock;
use super::de::{self, Kind};
use super::driver::{driver, Driver};
use super::errors::{abort_reason, config_error, range_error, type_error};
use crate::core::rules::allowance::ConfigError;
use super::figures;
use super::headers::{self, Credential};
use super::options::{self, Config};
use super::text::number;
use super::Exported;
use crate::core::base::handles::Handles;
use crate::core::gates::action::Refused;
use crate::core::gates::ids::{CallRef, WrapperId};
use crate::core::gates::profile::Request;
use crate::core::gates::scope::Scope;
use crate::core::rules::batch::{Batch, BatchGiven};
use crate::core::rules::classify::{Body, Ended};
use crate::core::Millis;

/// A gated `fetch`. The package's `createFetch` wraps it in a plain function.
#[wasm_bindgen]
pub struct Transport {
    wrapper: WrapperId,
    config: Rc<Config>,
    batch: Option<Rc<RefCell<Batch>>>,
    /// Calls admitted at once whose attempt the package's fast path is making, by handle.
    parked: RefCell<Handles<CallRef>>,
}

impl Drop for Transport {
    fn drop(&mut self) {
        driver().release(self.wrapper);
    }
}

#[wasm_bindgen]
impl Transport {
    /// Validates the options; see the package's `index.d.ts` for each one.
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue) -> Result<Transport, JsValue> {
        let this = driver();
        let (config, profile) = options::config(&options, |store| this.store(store))?;
        let config = Rc::new(config);
        headers::name_feedback();
        let wrapper = this.with(|g| g.wrapper(profile));
        this.add_wrapper(wrapper, &config);
        if let Some(metrics) = &config.metrics {
            // Its lanes share its instruments: the meter sees their gates as long as any lives.
            let instruments = Rc::downgrade(metrics);
            let cache = config.cache.as_ref().map(Rc::downgrade);
            metrics.observe(Closure::new(move || {
                let Some(metrics) = instruments.upgrade() else {
                    return Ok(JsValue::UNDEFINED);
                };
                let driver = driver();
                let measured = driver.measured_by(&metrics);
                let cache = cache.as_ref().and_then(|c| c.upgrade());
                let cache = cache.map(|c| c.borrow().0.cache().figures());
                driver.with(|g| figures::observed(g, &measured, cache))
            }));
        }
        Ok(Transport::of(wrapper, config, None))
    }

    /// `fetch(input, init)` through the credential's gate; always a promise.
    pub fn fetch(&self, input: JsValue, init: JsValue) -> Exported {
        let signal = headers::caller_signal(&input, &init);
        if let Some(signal) = signal.as_ref().filter(|s| s.aborted()) {
            return Ok(settled(Err(abort_reason(signal))).into());
        }
        if self.config.fetch.is_none() {
            if let Err(error) = global_fetch() {
                return Ok(settled(Err(error)).into());
            }
        }
        let facts = headers::request(&input, &init);
        let started = self.start(input, init, facts, signal);
        Ok(
            match started.and_then(|(driver, call)| driver.pending(call)) {
                Ok(promise) => promise.into(),
                Err(end) => settled(end).into(),
            },
        )
    }

    /// The package's fast path (`fast.js`), with a fetch to call: the request's `facts`
    /// (`reads.js`'s `requestFacts`) and the caller's `signal` come along. Makes the call as
    /// `fetch` does; a call the gate admits at once comes back as a number, a handle for
    /// `settle` while `attempt.js` sends it: `h >= 0` when its attempt has a time limit
    /// (`attemptTimeout(h)`), `-h - 1` when it goes out untouched (no limit: one call across
    /// the boundary fewer). Any other call comes back as `fetch`'s promise.
    pub fn call(
        &self,
        input: JsValue,
        init: JsValue,
        facts: String,
        signal: Option<web_sys::AbortSignal>,
    ) -> Exported {
        let facts = headers::facts(&facts);
        let (driver, call) = match self.start(input, init, facts, signal) {
            Ok(started) => started,
            Err(refused) => return Ok(settled(refused).into()),
        };
        Ok(match driver.outcome(call) {
            Err(end) => settled(end).into(),
            // A stream body is split before each attempt: the driver sends that one.
            Ok(Some(timeout)) if driver.splits(call) => {
                driver.send(call, timeout);
                driver.promise(call).into()
            }
            Ok(Some(0.0)) => JsValue::from(-f64::from(self.parked.borrow_mut().put(call)) - 1.0),
            Ok(Some(_)) => JsValue::from(self.parked.borrow_mut().put(call)),
            Ok(None) => driver.promise(call).into(),
        })
    }

    /// The time limit the gate gave the attempt of the call parked under `handle`, in ms: 0
    /// for none.
    #[wasm_bindgen(js_name = attemptTimeout)]
    pub fn attempt_timeout(&self, handle: u32) -> f64 {
        let call = self.parked.borrow().get(handle).copied();
        call.map_or(0.0, |call| driver().timeout(call))
    }

    /// Concludes a fast-path attempt that ended as `attempt.js` says (`how`, and a response's
    /// `status` and `feedback` headers): the response, a rejection, or, when the call goes on,
    /// a promise of what it comes to.
    pub fn settle(
        &self,
        handle: u32,
        value: JsValue,
        how: u8,
        status: u16,
        feedback: Option<String>,
    ) -> Exported {
        let call = self
            .parked
            .borrow_mut()
            .take(handle)
            .ok_or_else(|| range_error("Unknown call handle"))?;
        let driver = driver();
        driver.attempted(call, value, Ended::from_code(how), status, feedback.as_deref());
        driver.pending(call).map(JsValue::from).or_else(|end| end)
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
        let fields = [("deadlineMs", Kind::Number), ("retryBudget", Kind::Number)];
        let [deadline_ms, retry_budget] =
            de::object(&options, "batch options", "batch.", &fields)?;
        let given = BatchGiven {
            deadline_ms: deadline_ms.number(),
            retry_budget: retry_budget.number(),
        };
        let within = |e| config_error(ConfigError::within("batch", e));
        let batch = given.batch(clock::now()).map_err(within)?;
        driver().with(|g| g.retain(self.wrapper));
        let batch = Some(Rc::new(RefCell::new(batch)));
        Ok(Transport::of(self.wrapper, self.config.clone(), batch))
    }

    /// A `fetchImpl` on the same gates whose calls wait in a lane of their own, sharing the
    /// gates' admissions with the other lanes by `weight`, with its own retries and limits
    /// where `options` gives them (and this one's batch, if any).
    pub fn lane(&self, options: JsValue) -> Result<Transport, JsValue> {
        let (asks, weight, name) = options::lane(&options)?;
        let this = driver();
        let lane = this.with(|g| g.lane_of_wrapper(self.wrapper, asks, weight, name.as_deref()));
        let (wrapper, lane_name) = lane.ok_or_else(|| range_error(&Refused::Gone.message(&number)))?;
        let config = Rc::new(Config {
            lane_name: lane_name.into(),
            ..(*self.config).clone()
        });
        this.add_wrapper(wrapper, &config);
        Ok(Transport::of(wrapper, config, self.batch.clone()))
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
        let lane = &self.config.lane_name;
        let cache = self.cache().map(|c| c.borrow().0.cache().figures());
        driver().with(|g| figures::stats(g, self.wrapper, lane, (batch, cache)))
    }

    /// The configuration summary, as an object with a `text` rendering.
    pub fn describe(&self) -> Exported {
        Ok(driver().with(|g| figures::describe(&self.config, g, self.wrapper)))
    }

    /// Declares the quota available again on every gate this wrapper has used.
    #[wasm_bindgen(js_name = resetQuota)]
    pub fn reset_quota(&self) {
        let driver = driver();
        driver.with(|g| g.reset_quota(clock::now(), self.wrapper));
        driver.drive();
    }

    /// Ends the cooldown on every gate this wrapper has used (for every process sharing them):
    /// the way out of a cooldown nobody wants any more.
    #[wasm_bindgen(js_name = clearCooldown)]
    pub fn clear_cooldown(&self) {
        let driver = driver();
        driver.with(|g| g.clear_cooldown(clock::now(), self.wrapper));
        driver.drive();
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
    /// The wrapper's cache, if it caches.
    pub(super) fn cache(&self) -> Option<&options::SharedCache> {
        self.config.cache.as_ref()
    }

    /// The wrapper's JavaScript side (its store, whether its threads share).
    pub(super) fn config(&self) -> &Config {
        &self.config
    }

    /// Whether this wrapper's gate for `scope` would hold a GET of `url` at `now` past a
    /// cooldown, or refuse it for a spent quota (the cache then answers from a stale entry).
    pub(super) fn holds(&self, now: Millis, scope: &Scope, url: &str) -> bool {
        driver().with(|g| g.holds(now, self.wrapper, scope, url))
    }

    /// A `fetchImpl` of `wrapper`, in `batch` if it is one's.
    fn of(wrapper: WrapperId, config: Rc<Config>, batch: Option<Rc<RefCell<Batch>>>) -> Self {
        Transport {
            wrapper,
            config,
            batch,
            parked: RefCell::default(),
        }
    }

    /// Makes the call from the request's facts, or refuses it before it reaches a gate.
    fn start(
        &self,
        input: JsValue,
        init: JsValue,
        facts: (Credential, String, Body, String),
        signal: Option<web_sys::AbortSignal>,
    ) -> Result<(Rc<Driver>, CallRef), Result<JsValue, JsValue>> {
        if let Some(signal) = signal.as_ref().filter(|s| s.aborted()) {
            return Err(Err(abort_reason(signal)));
        }
        // The URL tells limiters apart by route, and account calls (`GET /usage`) from others.
        let (credential, method, body, url) = facts;
        let driver = driver();
        let request = Request {
            api_key: credential.api_key.as_deref(),
            authorization: credential.authorization.as_deref(),
            idempotency_key: credential.idempotency_key,
            method: &method,
            body,
            url: &url,
            batch: self.batch.clone(),
        };
        let call = CallArgs {
            input,
            init,
            signal,
        };
        match driver.start(self.wrapper, &self.config, &request, call) {
            Ok(call) => Ok((driver, call)),
            Err(refused @ Refused::Unsendable(_)) => {
                Err(Err(type_error(&refused.message(&number))))
            }
            Err(refused) => Err(Err(range_error(&refused.message(&number)))),
        }
    }
}

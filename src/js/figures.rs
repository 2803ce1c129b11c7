//! The wrapper's figures and configuration summary as plain JavaScript objects.

use std::rc::Rc;

use wasm_bindgen::prelude::*;

use super::clock;
use super::driver::GateDriver;
use super::options::Config;
use super::props::set;
use crate::core::config::Rate;
use crate::core::gate::figures::Figures;
use crate::core::histogram::BOUNDS_MS;
use crate::core::policy::Reason;
use crate::core::quota::QuotaState;

fn num(object: &js_sys::Object, key: &str, value: impl Into<f64>) {
    set(object, key, JsValue::from(value.into()));
}

fn rate_object(rate: Rate) -> js_sys::Object {
    let object = js_sys::Object::new();
    num(&object, "burst", rate.burst());
    num(&object, "perSecond", rate.per_second());
    object
}

#[wasm_bindgen(module = "/src/js/stats.js")]
extern "C" {
    /// Builds `stats()` from every gate's figures as numbers, and its strings.
    #[wasm_bindgen(js_name = buildStats)]
    fn build_stats(numbers: &[f64], strings: &str, reasons: &str, bounds: &[f64]) -> JsValue;
}

/// A number for an absent value (JavaScript's `null` in the figures).
const NONE: f64 = f64::NAN;

/// `stats()`: totals over the gates (and over the gates since forgotten, `retired`), then each
/// live gate in full. The figures go to `stats.js` as one array of numbers in the order it
/// reads them (see there), so a thousand gates cost one call, not a call per figure.
pub fn stats(drivers: &[Rc<GateDriver>], retired: &Figures) -> JsValue {
    let now = clock::now();
    let mut totals = retired.clone();
    let mut waiting = 0;
    let mut n: Vec<f64> = Vec::with_capacity(8 + drivers.len() * 90);
    let mut strings = String::new();
    n.extend([0.0; 6]); // totals, written at the end
    for driver in drivers {
        let f = driver.with(|g| g.figures(now));
        totals.absorb(&f);
        waiting += f.waiting;
        let (rate, store) = driver.with(|g| (g.rate(), g.store_counts()));
        let flag = |b: bool| if b { 1.0 } else { 0.0 };
        let opt = |v: Option<f64>| v.unwrap_or(NONE);
        let r = f.retries;
        n.extend([
            f.requests as f64,
            f.admitted as f64,
            f.waiting as f64,
            f.peak_waiting as f64,
            f.cancelled as f64,
            f.expired as f64,
            f.throttled as f64,
            f.wakeups as f64,
            flag(driver.timer_armed()),
            f.cooldown_until,
            (f.cooldown_until - now).max(0.0),
            flag(f.slow),
            r.throttled as f64,
            r.server_error as f64,
            r.network as f64,
            r.timeout as f64,
        ]);
        n.extend(f.abandoned.iter().map(|&c| c as f64));
        let (quota, until) = match f.quota {
            Some(QuotaState::Probing) => (1.0, None),
            Some(QuotaState::Exhausted { until }) => (2.0, until),
            _ => (0.0, None),
        };
        n.extend([
            f.quota_rejected as f64,
            quota,
            opt(until.map(clock::to_wall)),
            opt(f.retry_budget),
            rate.burst(),
            rate.per_second(),
        ]);
        match store {
            Some((calls, failures, up)) => n.extend([calls as f64, failures as f64, flag(up)]),
            None => n.extend([NONE, NONE, NONE]),
        }
        for h in [&f.admission_wait, &f.backoff] {
            n.extend([h.count() as f64, h.sum(), h.max()]);
            n.extend(h.counts().iter().map(|&c| c as f64));
        }
        let feedback = f.last_feedback.as_ref();
        n.extend([
            flag(feedback.is_some()),
            opt(feedback.and_then(|f| f.retry_after_ms)),
            opt(feedback.and_then(|f| f.limit).map(|l| l as f64)),
            opt(feedback.and_then(|f| f.remaining).map(|r| r as f64)),
            opt(feedback.and_then(|f| f.reset_ms)),
        ]);
        for text in [
            driver.scope().as_str(),
            &driver.store().map_or("memory".into(), |s| s.identity()),
            feedback.and_then(|f| f.bucket.as_deref()).unwrap_or(""),
        ] {
            strings.push_str(text);
            strings.push('\0');
        }
    }
    n[..6].copy_from_slice(&[
        drivers.len() as f64,
        totals.admitted as f64,
        waiting as f64,
        totals.throttled as f64,
        totals.retries.total() as f64,
        totals.abandoned.iter().sum::<u64>() as f64,
    ]);
    let reasons: Vec<&str> = Reason::ALL.iter().map(|r| r.as_str()).collect();
    build_stats(&n, &strings, &reasons.join("\0"), &BOUNDS_MS)
}

#[wasm_bindgen(module = "/src/js/summary.js")]
extern "C" {
    fn summary(facts: &js_sys::Object) -> JsValue;
}

/// The checklist's configuration summary: what the next engineer tunes when the provider
/// changes its limits. The bindings give the facts; `summary.js` words them.
pub fn describe(config: &Config) -> JsValue {
    let facts = js_sys::Object::new();
    set(&facts, "rate", rate_object(config.rate).into());
    if let Some(store) = &config.store {
        set(&facts, "store", store.describe().into());
    }
    if let Some(p) = &config.retry {
        let retry = js_sys::Object::new();
        let statuses: js_sys::Array = p
            .rules
            .statuses()
            .iter()
            .map(|&s| JsValue::from(s))
            .collect();
        let methods: js_sys::Array = p
            .rules
            .methods()
            .iter()
            .map(|m| JsValue::from_str(m))
            .collect();
        set(&retry, "statuses", statuses.into());
        set(&retry, "methods", methods.into());
        num(&retry, "attemptTimeoutMs", p.attempt_timeout_ms);
        num(&retry, "capMs", p.backoff.cap_ms());
        num(&retry, "baseMs", p.backoff.base_ms());
        num(&retry, "maxAttempts", p.max_attempts);
        num(&retry, "timeBudgetMs", p.time_budget_ms);
        set(&facts, "retry", retry.into());
    }
    let waiting = js_sys::Object::new();
    let opt = |v: Option<f64>| v.map_or(JsValue::NULL, JsValue::from);
    set(&waiting, "maxWaitMs", opt(config.max_wait_ms));
    set(
        &waiting,
        "maxWaiting",
        opt(config.max_waiting.map(|n| n as f64)),
    );
    set(&facts, "waiting", waiting.into());
    if let Some(b) = config.budget {
        let budget = js_sys::Object::new();
        num(&budget, "capacity", b.capacity);
        num(&budget, "throttleCost", b.throttle_cost);
        num(&budget, "transientCost", b.transient_cost);
        num(&budget, "successRefill", b.success_refill);
        set(&facts, "budget", budget.into());
    }
    summary(&facts)
}

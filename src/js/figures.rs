//! The wrapper's figures and configuration summary as plain JavaScript objects.

use std::rc::Rc;

use wasm_bindgen::prelude::*;

use super::clock;
use super::driver::GateDriver;
use super::options::Config;
use super::props::set;
use crate::core::config::Rate;
use crate::core::feedback::Feedback;
use crate::core::gate::figures::Figures;
use crate::core::histogram::{Histogram, BOUNDS_MS};
use crate::core::policy::Reason;
use crate::core::quota::QuotaState;

fn num(object: &js_sys::Object, key: &str, value: impl Into<f64>) {
    set(object, key, JsValue::from(value.into()));
}

fn opt<T: Into<JsValue>>(value: Option<T>) -> JsValue {
    value.map_or(JsValue::NULL, Into::into)
}

fn rate_object(rate: Rate) -> js_sys::Object {
    let object = js_sys::Object::new();
    num(&object, "burst", rate.burst());
    num(&object, "perSecond", rate.per_second());
    object
}

fn feedback_object(feedback: &Feedback) -> js_sys::Object {
    let object = js_sys::Object::new();
    set(&object, "retryAfterMs", opt(feedback.retry_after_ms));
    set(&object, "limit", opt(feedback.limit.map(|n| n as f64)));
    set(
        &object,
        "remaining",
        opt(feedback.remaining.map(|n| n as f64)),
    );
    set(&object, "resetMs", opt(feedback.reset_ms));
    set(&object, "bucket", opt(feedback.bucket.clone()));
    object
}

/// `{ count, sumMs, maxMs, buckets: [{ leMs, count }] }`, the last bucket's `leMs` Infinity.
fn histogram_object(h: &Histogram) -> js_sys::Object {
    let object = js_sys::Object::new();
    num(&object, "count", h.count() as f64);
    num(&object, "sumMs", h.sum());
    num(&object, "maxMs", h.max());
    let buckets = js_sys::Array::new();
    for (i, &count) in h.counts().iter().enumerate() {
        let bucket = js_sys::Object::new();
        num(
            &bucket,
            "leMs",
            BOUNDS_MS.get(i).copied().unwrap_or(f64::INFINITY),
        );
        num(&bucket, "count", count as f64);
        buckets.push(&bucket);
    }
    set(&object, "buckets", buckets.into());
    object
}

fn quota_object(state: Option<QuotaState>) -> js_sys::Object {
    let object = js_sys::Object::new();
    let (name, until) = match state {
        Some(QuotaState::Probing) => ("probing", None),
        Some(QuotaState::Exhausted { until }) => ("exhausted", until),
        _ => ("open", None),
    };
    set(&object, "state", name.into());
    let end = until.map(|u| js_sys::Date::new(&JsValue::from(clock::to_wall(u))));
    set(&object, "periodEnd", opt(end));
    object
}

/// `{ admitted, waiting, throttled, retries, abandoned, gates: [...] }`: totals over the gates
/// (and over the gates since forgotten, `retired`), then each live gate in full.
pub fn stats(drivers: &[Rc<GateDriver>], retired: &Figures) -> JsValue {
    let now = clock::now();
    let list = js_sys::Array::new();
    let mut totals = retired.clone();
    let mut waiting = 0;
    for driver in drivers {
        let f = driver.with(|g| g.figures(now));
        totals.absorb(&f);
        waiting += f.waiting;
        let object = js_sys::Object::new();
        set(&object, "scope", driver.scope().as_str().into());
        let (rate, store) = driver.with(|g| (g.rate(), g.store_counts(now)));
        set(&object, "rate", rate_object(rate).into());
        let store_object = js_sys::Object::new();
        let kind = driver.store().map_or("memory".into(), |s| s.identity());
        set(&store_object, "kind", kind.into());
        if let Some((calls, failures, up)) = store {
            num(&store_object, "calls", calls as f64);
            num(&store_object, "failures", failures as f64);
            set(&store_object, "up", up.into());
        }
        set(&object, "store", store_object.into());
        gate_figures(&object, &f, now);
        set(&object, "timerArmed", driver.timer_armed().into());
        list.push(&object);
    }
    let object = js_sys::Object::new();
    num(&object, "admitted", totals.admitted as f64);
    num(&object, "waiting", waiting as f64);
    num(&object, "throttled", totals.throttled as f64);
    num(&object, "retries", totals.retries.total() as f64);
    num(
        &object,
        "abandoned",
        totals.abandoned.iter().sum::<u64>() as f64,
    );
    set(&object, "gates", list.into());
    object.into()
}

/// One gate's figures onto `object`.
fn gate_figures(object: &js_sys::Object, f: &Figures, now: f64) {
    let r = f.retries;
    num(object, "requests", f.requests as f64);
    num(object, "admitted", f.admitted as f64);
    num(object, "waiting", f.waiting as f64);
    num(object, "peakWaiting", f.peak_waiting as f64);
    num(object, "cancelled", f.cancelled as f64);
    num(object, "expired", f.expired as f64);
    num(object, "throttled", f.throttled as f64);
    num(object, "wakeups", f.wakeups as f64);
    num(object, "cooldownUntil", f.cooldown_until);
    num(
        object,
        "cooldownRemainingMs",
        (f.cooldown_until - now).max(0.0),
    );
    set(object, "slow", f.slow.into());
    set(
        object,
        "lastFeedback",
        opt(f.last_feedback.as_ref().map(feedback_object)),
    );
    let by_cause = js_sys::Object::new();
    num(&by_cause, "throttled", r.throttled as f64);
    num(&by_cause, "serverError", r.server_error as f64);
    num(&by_cause, "network", r.network as f64);
    num(&by_cause, "timeout", r.timeout as f64);
    set(object, "retries", by_cause.into());
    let by_reason = js_sys::Object::new();
    for (reason, count) in Reason::ALL.iter().zip(f.abandoned) {
        num(&by_reason, reason.as_str(), count as f64);
    }
    set(object, "abandoned", by_reason.into());
    num(object, "quotaRejected", f.quota_rejected as f64);
    set(object, "quota", quota_object(f.quota).into());
    set(object, "retryBudget", opt(f.retry_budget));
    set(
        object,
        "admissionWaitMs",
        histogram_object(&f.admission_wait).into(),
    );
    set(object, "backoffMs", histogram_object(&f.backoff).into());
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

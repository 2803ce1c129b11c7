//! The wrapper's figures and configuration summary as plain JavaScript objects.

use std::rc::Rc;

use wasm_bindgen::prelude::*;

use super::clock;
use super::options::Config;
use super::read::set;
use super::shared_gate::SharedGate;
use crate::core::config::Rate;
use crate::core::feedback::Feedback;
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

fn quota_object(state: Option<QuotaState>, now: f64) -> js_sys::Object {
    let object = js_sys::Object::new();
    let (name, until) = match state {
        Some(QuotaState::Probing) => ("probing", None),
        Some(QuotaState::Exhausted { until }) => ("exhausted", until),
        _ => ("open", None),
    };
    set(&object, "state", name.into());
    let end = until.map(|u| js_sys::Date::new(&JsValue::from(clock::wall_now() + (u - now))));
    set(&object, "periodEnd", opt(end));
    object
}

/// `{ admitted, waiting, throttled, retries, abandoned, gates: [...] }`: totals over the gates,
/// then each gate in full.
pub fn stats(gates: &[Rc<SharedGate>]) -> JsValue {
    let now = clock::now();
    let list = js_sys::Array::new();
    let (mut admitted, mut waiting, mut throttled, mut retries, mut abandoned) =
        (0u64, 0usize, 0u64, 0u64, 0u64);
    for gate in gates {
        let (f, timer_armed) = gate.figures();
        let r = f.retries;
        admitted += f.admitted;
        waiting += f.waiting;
        throttled += f.throttled;
        retries += r.throttled + r.server_error + r.network + r.timeout;
        abandoned += f.abandoned.iter().sum::<u64>();
        let object = js_sys::Object::new();
        set(&object, "scope", gate.scope().as_str().into());
        let (rate, _, store) = gate.config();
        set(&object, "rate", rate_object(rate).into());
        let store_object = js_sys::Object::new();
        set(&store_object, "kind", store.into());
        if let Some(s) = gate.store() {
            let (calls, failures) = s.counts();
            num(&store_object, "calls", calls as f64);
            num(&store_object, "failures", failures as f64);
            set(&store_object, "up", (!s.is_down()).into());
        }
        set(&object, "store", store_object.into());
        num(&object, "requests", f.requests as f64);
        num(&object, "admitted", f.admitted as f64);
        num(&object, "waiting", f.waiting as f64);
        num(&object, "peakWaiting", f.peak_waiting as f64);
        num(&object, "cancelled", f.cancelled as f64);
        num(&object, "expired", f.expired as f64);
        num(&object, "throttled", f.throttled as f64);
        num(&object, "wakeups", f.wakeups as f64);
        set(&object, "timerArmed", timer_armed.into());
        num(&object, "cooldownUntil", f.cooldown_until);
        num(
            &object,
            "cooldownRemainingMs",
            (f.cooldown_until - now).max(0.0),
        );
        set(&object, "slow", f.slow.into());
        set(
            &object,
            "lastFeedback",
            opt(f.last_feedback.as_ref().map(feedback_object)),
        );
        let by_cause = js_sys::Object::new();
        num(&by_cause, "throttled", r.throttled as f64);
        num(&by_cause, "serverError", r.server_error as f64);
        num(&by_cause, "network", r.network as f64);
        num(&by_cause, "timeout", r.timeout as f64);
        set(&object, "retries", by_cause.into());
        let by_reason = js_sys::Object::new();
        for (reason, count) in Reason::ALL.iter().zip(f.abandoned) {
            num(&by_reason, reason.as_str(), count as f64);
        }
        set(&object, "abandoned", by_reason.into());
        num(&object, "quotaRejected", f.quota_rejected as f64);
        set(&object, "quota", quota_object(f.quota, now).into());
        set(&object, "retryBudget", opt(f.retry_budget));
        set(
            &object,
            "admissionWaitMs",
            histogram_object(&f.admission_wait).into(),
        );
        set(&object, "backoffMs", histogram_object(&f.backoff).into());
        list.push(&object);
    }
    let object = js_sys::Object::new();
    num(&object, "admitted", admitted as f64);
    num(&object, "waiting", waiting as f64);
    num(&object, "throttled", throttled as f64);
    num(&object, "retries", retries as f64);
    num(&object, "abandoned", abandoned as f64);
    set(&object, "gates", list.into());
    object.into()
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

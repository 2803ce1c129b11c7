//! The wrapper's figures and configuration summary as plain JavaScript objects.

use std::rc::Rc;

use wasm_bindgen::prelude::*;

use super::clock;
use super::options::Config;
use super::read::set;
use super::shared_gate::SharedGate;
use super::text::number;
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
    #[wasm_bindgen(js_name = describeText)]
    fn describe_text(summary: &js_sys::Object) -> String;
}

/// The checklist's configuration summary: what the next engineer tunes when the provider
/// changes its limits. `summary.js` writes its `text` from the fields.
pub fn describe(config: &Config) -> JsValue {
    let object = js_sys::Object::new();
    set(&object, "rate", rate_object(config.rate).into());
    let add = |key: &str, value: &str| set(&object, key, value.into());
    add("scope", "one gate per credential (SHA-256 of X-API-Key, else Authorization), shared by every wrapper in the process");
    match &config.store {
        None => add(
            "store",
            "in-process memory: per process; other processes have their own allowance",
        ),
        Some(s) => add("store", &s.describe()),
    };
    add("admission", "cooldown first, then token bucket; FIFO; one timer per gate; refill after a burst timed from its first response; half rate while others drain the key (remaining < 10% of limit)");
    add(
        "feedback",
        if config.retry.is_some() {
            "Retry-After (seconds or HTTP-date) on 429/503 is the shared cooldown, extended never shortened; X-RateLimit-* and IETF RateLimit/RateLimit-Policy read on every response"
        } else {
            "Retry-After (seconds or HTTP-date) on a 429 is the shared cooldown, extended never shortened; its X-RateLimit-* recorded; other responses are not read"
        },
    );
    match &config.retry {
        None => add(
            "retry",
            "off: observe and admit only; the response goes back as it is",
        ),
        Some(p) => {
            let statuses: Vec<String> = p.rules.statuses().iter().map(u16::to_string).collect();
            add("retry", &format!(
                "on for {} and network failures / per-attempt timeouts ({} ms); methods {}, or any with an Idempotency-Key",
                statuses.join(", "), number(p.attempt_timeout_ms), p.rules.methods().join(", ")));
            add("backoff", &format!(
                "Retry-After exactly when given; otherwise full jitter: uniform(0, min({} ms, {} ms * 2^n))",
                number(p.backoff.cap_ms()), number(p.backoff.base_ms())));
            add(
                "bounds",
                &format!(
                    "{} attempts per call, {} ms per call (never past the caller's AbortSignal)",
                    p.max_attempts,
                    number(p.time_budget_ms)
                ),
            );
        }
    }
    match config.budget {
        Some(b) => add("retryBudget", &format!(
            "shared per gate: {} tokens, a 429 retry costs {}, a transient one {}, success refunds the retry's cost (+{} for a first-time success); batch({{ retryBudget }}) adds a fixed allowance per round",
            number(b.capacity), number(b.throttle_cost), number(b.transient_cost), number(b.success_refill))),
        None => add("retryBudget", "none"),
    }
    add("quota", "a 429 naming the quota, or 3 bare 429s in a row, triggers one GET /usage per gate; used >= limit fails calls fast with QuotaExhaustedError until the period ends or resetQuota()");
    add("metrics", "stats(): requests, admitted, waiting, peakWaiting, expired, throttled, retries by cause, abandoned by reason, quota, retry budget, admission-wait and backoff histograms; onEvent: throttled, retry, abandoned, quota-probe, store-down/up");
    set(&object, "text", describe_text(&object).into());
    object.into()
}

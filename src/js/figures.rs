//! The wrapper's figures and configuration summary as plain JavaScript objects.

use std::rc::Rc;

use wasm_bindgen::JsValue;

use super::clock;
use super::shared_gate::SharedGate;
use crate::core::config::Rate;
use crate::core::feedback::Feedback;

fn set(object: &js_sys::Object, key: &str, value: impl Into<JsValue>) {
    let _ = js_sys::Reflect::set(object, &JsValue::from_str(key), &value.into());
}

fn opt<T: Into<JsValue>>(value: Option<T>) -> JsValue {
    value.map_or(JsValue::NULL, Into::into)
}

fn rate_object(rate: Rate) -> js_sys::Object {
    let object = js_sys::Object::new();
    set(&object, "burst", rate.burst());
    set(&object, "perSecond", rate.per_second());
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
    set(&object, "resetSeconds", opt(feedback.reset_seconds));
    set(&object, "bucket", opt(feedback.bucket.clone()));
    object
}

/// `{ admitted, waiting, throttled, gates: [...] }`: totals over the gates, then each gate.
pub fn stats(gates: &[Rc<SharedGate>]) -> JsValue {
    let now = clock::now();
    let list = js_sys::Array::new();
    let (mut admitted, mut waiting, mut throttled) = (0u64, 0usize, 0u64);
    for gate in gates {
        let (f, timer_armed) = gate.figures();
        admitted += f.admitted;
        waiting += f.waiting;
        throttled += f.throttled;
        let object = js_sys::Object::new();
        set(&object, "scope", gate.scope().as_str());
        set(&object, "rate", rate_object(gate.rate()));
        set(&object, "admitted", f.admitted as f64);
        set(&object, "waiting", f.waiting as f64);
        set(&object, "peakWaiting", f.peak_waiting as f64);
        set(&object, "cancelled", f.cancelled as f64);
        set(&object, "throttled", f.throttled as f64);
        set(&object, "wakeups", f.wakeups as f64);
        set(&object, "timerArmed", timer_armed);
        set(&object, "cooldownUntil", f.cooldown_until);
        set(
            &object,
            "cooldownRemainingMs",
            (f.cooldown_until - now).max(0.0),
        );
        set(
            &object,
            "lastFeedback",
            opt(f.last_feedback.as_ref().map(feedback_object)),
        );
        list.push(&object);
    }
    let object = js_sys::Object::new();
    set(&object, "admitted", admitted as f64);
    set(&object, "waiting", waiting as f64);
    set(&object, "throttled", throttled as f64);
    set(&object, "gates", list);
    object.into()
}

/// The configuration summary: what the next engineer tunes when the provider changes its limits.
pub fn describe(rate: Rate) -> JsValue {
    let object = js_sys::Object::new();
    let scope = "one gate per credential (SHA-256 of X-API-Key, else Authorization), shared by every wrapper in the process";
    let store = "in-process memory: this process only; other processes have their own allowance";
    let admission = "token bucket behind a cooldown, FIFO, one timer per gate, monotonic clock";
    let feedback = "429: Retry-After (delay-seconds or HTTP-date) sets the shared cooldown, extended never shortened; X-RateLimit-Limit/-Remaining/-Reset/-Bucket recorded";
    let retry = "off: a 429 is returned to the caller, whose next call waits for the gate";
    let metrics = "stats(): admitted, waiting, peakWaiting, cancelled, throttled, wakeups, timerArmed, cooldownUntil, lastFeedback per gate";
    set(&object, "rate", rate_object(rate));
    set(&object, "scope", scope);
    set(&object, "store", store);
    set(&object, "admission", admission);
    set(&object, "feedback", feedback);
    set(&object, "retry", retry);
    set(&object, "metrics", metrics);
    let text = format!(
        "odds-gate configuration\n\
         - bucket: burst {} at {} per second (set this to the provider's allowance for the key)\n\
         - scope: {scope}\n\
         - store: {store}\n\
         - admission: {admission}\n\
         - feedback: {feedback}\n\
         - retry: {retry}\n\
         - metrics: {metrics}",
        rate.burst(),
        rate.per_second()
    );
    set(&object, "text", text);
    object.into()
}

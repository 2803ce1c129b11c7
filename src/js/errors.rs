//! Errors as JavaScript sees them: built-in `TypeError`/`RangeError` for bad input, what
//! `fetch` itself rejects with for an abort, and the package's own classes for a call abandoned
//! or a spent quota. Messages never contain a credential.
//!
//! The package's classes are written in JavaScript (`pkg-template/errors.js`) and registered at
//! load time with `classes.js`, which makes them (or, unregistered, as in the wasm tests, a
//! plain `Error` with the same `name` and fields).

use wasm_bindgen::prelude::*;

use super::props::{get, set};
use super::text::number;
use crate::core::rules::allowance::ConfigError;
use crate::core::rules::cache::Refusal;
use crate::core::rules::policy::{Abandoned, Reason};
use crate::core::rules::quota::exhausted_message;

#[wasm_bindgen(module = "/src/js/classes.js")]
extern "C" {
    #[wasm_bindgen(js_name = keepClasses)]
    fn keep_classes(abandoned: js_sys::Function, quota: js_sys::Function);
    /// The package's error `name` with `message` and `fields`.
    #[wasm_bindgen(js_name = packageError)]
    fn package_error(name: &str, message: &str, fields: &js_sys::Object) -> JsValue;
    #[wasm_bindgen(js_name = madeAs)]
    fn made_as(value: &JsValue) -> Option<String>;
}

/// The class of the package's own errors `GateAbandonedError`.
const ABANDONED: &str = "GateAbandonedError";
/// The class of the package's own errors `QuotaExhaustedError`.
const QUOTA: &str = "QuotaExhaustedError";

/// The gate's own refusal `error` is, if the package made it (an error of the same name made
/// elsewhere is not one).
pub fn refusal(error: &JsValue) -> Option<Refusal> {
    match made_as(error)?.as_str() {
        QUOTA => Some(Refusal::Quota),
        ABANDONED => {
            let reason = get(error, "reason").as_string()?;
            Reason::named(&reason).map(Refusal::Abandoned)
        }
        _ => None,
    }
}

/// Registers the package's `GateAbandonedError` and `QuotaExhaustedError` classes (the main
/// module's: the simulator's refusals are `TypeError`s and `RangeError`s).
#[cfg(feature = "fetch")]
#[wasm_bindgen(js_name = registerErrors)]
pub fn register_errors(abandoned: js_sys::Function, quota: js_sys::Function) {
    keep_classes(abandoned, quota);
}

/// A `TypeError`: the value has the wrong type or is missing.
pub fn type_error(message: &str) -> JsValue {
    js_sys::TypeError::new(message).into()
}

/// A `RangeError`: the value has the right type but is out of range.
pub fn range_error(message: &str) -> JsValue {
    js_sys::RangeError::new(message).into()
}

/// A configuration error: a value out of range, or (a field missing, options that clash) of
/// the wrong shape.
pub fn config_error(error: ConfigError) -> JsValue {
    let message = error.message(number);
    match error.is_shape() {
        true => type_error(&message),
        false => range_error(&message),
    }
}

/// What `fetch` rejects with when its signal aborts: the signal's reason, or an `AbortError`.
pub fn abort_reason(signal: &web_sys::AbortSignal) -> JsValue {
    let reason = signal.reason();
    if !reason.is_undefined() {
        return reason;
    }
    dom_exception("This operation was aborted", "AbortError")
}

/// A `DOMException` such as `AbortSignal.timeout()` produces.
pub fn dom_exception(message: &str, name: &str) -> JsValue {
    web_sys::DomException::new_with_message_and_name(message, name)
        .map(JsValue::from)
        .unwrap_or_else(|e| e)
}

/// `GateAbandonedError`: the call was abandoned, with why and how far it got; `cause` is the
/// last attempt's rejection when it ended without a response.
pub fn abandoned_error(a: Abandoned, cause: Option<JsValue>) -> JsValue {
    let fields = js_sys::Object::new();
    if let Some(cause) = cause {
        set(&fields, "cause", cause);
    }
    set(&fields, "reason", a.reason.as_str().into());
    set(&fields, "attempts", a.attempts.into());
    set(
        &fields,
        "status",
        a.status.map_or(JsValue::NULL, JsValue::from),
    );
    set(
        &fields,
        "retryAfterMs",
        a.retry_after_ms.map_or(JsValue::NULL, JsValue::from),
    );
    package_error(ABANDONED, &a.message(), &fields)
}

/// `QuotaExhaustedError`: the key's monthly quota is spent; `periodEnd` is a `Date` when known.
pub fn quota_error(period_end_wall: Option<f64>) -> JsValue {
    let fields = js_sys::Object::new();
    let end = period_end_wall.map(|ms| js_sys::Date::new(&JsValue::from(ms)));
    set(
        &fields,
        "periodEnd",
        end.clone().map_or(JsValue::NULL, JsValue::from),
    );
    let until = end.map(|d| String::from(d.to_iso_string()));
    let message = exhausted_message(until.as_deref());
    package_error(QUOTA, &message, &fields)
}

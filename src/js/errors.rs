//! Errors as JavaScript sees them: built-in `TypeError`/`RangeError` for bad input, and what
//! `fetch` itself rejects with for an abort. Messages never contain a credential.

use wasm_bindgen::prelude::*;

use crate::core::config::ConfigError;

/// A `TypeError`: the value has the wrong type or is missing.
pub fn type_error(message: &str) -> JsValue {
    js_sys::TypeError::new(message).into()
}

/// A `RangeError`: the value has the right type but is out of range.
pub fn range_error(message: &str) -> JsValue {
    js_sys::RangeError::new(message).into()
}

/// Every configuration error is a value out of range.
pub fn config_error(error: ConfigError) -> JsValue {
    range_error(&error.to_string())
}

/// What `fetch` rejects with when its signal aborts: the signal's reason, or an `AbortError`.
pub fn abort_reason(signal: &web_sys::AbortSignal) -> JsValue {
    let reason = signal.reason();
    if !reason.is_undefined() {
        return reason;
    }
    web_sys::DomException::new_with_message_and_name("This operation was aborted", "AbortError")
        .map(JsValue::from)
        .unwrap_or_else(|e| e)
}

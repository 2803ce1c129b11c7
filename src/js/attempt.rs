//! One attempt, as the bindings see it. The work itself (timeout, caller's signal, a copy of
//! `init`) is done by `attempt.js`, which the package's fast path calls directly for calls
//! admitted at once (through `attemptFunction`, so both paths share one module and its one
//! timer); here it is awaited for every other attempt.

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

use super::Exported;
use crate::core::Millis;

#[wasm_bindgen(module = "/src/js/attempt.js")]
extern "C" {
    #[wasm_bindgen(thread_local_v2, js_name = attempt)]
    static ATTEMPT: js_sys::Function;

    #[wasm_bindgen(js_name = attempt)]
    fn attempt_js(
        fetch: &js_sys::Function,
        input: &JsValue,
        init: &JsValue,
        caller: Option<&web_sys::AbortSignal>,
        timeout_ms: f64,
    ) -> js_sys::Promise;
}

/// `attempt.js`'s `attempt`, for the package's fast path.
#[wasm_bindgen(js_name = attemptFunction)]
pub fn attempt_function() -> Exported {
    Ok(ATTEMPT.with(Clone::clone).into())
}

/// How an attempt ended.
pub enum Attempted {
    /// A response arrived, with its status (0 when it has none).
    Response(JsValue, u16),
    /// The inner fetch rejected on its own (`timeout: false`) or because our timeout fired.
    Failed {
        /// The rejection, to pass on unchanged when it is not retried.
        error: JsValue,
        /// Our per-attempt timeout caused it.
        timeout: bool,
    },
    /// The caller's signal aborted: reject with this, never retry.
    CallerAborted(JsValue),
}

impl Attempted {
    /// Reads `attempt.js`'s `(value, how)`, and the status of a response.
    pub fn from_js(value: JsValue, how: u8, status: u16) -> Attempted {
        match how {
            0 => Attempted::Response(value, status),
            3 => Attempted::CallerAborted(value),
            how => Attempted::Failed {
                error: value,
                timeout: how == 2,
            },
        }
    }
}

/// Calls `fetch(input, init)`. With `timeout_ms` 0 the call goes out as it is (`retry: false`);
/// otherwise with a copy of `init` whose signal aborts when `caller`'s does or after
/// `timeout_ms`, whichever is first.
pub async fn send(
    fetch: &js_sys::Function,
    input: &JsValue,
    init: &JsValue,
    caller: Option<&web_sys::AbortSignal>,
    timeout_ms: Millis,
) -> Attempted {
    // `attempt.js` never rejects: it resolves with `[value, how, status]`.
    match JsFuture::from(attempt_js(fetch, input, init, caller, timeout_ms)).await {
        Ok(ended) => {
            let ended: js_sys::Array = ended.unchecked_into();
            let number = |i, or| ended.get(i).as_f64().unwrap_or(or);
            Attempted::from_js(ended.get(0), number(1, 1.0) as u8, number(2, 0.0) as u16)
        }
        Err(error) => Attempted::from_js(error, 1, 0),
    }
}

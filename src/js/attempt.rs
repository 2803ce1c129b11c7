//! One attempt, as the bindings see it. The work itself (timeout, caller's signal, a copy of
//! `init`, the response's feedback headers) is done by `attempt.js`, which the package's fast
//! path (`fast.js`) calls directly for calls admitted at once; the driver calls it for every
//! other attempt: one module and its one timer.

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::errors::type_error;
use super::props::get;
use super::Exported;
use crate::core::Millis;

#[wasm_bindgen(module = "/src/js/attempt.js")]
extern "C" {
    /// Sends `fetch(input, init)` under `timeout_ms` (0: untouched) and the caller's signal,
    /// then calls `settle(id, value, how, status, feedback)`; from the call's own request where
    /// calls keep to theirs (`requests.js`).
    pub fn send(
        fetch: &js_sys::Function,
        input: &JsValue,
        init: &JsValue,
        timeout_ms: Millis,
        settle: &js_sys::Function,
        id: f64,
    );
}

#[wasm_bindgen(module = "/src/js/fast.js")]
extern "C" {
    #[wasm_bindgen(thread_local_v2, js_name = gated)]
    static GATED: js_sys::Function;
}

/// `fast.js`'s `gated`, which makes the package's `fetchImpl` for a `Transport`.
#[wasm_bindgen(js_name = gatedFunction)]
pub fn gated_function() -> Exported {
    Ok(GATED.with(Clone::clone).into())
}

/// The global `fetch`, looked up at call time so a test or polyfill installed later is used.
pub fn global_fetch() -> Result<js_sys::Function, JsValue> {
    get(&js_sys::global(), "fetch")
        .dyn_into()
        .map_err(|_| type_error("No global `fetch`: pass one as the `fetch` option"))
}

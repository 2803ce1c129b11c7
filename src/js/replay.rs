//! Sending a stream body more than once (`replay.js`): before each attempt the driver splits
//! it, sends one copy and keeps the other; when the call ends, the kept copy is let go.

use wasm_bindgen::prelude::*;

#[wasm_bindgen(module = "/src/js/replay.js")]
extern "C" {
    /// `[input, init]` to send now and `[input, init]` to keep, as one array of four.
    pub fn split(input: &JsValue, init: &JsValue) -> js_sys::Array;
    /// Cancels the kept copy's stream.
    pub fn release(input: &JsValue, init: &JsValue);
}

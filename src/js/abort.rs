//! An `abort` listener that lives exactly as long as the wait it guards: removed on drop, so a
//! long-lived signal does not collect listeners from calls that finished long ago.

use wasm_bindgen::prelude::*;

#[wasm_bindgen(module = "/src/js/listen.js")]
extern "C" {
    fn listen(
        signal: &web_sys::AbortSignal,
        on_abort: &js_sys::Function,
        id: u32,
    ) -> js_sys::Function;
}

/// Calls `on_abort(id)` if `signal` aborts while this value lives. The caller keeps `on_abort`
/// alive at least as long (a gate has one for all its waiters).
pub struct AbortListener {
    stop: js_sys::Function,
}

impl AbortListener {
    /// Listens on `signal`.
    pub fn new(signal: &web_sys::AbortSignal, on_abort: &js_sys::Function, id: u32) -> Self {
        AbortListener {
            stop: listen(signal, on_abort, id),
        }
    }
}

impl Drop for AbortListener {
    fn drop(&mut self) {
        let _ = self.stop.call0(&JsValue::UNDEFINED);
    }
}

//! An `abort` listener that lives exactly as long as the wait it guards: removed on drop, so a
//! long-lived signal does not collect listeners from calls that finished long ago.

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

/// Runs `on_abort` if `signal` aborts while this value lives.
pub struct AbortListener {
    signal: web_sys::AbortSignal,
    callback: Closure<dyn FnMut()>,
}

impl AbortListener {
    /// Listens on `signal`. A boxed callback, so every listener shares one closure shim.
    pub fn new(signal: &web_sys::AbortSignal, on_abort: Box<dyn FnMut()>) -> Self {
        let callback = Closure::wrap(on_abort);
        let _ = signal.add_event_listener_with_callback("abort", callback.as_ref().unchecked_ref());
        AbortListener {
            signal: signal.clone(),
            callback,
        }
    }
}

impl Drop for AbortListener {
    fn drop(&mut self) {
        let _ = self
            .signal
            .remove_event_listener_with_callback("abort", self.callback.as_ref().unchecked_ref());
    }
}

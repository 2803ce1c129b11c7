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
    /// Listens on `signal`.
    pub fn new(signal: &web_sys::AbortSignal, on_abort: impl FnMut() + 'static) -> Self {
        let callback = Closure::<dyn FnMut()>::new(on_abort);
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

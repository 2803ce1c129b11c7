//! One `setTimeout` at a time, bound from the global scope (Node has no `window`). The handle is
//! cleared on drop and whenever nothing needs waking, so an idle process holds no timer; a timer
//! made not to hold the process (the sweep's) is unref'd where the runtime can (Node, Bun, Deno).

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::core::Millis;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_name = setTimeout)]
    fn set_timeout(handler: &js_sys::Function, ms: f64) -> JsValue;
    #[wasm_bindgen(js_name = clearTimeout)]
    fn clear_timeout(handle: &JsValue);
}

/// Node's `setTimeout` treats anything above 2^31 - 1 ms as 1 ms; longer waits re-arm.
const MAX_TIMEOUT_MS: f64 = 2_147_483_647.0;

/// A re-armable timer that runs one callback.
pub struct Timer {
    callback: Closure<dyn FnMut()>,
    armed: Option<(JsValue, Millis)>,
    /// Whether it keeps the process alive while armed.
    holds: bool,
}

impl Timer {
    /// A disarmed timer that will run `callback` when it fires, and keeps the process alive
    /// while armed if it `holds`. A boxed callback, so every timer shares one closure shim.
    pub fn new(callback: Box<dyn FnMut()>, holds: bool) -> Self {
        Timer {
            callback: Closure::wrap(callback),
            armed: None,
            holds,
        }
    }

    /// Makes sure the callback runs at `due` (on the clock where it is `now`) or earlier. An
    /// armed timer that is already due no later is kept, so many waiters cost one timer.
    pub fn arm(&mut self, due: Millis, now: Millis) {
        if matches!(self.armed, Some((_, armed_due)) if armed_due <= due) {
            return;
        }
        self.disarm();
        // Not `clamp`: its NaN assertion would bring float formatting into the module.
        #[allow(clippy::manual_clamp)]
        let delay = (due - now).ceil().max(0.0).min(MAX_TIMEOUT_MS);
        let handle = set_timeout(self.callback.as_ref().unchecked_ref(), delay);
        if !self.holds && handle.is_object() {
            let unref = js_sys::Reflect::get(&handle, &JsValue::from_str("unref"));
            if let Some(unref) = unref
                .ok()
                .and_then(|f| f.dyn_into::<js_sys::Function>().ok())
            {
                let _ = unref.call0(&handle);
            }
        }
        self.armed = Some((handle, due));
    }

    /// Cancels the pending run, if any.
    pub fn disarm(&mut self) {
        if let Some((handle, _)) = self.armed.take() {
            clear_timeout(&handle);
        }
    }

    /// Forgets the handle of a run that has just happened; returns when it was due.
    pub fn fired(&mut self) -> Option<Millis> {
        self.armed.take().map(|(_, due)| due)
    }
}

impl Drop for Timer {
    fn drop(&mut self) {
        self.disarm();
    }
}

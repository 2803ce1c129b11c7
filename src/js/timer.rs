//! One `setTimeout` at a time, bound from the global scope (Node has no `window`). The handle is
//! cleared on drop and whenever nothing needs waking, so an idle process holds no timer; a timer
//! made not to hold the process (the sweep's) is unref'd where the runtime can (Node, Bun, Deno).

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::core::base::alarm::Alarm;
use crate::core::Millis;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_name = setTimeout)]
    fn set_timeout(handler: &js_sys::Function, ms: f64) -> JsValue;
    #[wasm_bindgen(js_name = clearTimeout)]
    fn clear_timeout(handle: &JsValue);
}

/// A re-armable timer that runs one callback.
pub struct Timer {
    callback: Closure<dyn FnMut()>,
    /// The pending run's handle, while armed.
    handle: Option<JsValue>,
    /// When it is due (the core's [`Alarm`] decides when it is armed again).
    alarm: Alarm,
    /// Whether it keeps the process alive while armed.
    holds: bool,
}

impl Timer {
    /// A disarmed timer that will run `callback` when it fires, and keeps the process alive
    /// while armed if it `holds`. A boxed callback, so every timer shares one closure shim.
    pub fn new(callback: Box<dyn FnMut()>, holds: bool) -> Self {
        Timer {
            callback: Closure::wrap(callback),
            handle: None,
            alarm: Alarm::default(),
            holds,
        }
    }

    /// Makes sure the callback runs at `due` (on the clock where it is `now`) or earlier. An
    /// armed timer that is already due no later is kept, so many waiters cost one timer.
    pub fn arm(&mut self, due: Millis, now: Millis) {
        let Some(delay) = self.alarm.arm(due, now) else {
            return;
        };
        if let Some(handle) = self.handle.take() {
            clear_timeout(&handle);
        }
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
        self.handle = Some(handle);
    }

    /// Cancels the pending run, if any.
    pub fn disarm(&mut self) {
        self.alarm.disarm();
        if let Some(handle) = self.handle.take() {
            clear_timeout(&handle);
        }
    }

    /// How long from `now` until it is due (see [`Alarm::left`]).
    pub fn left(&self, now: Millis) -> Option<Millis> {
        self.alarm.left(now)
    }

    /// Forgets the handle of a run that has just happened; returns when it was due.
    pub fn fired(&mut self) -> Option<Millis> {
        self.handle = None;
        self.alarm.fired()
    }
}

impl Drop for Timer {
    fn drop(&mut self) {
        self.disarm();
    }
}

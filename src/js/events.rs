//! The `onEvent` hook: one plain object per event, delivered synchronously. A throwing hook is
//! ignored: observing must never change what happens to the call.

use wasm_bindgen::JsValue;

use super::shapes::{to_js, Date};
use super::shared_memory;
use crate::core::gate::action::Event;
use crate::core::gates::hook::told;

/// Builds and delivers events when a hook is set; costs nothing when it is not.
#[derive(Clone, Default, PartialEq)]
pub struct Events(Option<js_sys::Function>);

impl Events {
    /// Delivers to `hook`, when there is one.
    pub fn new(hook: Option<js_sys::Function>) -> Self {
        Events(hook)
    }

    /// Whether a hook is set.
    pub fn is_set(&self) -> bool {
        self.0.is_some()
    }

    /// Sends `event` about the gate of `scope`, in the hook's words (the core's `told`).
    pub fn deliver(&self, scope: &str, event: &Event) {
        let Some(hook) = &self.0 else { return };
        let slots = || shared_memory::size().unwrap_or_default().1;
        if let Some(told) = told(scope, event, slots, Date) {
            let _ = hook.call1(&JsValue::UNDEFINED, &to_js(&told));
        }
    }
}

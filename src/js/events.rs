//! The `onEvent` hook: one plain object per event, delivered synchronously. A throwing hook is
//! ignored: observing must never change what happens to the call.

use wasm_bindgen::JsValue;

use super::props::set;

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

    /// Sends `{ type, scope, ...fields }`. `fields` is only built when someone listens.
    pub fn emit(&self, kind: &str, scope: &str, fields: &dyn Fn(&js_sys::Object)) {
        let Some(hook) = &self.0 else { return };
        let event = js_sys::Object::new();
        set(&event, "type", kind.into());
        set(&event, "scope", scope.into());
        fields(&event);
        let _ = hook.call1(&JsValue::UNDEFINED, &event);
    }
}

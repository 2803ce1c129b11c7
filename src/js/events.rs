//! The `onEvent` hook: one plain object per event, delivered synchronously. A throwing hook is
//! ignored: observing must never change what happens to the call.

use wasm_bindgen::JsValue;

use super::props::set;
use super::shapes::{to_js, Date};
use super::shared_memory;
use crate::core::gate::action::Event;
use crate::core::gates::report::Learned;

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

    /// Sends `event` about the gate of `scope`, in the hook's words: `{ type, scope, ... }`.
    pub fn deliver(&self, scope: &str, event: &Event) {
        let kind = match event {
            Event::Admitted { .. } => return,
            Event::Throttled { .. } => "throttled",
            Event::Retry { .. } => "retry",
            Event::Abandoned { .. } => "abandoned",
            Event::QuotaProbe { .. } => "quota-probe",
            Event::Learned(_) => "learned",
            Event::StoreDown => "store-down",
            Event::StoreUp => "store-up",
            Event::NoRoom => "shared-memory-full",
        };
        let fields = |e: &js_sys::Object| match event {
            Event::Throttled { retry_after_ms, .. } => set(
                e,
                "retryAfterMs",
                retry_after_ms.map_or(JsValue::NULL, JsValue::from),
            ),
            Event::Retry {
                attempt,
                delay_ms,
                server_delay,
                ..
            } => {
                set(e, "attempt", (*attempt).into());
                set(e, "delayMs", (*delay_ms).into());
                set(e, "serverDelay", (*server_delay).into());
            }
            Event::Abandoned {
                reason, attempts, ..
            } => {
                set(e, "reason", reason.as_str().into());
                set(e, "attempts", (*attempts).into());
            }
            Event::QuotaProbe {
                exhausted,
                answered,
            } => {
                set(e, "exhausted", (*exhausted).into());
                set(e, "answered", (*answered).into());
            }
            Event::Learned(estimate) => {
                let learned = to_js(&Learned::new(*estimate, Date));
                set(e, "learned", learned);
            }
            Event::NoRoom => {
                let (_, most) = shared_memory::size().unwrap_or_default();
                set(e, "slots", most.into());
            }
            Event::Admitted { .. } | Event::StoreDown | Event::StoreUp => {}
        };
        self.emit(kind, scope, &fields);
    }
}

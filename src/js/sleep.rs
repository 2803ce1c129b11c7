//! A backoff sleep that an abort cuts short. One timer per sleeping call: only retries without
//! a `Retry-After` sleep (a server delay holds the whole gate instead), and the timer is gone
//! as soon as the sleep ends either way.

use std::rc::Rc;

use wasm_bindgen::prelude::*;

use super::abort::AbortListener;
use super::clock;
use super::errors::abort_reason;
use super::timer::Timer;
use super::wait::Slot;
use crate::core::Millis;

/// Resolves at `at` on the monotonic clock; rejects with the abort reason if `signal` aborts.
pub async fn until(at: Millis, signal: Option<&web_sys::AbortSignal>) -> Result<(), JsValue> {
    if let Some(signal) = signal.filter(|s| s.aborted()) {
        return Err(abort_reason(signal));
    }
    let slot: Slot<Result<(), JsValue>> = Slot::default();
    let mut timer = {
        let slot = slot.clone();
        Timer::new(Closure::new(move || slot.settle(Ok(()))))
    };
    timer.arm(at, clock::now());
    let _listener = signal.map(|signal| {
        let (slot, signal_) = (slot.clone(), Rc::new(signal.clone()));
        AbortListener::new(signal, move || slot.settle(Err(abort_reason(&signal_))))
    });
    slot.wait().await
}

//! Waiting with a time limit: a backoff sleep that an abort cuts short, and a bound on how
//! long we wait for someone else's answer.
//!
//! A backoff sleep that an abort cuts short. One timer per sleeping call: only retries without
//! a `Retry-After` sleep (a server delay holds the whole gate instead), and the timer is gone
//! as soon as the sleep ends either way.

use std::future::Future;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::spawn_local;

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
        Timer::new(Box::new(move || slot.settle(Ok(()))))
    };
    timer.arm(at, clock::now());
    let on_abort = signal.map(|signal| {
        let (slot, signal) = (slot.clone(), signal.clone());
        Closure::<dyn FnMut(u32)>::new(move |_| slot.settle(Err(abort_reason(&signal))))
    });
    // Declared after its callback, so dropped (and stops listening) first.
    let _listener = signal
        .zip(on_abort.as_ref())
        .map(|(signal, on_abort)| AbortListener::new(signal, on_abort.as_ref().unchecked_ref(), 0));
    slot.wait().await
}

/// Waits for `future` at most `ms`; `None` when it did not finish in time (it keeps running,
/// its answer unheard).
pub async fn within<T: 'static>(
    ms: Millis,
    future: impl Future<Output = T> + 'static,
) -> Option<T> {
    let slot: Slot<Option<T>> = Slot::default();
    let answered = slot.clone();
    spawn_local(async move { answered.settle(Some(future.await)) });
    let mut timer = {
        let slot = slot.clone();
        Timer::new(Box::new(move || slot.settle(None)))
    };
    let now = clock::now();
    timer.arm(now + ms, now);
    slot.wait().await
}

//! One attempt: the inner fetch, under a per-attempt timeout of our own and the caller's
//! signal. The three ways it can end are told apart, because only some are worth a retry.

use std::cell::Cell;
use std::rc::Rc;

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

use super::abort::AbortListener;
use super::clock;
use super::errors::{abort_reason, dom_exception};
use super::read::get;
use super::timer::Timer;
use crate::core::Millis;

/// How an attempt ended.
pub enum Attempted {
    /// A response arrived (any status).
    Response(JsValue),
    /// The inner fetch rejected on its own (`timeout: false`) or because our timeout fired.
    Failed {
        /// The rejection, to pass on unchanged when it is not retried.
        error: JsValue,
        /// Our per-attempt timeout caused it.
        timeout: bool,
    },
    /// The caller's signal aborted: reject with this, never retry.
    CallerAborted(JsValue),
}

/// Calls `fetch(input, init)` as it is: no copy of `init`, no timer (`retry: false`).
pub async fn send_plain(fetch: &js_sys::Function, input: &JsValue, init: &JsValue) -> Attempted {
    match call(fetch, input, init).await {
        Ok(response) => Attempted::Response(response),
        Err(error) => Attempted::Failed {
            error,
            timeout: false,
        },
    }
}

/// Calls `fetch` with a copy of `init` whose signal aborts when the caller's does or after
/// `timeout_ms`, whichever is first.
pub async fn send_guarded(
    fetch: &js_sys::Function,
    input: &JsValue,
    init: &JsValue,
    caller: Option<&web_sys::AbortSignal>,
    timeout_ms: Millis,
) -> Attempted {
    if let Some(signal) = caller.filter(|s| s.aborted()) {
        return Attempted::CallerAborted(abort_reason(signal));
    }
    let Ok(controller) = web_sys::AbortController::new() else {
        return send_plain(fetch, input, init).await;
    };
    let timed_out = Rc::new(Cell::new(false));
    let mut timer = {
        let (controller, timed_out) = (controller.clone(), timed_out.clone());
        Timer::new(Box::new(move || {
            timed_out.set(true);
            let reason = dom_exception("The attempt timed out", "TimeoutError");
            controller.abort_with_reason(&reason);
        }))
    };
    let now = clock::now();
    timer.arm(now + timeout_ms, now);
    let _listener = caller.map(|signal| {
        let (controller, signal_) = (controller.clone(), signal.clone());
        AbortListener::new(
            signal,
            Box::new(move || controller.abort_with_reason(&abort_reason(&signal_))),
        )
    });
    let guarded = js_sys::Object::new();
    if init.is_object() {
        let _ = js_sys::Object::assign(&guarded, init.unchecked_ref());
    }
    let _ = js_sys::Reflect::set(&guarded, &"signal".into(), &controller.signal());
    let result = call(fetch, input, &guarded).await;
    timer.disarm();
    let error = match result {
        Ok(response) => return Attempted::Response(response),
        Err(error) => error,
    };
    match caller.filter(|s| s.aborted()) {
        Some(signal) => Attempted::CallerAborted(abort_reason(signal)),
        None => Attempted::Failed {
            error,
            timeout: timed_out.get(),
        },
    }
}

async fn call(
    fetch: &js_sys::Function,
    input: &JsValue,
    init: &JsValue,
) -> Result<JsValue, JsValue> {
    let pending = fetch.call2(&JsValue::UNDEFINED, input, init)?;
    JsFuture::from(js_sys::Promise::resolve(&pending)).await
}

/// The response's status, or 0 when it has none.
pub fn status(response: &JsValue) -> u16 {
    get(response, "status").as_f64().map_or(0, |s| s as u16)
}

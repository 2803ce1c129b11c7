//! `createFetch`'s engine: for every call, find the credential's gate, wait for admission, call
//! the inner `fetch`, read throttle feedback from the headers, and hand back the very same
//! `Response` with its body unread.

use std::cell::RefCell;
use std::rc::Rc;

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::{future_to_promise, JsFuture};

use super::clock;
use super::errors::{config_error, range_error, type_error};
use super::figures;
use super::headers::{credential, lookup};
use super::read::{self, get};
use super::registry::gate_for;
use super::shared_gate::SharedGate;
use crate::core::config::Rate;
use crate::core::feedback::parse_feedback;
use crate::core::scope::Scope;

const OPTIONS: &[&str] = &["rate", "fetch", "retry"];
const RATE_OPTIONS: &[&str] = &["burst", "perSecond"];

/// A gated `fetch`. The package's `createFetch` wraps it in a plain function.
#[wasm_bindgen]
pub struct Transport {
    inner: Rc<Inner>,
}

struct Inner {
    rate: Rate,
    fetch: Option<js_sys::Function>,
    /// Gates this wrapper has used, most recent first: the figures it reports, and a fast path
    /// for the common case of one key.
    gates: RefCell<Vec<Rc<SharedGate>>>,
}

#[wasm_bindgen]
impl Transport {
    /// Validates the options; see the package's `index.d.ts` for each one.
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue) -> Result<Transport, JsValue> {
        read::object(&options, "options", OPTIONS, false)?;
        let rate_value = get(&options, "rate");
        if rate_value.is_undefined() {
            return Err(type_error(
                "`rate` is required: the provider's allowance for this key, e.g. { burst: 2, perSecond: 2 }",
            ));
        }
        read::object(&rate_value, "rate", RATE_OPTIONS, false)?;
        let rate = Rate::new(
            read::required_number(&rate_value, "burst", "rate.burst")?,
            read::required_number(&rate_value, "perSecond", "rate.perSecond")?,
        )
        .map_err(config_error)?;

        let fetch = get(&options, "fetch");
        let fetch = if fetch.is_undefined() {
            None
        } else {
            Some(fetch.dyn_into::<js_sys::Function>().map_err(|v| {
                type_error(&format!(
                    "Expected `fetch` to be a function, got {}",
                    read::describe(&v)
                ))
            })?)
        };

        let retry = get(&options, "retry");
        if !(retry.is_undefined() || retry == JsValue::FALSE) {
            return Err(type_error(
                "Expected `retry` to be false: retries are not built yet, a 429 is returned to the caller",
            ));
        }

        Ok(Transport {
            inner: Rc::new(Inner {
                rate,
                fetch,
                gates: RefCell::new(Vec::new()),
            }),
        })
    }

    /// `fetch(input, init)` through the credential's gate.
    pub fn fetch(&self, input: JsValue, init: JsValue) -> js_sys::Promise {
        let inner = self.inner.clone();
        // Join the line now, in call order; only the waiting and the network are asynchronous.
        let entry = self
            .inner
            .gate(&input, &init)
            .and_then(|gate| Ok((gate.enter(signal(&input, &init))?, gate)));
        future_to_promise(async move {
            let (entry, gate) = entry?;
            entry.admitted().await?;
            inner.send(&gate, input, init).await
        })
    }

    /// Live figures of every gate this wrapper has used.
    pub fn stats(&self) -> JsValue {
        figures::stats(&self.inner.gates.borrow())
    }

    /// The configuration summary, as an object with a `text` rendering.
    pub fn describe(&self) -> JsValue {
        figures::describe(self.inner.rate)
    }
}

impl Inner {
    /// Calls the inner fetch for an admitted call and observes the response.
    async fn send(
        &self,
        gate: &SharedGate,
        input: JsValue,
        init: JsValue,
    ) -> Result<JsValue, JsValue> {
        let fetch = match &self.fetch {
            Some(fetch) => fetch.clone(),
            None => global_fetch()?,
        };
        let pending = fetch.call2(&JsValue::UNDEFINED, &input, &init)?;
        let response = JsFuture::from(js_sys::Promise::resolve(&pending)).await?;
        if get(&response, "status").as_f64() == Some(429.0) {
            observe_throttle(gate, &response)?;
        }
        Ok(response)
    }

    fn gate(&self, input: &JsValue, init: &JsValue) -> Result<Rc<SharedGate>, JsValue> {
        let credential = credential(input, init);
        let scope = Scope::of(
            credential.api_key.as_deref(),
            credential.authorization.as_deref(),
        );
        let mut gates = self.gates.borrow_mut();
        if let Some(index) = gates.iter().position(|g| *g.scope() == scope) {
            if index > 0 {
                let gate = gates.remove(index);
                gates.insert(0, gate);
            }
            return Ok(gates[0].clone());
        }
        let gate = gate_for(&scope, self.rate)?;
        gates.insert(0, gate.clone());
        Ok(gate)
    }
}

/// Feeds a 429's headers to the gate. A `Retry-After` too large to honour exactly rejects the
/// call (never a shorter wait), and the body nobody will read is cancelled.
fn observe_throttle(gate: &SharedGate, response: &JsValue) -> Result<(), JsValue> {
    let headers = get(response, "headers");
    match parse_feedback(|name| lookup(&headers, name), clock::wall_now()) {
        Ok(feedback) => {
            gate.observe_throttle(feedback);
            Ok(())
        }
        Err(error) => {
            // Counted and recorded, but no cooldown: the call itself fails loudly instead.
            let readable = parse_feedback(
                |name| {
                    (name != "retry-after")
                        .then(|| lookup(&headers, name))
                        .flatten()
                },
                clock::wall_now(),
            );
            gate.observe_throttle(readable.unwrap_or_default());
            cancel_body(response);
            Err(range_error(&error.to_string()))
        }
    }
}

thread_local! {
    /// A rejection handler that does nothing, made once.
    static IGNORE: Closure<dyn FnMut(JsValue)> = Closure::new(|_: JsValue| {});
}

/// Cancels a response body so its connection is freed.
fn cancel_body(response: &JsValue) {
    let body = get(response, "body");
    if let Ok(cancel) = get(&body, "cancel").dyn_into::<js_sys::Function>() {
        if let Ok(promise) = cancel.call0(&body) {
            // A failed cancel has nobody to tell; keep it from becoming an unhandled rejection.
            if let Ok(promise) = promise.dyn_into::<js_sys::Promise>() {
                let _ = IGNORE.with(|ignore| promise.catch(ignore));
            }
        }
    }
}

/// The `AbortSignal` of the call: `init.signal`, else that of a `Request` passed as `input`.
fn signal(input: &JsValue, init: &JsValue) -> Option<web_sys::AbortSignal> {
    [init, input]
        .into_iter()
        .filter(|v| v.is_object())
        .map(|v| get(v, "signal"))
        .find(|s| s.is_object())
        .map(JsCast::unchecked_into)
}

/// The global `fetch`, looked up at call time so a test or polyfill installed later is used.
fn global_fetch() -> Result<js_sys::Function, JsValue> {
    get(&js_sys::global(), "fetch")
        .dyn_into()
        .map_err(|_| type_error("No global `fetch`: pass one as the `fetch` option"))
}

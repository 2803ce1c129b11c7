#![cfg(target_arch = "wasm32")]
//! `Transport` (the engine behind `createFetch`) under Node: option validation, credential
//! extraction, the caller's `Response` handed back untouched, 429 feedback, rejections passed
//! through, FIFO waiting and aborts, and the retry path.
//!
//! Retries are on by default. Tests of the observe-and-admit behaviour (the caller's very
//! `init`, a 429 or a rejection handed back as it is, waiting with no deadline) make their
//! wrapper with `retry: false`; tests of the retry path use a backoff of a few milliseconds.
//!
//! Gates are process-wide per credential, so every test uses keys of its own. One file per topic
//! beside this one (one test binary, one link and one wasm-bindgen run, all the same); the
//! helpers they share are here.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use js_sys::{Array, Function, Object, Promise, Reflect};
use odds_gate::js::Transport;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

#[path = "../wasm_support/mod.rs"]
mod wasm_support;
use wasm_support::{get, num, object};

mod credentials;
mod feedback;
mod options;
mod passthrough;
mod retries;
mod waiting;

fn global(name: &str) -> JsValue {
    get(&js_sys::global(), name)
}

fn construct(class: &str, args: &[JsValue]) -> JsValue {
    let class: Function = global(class).unchecked_into();
    Reflect::construct(&class, &args.iter().collect::<Array>()).unwrap()
}

fn call_method(target: &JsValue, method: &str, args: &[JsValue]) -> JsValue {
    let function: Function = get(target, method).unchecked_into();
    Reflect::apply(&function, target, &args.iter().collect::<Array>()).unwrap()
}

/// Monotonic milliseconds, the clock the gates use.
fn now() -> f64 {
    call_method(&global("performance"), "now", &[])
        .as_f64()
        .unwrap()
}

fn rate(burst: f64, per_second: f64) -> JsValue {
    object(&[("burst", burst.into()), ("perSecond", per_second.into())])
}

/// A credential no other test (or earlier run in this process) uses.
fn fresh_key(label: &str) -> String {
    thread_local!(static NEXT: Cell<u32> = const { Cell::new(0) });
    let n = NEXT.with(|next| {
        next.set(next.get() + 1);
        next.get()
    });
    let salt = (js_sys::Math::random() * 1e15) as u64;
    format!("sk-test-{label}-{n}-{salt:x}")
}

/// `{ headers: { "X-API-Key": key } }`.
fn key_init(key: &str) -> JsValue {
    object(&[("headers", object(&[("X-API-Key", key.into())]))])
}

/// A real `Response` built from Node's global constructor.
fn response(status: u16, body: &str, headers: &[(&str, &str)]) -> JsValue {
    let headers = object(
        &headers
            .iter()
            .map(|(name, value)| (*name, JsValue::from_str(value)))
            .collect::<Vec<_>>(),
    );
    let init = object(&[("status", status.into()), ("headers", headers)]);
    construct("Response", &[body.into(), init])
}

/// One call the fake fetch saw: `(input, init, time)`.
type Call = (JsValue, JsValue, f64);

/// An inner `fetch` written in Rust: records each call, answers with `respond`.
struct FakeFetch {
    function: Function,
    calls: Rc<RefCell<Vec<Call>>>,
}

impl FakeFetch {
    fn new(
        mut respond: impl FnMut(&JsValue, &JsValue) -> Result<JsValue, JsValue> + 'static,
    ) -> Self {
        let calls = Rc::new(RefCell::new(Vec::new()));
        let seen = calls.clone();
        let closure = Closure::<dyn FnMut(JsValue, JsValue) -> Result<JsValue, JsValue>>::new(
            move |input: JsValue, init: JsValue| {
                seen.borrow_mut().push((input.clone(), init.clone(), now()));
                respond(&input, &init)
            },
        );
        FakeFetch {
            function: closure.into_js_value().unchecked_into(),
            calls,
        }
    }

    /// Answers every call with `Promise.resolve(response)`.
    fn always(response: &JsValue) -> Self {
        let response = response.clone();
        Self::new(move |_, _| Ok(Promise::resolve(&response).into()))
    }

    /// Answers every call with a fresh `200 ok`.
    fn ok() -> Self {
        Self::new(|_, _| Ok(Promise::resolve(&response(200, "ok", &[])).into()))
    }

    /// Answers the calls in turn with `replies`; a call past the last one is rejected.
    fn replies(replies: Vec<JsValue>) -> Self {
        let mut queue = std::collections::VecDeque::from(replies);
        Self::new(move |_, _| match queue.pop_front() {
            Some(reply) => Ok(Promise::resolve(&reply).into()),
            None => Ok(Promise::reject(&construct("Error", &["no reply left".into()])).into()),
        })
    }

    fn count(&self) -> usize {
        self.calls.borrow().len()
    }

    /// The `init` the inner fetch got on call `index`.
    fn init(&self, index: usize) -> JsValue {
        self.calls.borrow()[index].1.clone()
    }
}

/// A wrapper with retries as configured by default.
fn transport(burst: f64, per_second: f64, fake: &FakeFetch) -> Transport {
    transport_with(burst, per_second, fake, &[])
}

/// A wrapper with `extra` options (`retry`, `onEvent`, ...).
fn transport_with(
    burst: f64,
    per_second: f64,
    fake: &FakeFetch,
    extra: &[(&str, JsValue)],
) -> Transport {
    let mut options = vec![
        ("rate", rate(burst, per_second)),
        ("fetch", fake.function.clone().into()),
    ];
    options.extend_from_slice(extra);
    Transport::new(object(&options)).expect("valid options are accepted")
}

/// A wrapper with `retry: false`: observe and admit only.
fn observer(burst: f64, per_second: f64, fake: &FakeFetch) -> Transport {
    transport_with(burst, per_second, fake, &[("retry", false.into())])
}

/// `retry` options with a backoff of at most 2 ms, plus `extra`.
fn fast_retry(extra: &[(&str, JsValue)]) -> JsValue {
    let mut options = vec![("baseMs", 1.into()), ("capMs", 2.into())];
    options.extend_from_slice(extra);
    object(&options)
}

/// `Transport::fetch`'s promise (an export never returns a lone `JsValue`: see `Exported`).
trait FetchPromise {
    fn fetch_promise(&self, input: JsValue, init: JsValue) -> Promise;
}

impl FetchPromise for Transport {
    fn fetch_promise(&self, input: JsValue, init: JsValue) -> Promise {
        self.fetch(input, init).unwrap().unchecked_into()
    }
}

async fn settle(promise: Promise) -> Result<JsValue, JsValue> {
    JsFuture::from(promise).await
}

async fn call(t: &Transport, input: &str, init: &JsValue) -> Result<JsValue, JsValue> {
    settle(t.fetch_promise(input.into(), init.clone())).await
}

async fn sleep(ms: f64) {
    let promise = Promise::new(&mut |resolve, _reject| {
        let set_timeout: Function = global("setTimeout").unchecked_into();
        set_timeout
            .call2(&JsValue::UNDEFINED, &resolve, &ms.into())
            .unwrap();
    });
    JsFuture::from(promise).await.unwrap();
}

fn gates(t: &Transport) -> Array {
    get(&t.stats().unwrap(), "gates").unchecked_into()
}

/// The one gate a wrapper has used.
#[track_caller]
fn only_gate(t: &Transport) -> JsValue {
    let gates = gates(t);
    assert_eq!(gates.length(), 1, "expected one gate");
    gates.get(0)
}

fn message(error: &JsValue) -> String {
    get(error, "message").as_string().unwrap_or_default()
}

#[track_caller]
fn assert_type_error(error: &JsValue, needle: &str, case: &str) {
    assert!(
        error.is_instance_of::<js_sys::TypeError>(),
        "{case}: expected a TypeError, got {error:?}"
    );
    let text = message(error);
    assert!(
        text.contains(needle),
        "{case}: message {text:?} should name {needle:?}"
    );
}

#[track_caller]
fn assert_range_error(error: &JsValue, needle: &str, case: &str) {
    assert!(
        error.is_instance_of::<js_sys::RangeError>(),
        "{case}: expected a RangeError, got {error:?}"
    );
    let text = message(error);
    assert!(
        text.contains(needle),
        "{case}: message {text:?} should name {needle:?}"
    );
}

#[track_caller]
fn construct_error(options: JsValue, case: &str) -> JsValue {
    match Transport::new(options) {
        Ok(_) => panic!("{case}: options were accepted"),
        Err(error) => error,
    }
}

fn abort_controller() -> JsValue {
    construct("AbortController", &[])
}

/// What `fetch` does with a server that never answers: stays pending until `init.signal`
/// aborts, then rejects with the signal's reason.
fn until_aborted(init: &JsValue) -> JsValue {
    let signal = get(init, "signal");
    Promise::new(&mut |_resolve, reject| {
        let aborted = signal.clone();
        let on_abort = Closure::once_into_js(move || {
            reject
                .call1(&JsValue::UNDEFINED, &get(&aborted, "reason"))
                .unwrap();
        });
        call_method(&signal, "addEventListener", &["abort".into(), on_abort]);
    })
    .into()
}

/// A body nobody will read was drained or cancelled: `bodyUsed`, or reading it fails.
async fn assert_body_disposed(response: &JsValue, case: &str) {
    if get(response, "bodyUsed") == JsValue::TRUE {
        return;
    }
    let read = settle(call_method(response, "text", &[]).unchecked_into()).await;
    assert!(read.is_err(), "{case}: the body was left unread: {read:?}");
}

/// A `GateAbandonedError` (a plain `Error` named so, without the package's classes) with
/// these `reason` and `attempts`.
#[track_caller]
fn assert_abandoned(error: &JsValue, reason: &str, attempts: u32, case: &str) {
    assert!(
        error.is_instance_of::<js_sys::Error>(),
        "{case}: expected an Error, got {error:?}"
    );
    assert_eq!(
        get(error, "name").as_string().as_deref(),
        Some("GateAbandonedError"),
        "{case}: {error:?}"
    );
    assert_eq!(
        get(error, "reason").as_string().as_deref(),
        Some(reason),
        "{case}: {error:?}"
    );
    assert_eq!(num(error, "attempts"), f64::from(attempts), "{case}");
}

#![cfg(target_arch = "wasm32")]
//! `Transport` (the engine behind `createFetch`) under Node: option validation, credential
//! extraction, the caller's `Response` handed back untouched, 429 feedback, rejections passed
//! through, FIFO waiting and aborts, and the retry path.
//!
//! Retries are on by default. Tests of the observe-and-admit behaviour (the caller's very
//! `init`, a 429 or a rejection handed back as it is, waiting with no deadline) make their
//! wrapper with `retry: false`; tests of the retry path use a backoff of a few milliseconds.
//!
//! Gates are process-wide per credential, so every test uses keys of its own.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use js_sys::{Array, Function, Object, Promise, Reflect};
use odds_gate::js::Transport;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

mod wasm_support;
use wasm_support::{get, num, object};

// ---------------------------------------------------------------------------------------------
// Helpers

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

// ---------------------------------------------------------------------------------------------
// Options

#[wasm_bindgen_test]
fn options_of_the_wrong_type_or_shape_are_type_errors_naming_the_field() {
    let fetch: JsValue = FakeFetch::ok().function.into();
    let ok_rate = || rate(2.0, 2.0);
    let cases: Vec<(&str, JsValue, &str)> = vec![
        ("null options", JsValue::NULL, "options"),
        ("number options", 42.into(), "options"),
        ("array options", Array::new().into(), "options"),
        (
            "a word for rate",
            object(&[("rate", "fast".into())]),
            "rate",
        ),
        ("numeric rate", object(&[("rate", 2.into())]), "rate"),
        (
            "learn not a boolean",
            object(&[(
                "rate",
                object(&[
                    ("burst", 2.into()),
                    ("perSecond", 2.into()),
                    ("learn", 1.into()),
                ]),
            )]),
            "rate.learn",
        ),
        (
            "array rate",
            object(&[("rate", Array::of2(&2.into(), &2.into()).into())]),
            "rate",
        ),
        (
            "missing perSecond",
            object(&[("rate", object(&[("burst", 2.into())]))]),
            "rate.perSecond",
        ),
        (
            "missing burst",
            object(&[("rate", object(&[("perSecond", 2.into())]))]),
            "rate.burst",
        ),
        (
            "string burst",
            object(&[(
                "rate",
                object(&[("burst", "2".into()), ("perSecond", 2.into())]),
            )]),
            "rate.burst",
        ),
        (
            "null perSecond",
            object(&[(
                "rate",
                object(&[("burst", 2.into()), ("perSecond", JsValue::NULL)]),
            )]),
            "rate.perSecond",
        ),
        (
            "misspelt rate key",
            object(&[(
                "rate",
                object(&[("burst", 2.into()), ("persecond", 2.into())]),
            )]),
            "rate.persecond",
        ),
        (
            "unknown option",
            object(&[("rate", ok_rate()), ("retries", false.into())]),
            "options.retries",
        ),
        (
            "fetch not a function",
            object(&[("rate", ok_rate()), ("fetch", "fetch".into())]),
            "fetch",
        ),
        (
            "retry a number",
            object(&[("rate", ok_rate()), ("retry", 3.into())]),
            "retry",
        ),
        (
            "retry a string",
            object(&[("rate", ok_rate()), ("retry", "yes".into())]),
            "retry",
        ),
        (
            "retry null",
            object(&[("rate", ok_rate()), ("retry", JsValue::NULL)]),
            "retry",
        ),
        (
            "retry an array",
            object(&[("rate", ok_rate()), ("retry", Array::new().into())]),
            "retry",
        ),
        (
            "misspelt retry key",
            object(&[
                ("rate", ok_rate()),
                ("retry", object(&[("maxattempts", 3.into())])),
            ]),
            "retry.maxattempts",
        ),
        (
            "string retry.baseMs",
            object(&[
                ("rate", ok_rate()),
                ("retry", object(&[("baseMs", "5".into())])),
            ]),
            "retry.baseMs",
        ),
        (
            "retry.statuses not an array",
            object(&[
                ("rate", ok_rate()),
                ("retry", object(&[("statuses", 503.into())])),
            ]),
            "retry.statuses",
        ),
        (
            "retry.methods not strings",
            object(&[
                ("rate", ok_rate()),
                (
                    "retry",
                    object(&[("methods", Array::of1(&1.into()).into())]),
                ),
            ]),
            "retry.methods",
        ),
        (
            "retry.budget a number",
            object(&[
                ("rate", ok_rate()),
                ("retry", object(&[("budget", 5.into())])),
            ]),
            "retry.budget",
        ),
        (
            "misspelt retry.budget key",
            object(&[
                ("rate", ok_rate()),
                ("retry", object(&[("budget", object(&[("cap", 5.into())]))])),
            ]),
            "retry.budget.cap",
        ),
        (
            "onEvent not a function",
            object(&[("rate", ok_rate()), ("onEvent", "log".into())]),
            "onEvent",
        ),
        (
            "usageUrl not a string",
            object(&[("rate", ok_rate()), ("usageUrl", 1.into())]),
            "usageUrl",
        ),
    ];
    for (case, options, needle) in cases {
        let error = construct_error(options, case);
        assert_type_error(&error, needle, case);
    }

    // And the accepted shapes really are accepted: `retry` is false, true, absent or an
    // object whose every field is optional.
    let full_retry = object(&[
        ("maxAttempts", 5.into()),
        ("timeBudgetMs", 10_000.into()),
        ("attemptTimeoutMs", 1_000.into()),
        ("baseMs", 10.into()),
        ("capMs", 100.into()),
        ("statuses", Array::of2(&429.into(), &503.into()).into()),
        ("methods", Array::of1(&"get".into()).into()),
        (
            "budget",
            object(&[
                ("capacity", 50.into()),
                ("throttleCost", 1.into()),
                ("transientCost", 2.into()),
                ("successRefill", 0.into()),
            ]),
        ),
    ]);
    // Without a rate (or with 'auto', or with `learn: true`), the allowance is learned.
    for options in [
        JsValue::UNDEFINED,
        object(&[]),
        object(&[("rate", "auto".into())]),
        object(&[(
            "rate",
            object(&[
                ("burst", 2.into()),
                ("perSecond", 2.into()),
                ("learn", true.into()),
            ]),
        )]),
        object(&[("rate", ok_rate())]),
        object(&[("rate", ok_rate()), ("retry", false.into())]),
        object(&[("rate", ok_rate()), ("retry", true.into())]),
        object(&[("rate", ok_rate()), ("retry", object(&[]))]),
        object(&[("rate", ok_rate()), ("retry", full_retry)]),
        object(&[
            ("rate", ok_rate()),
            ("retry", object(&[("budget", false.into())])),
        ]),
        object(&[("rate", ok_rate()), ("fetch", fetch.clone())]),
        object(&[("rate", ok_rate()), ("fetch", JsValue::UNDEFINED)]),
        object(&[
            ("rate", ok_rate()),
            ("onEvent", fetch.clone()),
            ("usageUrl", "https://example.test/usage".into()),
        ]),
    ] {
        let shown = js_sys::JSON::stringify(&options).unwrap();
        assert!(Transport::new(options).is_ok(), "refused: {shown:?}");
    }
}

#[wasm_bindgen_test]
fn out_of_range_rates_are_range_errors_naming_the_field() {
    let cases = [
        (0.0, 2.0, "rate.burst"),
        (0.5, 2.0, "rate.burst"),
        (-1.0, 2.0, "rate.burst"),
        (f64::NAN, 2.0, "rate.burst"),
        (f64::INFINITY, 2.0, "rate.burst"),
        (2.0, 0.0, "rate.perSecond"),
        (2.0, -0.5, "rate.perSecond"),
        (2.0, f64::NAN, "rate.perSecond"),
        (2.0, f64::INFINITY, "rate.perSecond"),
    ];
    for (burst, per_second, field) in cases {
        let case = format!("burst {burst}, perSecond {per_second}");
        let error = construct_error(object(&[("rate", rate(burst, per_second))]), &case);
        assert_range_error(&error, field, &case);
    }
    // The boundaries themselves are valid.
    assert!(Transport::new(object(&[("rate", rate(1.0, 0.001))])).is_ok());

    // Retry values of the right type but out of range are range errors too.
    let budget = |entries: &[(&str, JsValue)]| object(&[("budget", object(entries))]);
    let retry_cases: Vec<(JsValue, &str)> = vec![
        (object(&[("maxAttempts", 0.into())]), "retry.maxAttempts"),
        (object(&[("maxAttempts", 2.5.into())]), "retry.maxAttempts"),
        (object(&[("timeBudgetMs", 0.into())]), "retry.timeBudgetMs"),
        (
            object(&[("attemptTimeoutMs", f64::INFINITY.into())]),
            "retry.attemptTimeoutMs",
        ),
        (object(&[("baseMs", (-1).into())]), "retry.baseMs"),
        (
            object(&[("baseMs", 10.into()), ("capMs", 5.into())]),
            "retry.capMs",
        ),
        (
            object(&[("statuses", Array::of1(&404.into()).into())]),
            "retry.statuses",
        ),
        (budget(&[("capacity", 0.into())]), "retry.budget.capacity"),
        (
            budget(&[("transientCost", (-1).into())]),
            "retry.budget.transientCost",
        ),
    ];
    for (retry, field) in retry_cases {
        let case = js_sys::JSON::stringify(&retry)
            .unwrap()
            .as_string()
            .unwrap();
        let options = object(&[("rate", rate(2.0, 2.0)), ("retry", retry)]);
        let error = construct_error(options, &case);
        assert_range_error(&error, field, &case);
    }
}

#[wasm_bindgen_test]
async fn no_error_message_or_figure_repeats_a_raw_key() {
    let key = fresh_key("secret");
    let secret: JsValue = key.as_str().into();
    let mut messages = Vec::new();
    for options in [
        object(&[("rate", secret.clone())]),
        object(&[(
            "rate",
            object(&[("burst", secret.clone()), ("perSecond", 2.into())]),
        )]),
        object(&[(
            "rate",
            object(&[("burst", 2.into()), ("perSecond", secret.clone())]),
        )]),
        object(&[("rate", rate(2.0, 2.0)), ("fetch", secret.clone())]),
        object(&[("rate", rate(2.0, 2.0)), ("retry", secret.clone())]),
    ] {
        messages.push(message(&construct_error(options, "secret as a value")));
    }

    // The rate-mismatch error names the credential, by its hash only.
    let first = FakeFetch::ok();
    let a = transport(2.0, 2.0, &first);
    call(&a, "https://example.test/a", &key_init(&key))
        .await
        .unwrap();
    let second = FakeFetch::ok();
    let b = transport(3.0, 2.0, &second);
    let error = call(&b, "https://example.test/b", &key_init(&key))
        .await
        .expect_err("a second allowance for one key is refused");
    assert_range_error(&error, "already enforces", "rate mismatch");
    messages.push(message(&error));
    // So does a retry-budget mismatch (the default has 500 tokens; this asks for 100).
    let third = FakeFetch::ok();
    let other_budget = object(&[("budget", object(&[("capacity", 100.into())]))]);
    let c = transport_with(2.0, 2.0, &third, &[("retry", other_budget)]);
    let error = call(&c, "https://example.test/c", &key_init(&key))
        .await
        .expect_err("a second retry budget for one key is refused");
    assert_range_error(&error, "retry budget", "budget mismatch");
    messages.push(message(&error));
    // And a call given up.
    let refusing = FakeFetch::new(|_, _| Ok(Promise::reject(&"down".into()).into()));
    let d = transport_with(
        2.0,
        2.0,
        &refusing,
        &[
            ("retry", fast_retry(&[("maxAttempts", 2.into())])),
            ("typedErrors", true.into()),
        ],
    );
    let other_key = fresh_key("secret-abandoned");
    let error = call(&d, "https://example.test/d", &key_init(&other_key))
        .await
        .expect_err("given up");
    assert_abandoned(&error, "attempts", 2, "abandoned");
    assert!(!message(&error).contains(&other_key));
    messages.push(message(&error));

    for text in &messages {
        assert!(!text.is_empty());
        assert!(!text.contains(&key), "message repeats the key: {text:?}");
    }
    let figures = js_sys::JSON::stringify(&a.stats().unwrap())
        .unwrap()
        .as_string()
        .unwrap();
    assert!(!figures.contains(&key), "stats repeat the key: {figures}");
    let scope = get(&only_gate(&a), "scope").as_string().unwrap();
    assert!(scope.starts_with("key:") && scope.len() > 20, "{scope}");
    let description = get(&a.describe().unwrap(), "text").as_string().unwrap();
    assert!(!description.contains(&key));
}

#[wasm_bindgen_test]
fn describe_reports_the_configured_rate() {
    let fake = FakeFetch::ok();
    let t = transport(4.0, 0.5, &fake);
    let description = t.describe().unwrap();
    let text = get(&description, "text").as_string().unwrap();
    assert!(
        text.contains("burst 4 at 0.5 per second"),
        "describe().text: {text}"
    );
    let rate = get(&description, "rate");
    assert_eq!(num(&rate, "burst"), 4.0);
    assert_eq!(num(&rate, "perSecond"), 0.5);
    // A wrapper that has made no call has no gate and no totals yet.
    let stats = t.stats().unwrap();
    assert_eq!(gates(&t).length(), 0);
    for total in ["admitted", "waiting", "throttled", "retries", "abandoned"] {
        assert_eq!(num(&stats, total), 0.0, "{total}");
    }
    // The retry line says whether retries are on.
    let retry = get(&description, "retry").as_string().unwrap();
    assert!(retry.starts_with("on") && retry.contains("503"), "{retry}");
    let off = observer(4.0, 0.5, &fake).describe().unwrap();
    let retry = get(&off, "retry").as_string().unwrap();
    assert!(retry.starts_with("off"), "{retry}");
}

// ---------------------------------------------------------------------------------------------
// Credentials

#[wasm_bindgen_test]
async fn the_credential_is_read_from_every_header_shape() {
    let fake = FakeFetch::ok();
    // A slow refill keeps the first gate's bucket spent: a gate that is idle again would be
    // forgotten when the second key's gate is made (under load, 5 ms at 1000/s is enough).
    let t = transport(100.0, 0.01, &fake);
    let key = fresh_key("shapes");

    // A plain object with odd casing.
    let plain = object(&[("headers", object(&[("x-Api-KEY", key.as_str().into())]))]);
    call(&t, "https://example.test/1", &plain).await.unwrap();
    // A `Headers`.
    let headers = web_sys::Headers::new().unwrap();
    headers.append("X-API-Key", &key).unwrap();
    let with_headers = object(&[("headers", headers.into())]);
    call(&t, "https://example.test/2", &with_headers)
        .await
        .unwrap();
    // An array of pairs.
    let pairs = Array::of1(&Array::of2(&"X-API-KEY".into(), &key.as_str().into()));
    let with_pairs = object(&[("headers", pairs.into())]);
    call(&t, "https://example.test/3", &with_pairs)
        .await
        .unwrap();
    // A `Request` as input, no init: its headers carry the key.
    let request = construct(
        "Request",
        &["https://example.test/4".into(), key_init(&key)],
    );
    settle(t.fetch_promise(request, JsValue::UNDEFINED))
        .await
        .unwrap();
    // Both credentials: X-API-Key wins over Authorization.
    let both = object(&[(
        "headers",
        object(&[
            ("Authorization", "Bearer someone-else".into()),
            ("x-api-key", key.as_str().into()),
        ]),
    )]);
    call(&t, "https://example.test/5", &both).await.unwrap();

    let gate = only_gate(&t);
    assert_eq!(num(&gate, "admitted"), 5.0);
    assert_eq!(num(&t.stats().unwrap(), "admitted"), 5.0);
    assert_eq!(fake.count(), 5);
    let scope = get(&gate, "scope");

    // A different key is a different gate.
    call(&t, "https://example.test/6", &key_init(&fresh_key("other")))
        .await
        .unwrap();
    let all = gates(&t);
    assert_eq!(all.length(), 2);
    assert_eq!(num(&t.stats().unwrap(), "admitted"), 6.0);
    let original = all
        .iter()
        .find(|g| get(g, "scope") == scope)
        .expect("the first key keeps its gate");
    assert_eq!(num(&original, "admitted"), 5.0);
}

#[wasm_bindgen_test]
async fn authorization_is_the_credential_when_there_is_no_api_key() {
    let fake = FakeFetch::ok();
    // Slow refill: the first gate must not be idle (and forgotten) when the second is made.
    let t = transport(100.0, 0.01, &fake);
    let token = format!("Bearer {}", fresh_key("auth"));
    let plain = object(&[(
        "headers",
        object(&[("AUTHORIZATION", token.as_str().into())]),
    )]);
    call(&t, "https://example.test/1", &plain).await.unwrap();
    let pairs = Array::of1(&Array::of2(&"authorization".into(), &token.as_str().into()));
    call(
        &t,
        "https://example.test/2",
        &object(&[("headers", pairs.into())]),
    )
    .await
    .unwrap();
    assert_eq!(num(&only_gate(&t), "admitted"), 2.0);

    // The same string sent as an X-API-Key is a different credential.
    call(&t, "https://example.test/3", &key_init(&token))
        .await
        .unwrap();
    assert_eq!(gates(&t).length(), 2);
}

#[wasm_bindgen_test]
async fn a_call_without_a_credential_uses_the_anonymous_gate() {
    let fake = FakeFetch::ok();
    let t = transport(1000.0, 1000.0, &fake);
    call(&t, "https://example.test/", &JsValue::UNDEFINED)
        .await
        .unwrap();
    // Headers without a credential, and a non-string value, are anonymous too.
    let init = object(&[(
        "headers",
        object(&[
            ("Accept", "application/json".into()),
            ("X-API-Key", 7.into()),
        ]),
    )]);
    call(&t, "https://example.test/", &init).await.unwrap();
    let gate = only_gate(&t);
    assert_eq!(
        get(&gate, "scope").as_string().as_deref(),
        Some("anonymous")
    );
    assert_eq!(num(&gate, "admitted"), 2.0);
}

#[wasm_bindgen_test]
async fn wrappers_that_share_a_key_share_one_gate_and_one_allowance() {
    let key = fresh_key("shared");
    let fake_a = FakeFetch::ok();
    let fake_b = FakeFetch::ok();
    let a = transport(5.0, 1000.0, &fake_a);
    let b = transport(5.0, 1000.0, &fake_b);
    call(&a, "https://example.test/a", &key_init(&key))
        .await
        .unwrap();
    call(&a, "https://example.test/a", &key_init(&key))
        .await
        .unwrap();
    call(&b, "https://example.test/b", &key_init(&key))
        .await
        .unwrap();
    // Both wrappers report the same process-wide gate.
    assert_eq!(num(&only_gate(&a), "admitted"), 3.0);
    assert_eq!(num(&only_gate(&b), "admitted"), 3.0);
    assert_eq!(get(&only_gate(&a), "scope"), get(&only_gate(&b), "scope"));

    // A third wrapper asking a different allowance for the key is refused before any fetch.
    let fake_c = FakeFetch::ok();
    let c = transport(5.0, 999.0, &fake_c);
    let error = call(&c, "https://example.test/c", &key_init(&key))
        .await
        .expect_err("mismatched rate");
    assert_range_error(
        &error,
        "perSecond: 1000",
        "mismatch message shows both rates",
    );
    assert!(message(&error).contains("perSecond: 999"));
    assert_eq!(fake_c.count(), 0);
    assert_eq!(gates(&c).length(), 0);
    assert_eq!(num(&only_gate(&a), "admitted"), 3.0);

    // Retrying wrappers must agree on the shared retry budget too: the default has 500
    // tokens, and a different capacity is a different budget.
    for (case, retry) in [(
        "another capacity",
        object(&[("budget", object(&[("capacity", 100.into())]))]),
    )] {
        let fake = FakeFetch::ok();
        let d = transport_with(5.0, 1000.0, &fake, &[("retry", retry)]);
        let error = call(&d, "https://example.test/d", &key_init(&key))
            .await
            .expect_err(case);
        assert_range_error(&error, "retry budget", case);
        assert_eq!(fake.count(), 0, "{case}");
    }
    // A wrapper that never retries uses no budget, so it joins whatever the gate has.
    let fake_f = FakeFetch::ok();
    let f = transport_with(5.0, 1000.0, &fake_f, &[("retry", JsValue::FALSE)]);
    call(&f, "https://example.test/f", &key_init(&key))
        .await
        .expect("retry: false shares the gate");
    // Per-call limits may differ: only the shared budget must agree.
    let fake_e = FakeFetch::ok();
    let e = transport_with(
        5.0,
        1000.0,
        &fake_e,
        &[("retry", fast_retry(&[("maxAttempts", 5.into())]))],
    );
    call(&e, "https://example.test/e", &key_init(&key))
        .await
        .unwrap();
    assert_eq!(num(&only_gate(&a), "admitted"), 5.0, "three, f's and e's");
}

// ---------------------------------------------------------------------------------------------
// The Response and rejections pass through untouched

#[wasm_bindgen_test]
async fn the_very_same_response_comes_back_with_its_body_unread() {
    let original = response(
        200,
        "{\"odds\":[1.5,2.5]}",
        &[("Content-Type", "application/json")],
    );
    let fake = FakeFetch::always(&original);
    // Observe and admit only: nothing is copied.
    let t = observer(10.0, 1000.0, &fake);
    let init = key_init(&fresh_key("identity"));
    let returned = call(&t, "https://example.test/odds", &init).await.unwrap();
    assert!(
        Object::is(&returned, &original),
        "a different object came back"
    );
    assert_eq!(get(&returned, "bodyUsed"), JsValue::FALSE);

    // The inner fetch saw the caller's own input and init.
    let calls = fake.calls.borrow().clone();
    assert_eq!(calls.len(), 1);
    assert_eq!(
        calls[0].0.as_string().as_deref(),
        Some("https://example.test/odds")
    );
    assert!(Object::is(&calls[0].1, &init), "init was replaced");

    // And the caller can still read the body.
    let text = settle(call_method(&returned, "text", &[]).unchecked_into())
        .await
        .unwrap();
    assert_eq!(text.as_string().as_deref(), Some("{\"odds\":[1.5,2.5]}"));

    // With retries on (the default), a success is the very same object, body unread, too.
    let original = response(200, "fresh", &[]);
    let fake = FakeFetch::always(&original);
    let t = transport(10.0, 1000.0, &fake);
    let init = key_init(&fresh_key("identity-retry"));
    let returned = call(&t, "https://example.test/odds", &init).await.unwrap();
    assert!(
        Object::is(&returned, &original),
        "retries on: a copy came back"
    );
    assert_eq!(get(&returned, "bodyUsed"), JsValue::FALSE);
    assert_eq!(fake.count(), 1);
}

#[wasm_bindgen_test]
async fn an_inner_fetch_that_returns_a_plain_response_works_too() {
    // No promise: the transport must accept whatever `fetch` returns, thenable or not.
    let original = response(200, "plain", &[]);
    let value = original.clone();
    let fake = FakeFetch::new(move |_, _| Ok(value.clone()));
    let t = transport(10.0, 1000.0, &fake);
    let returned = call(&t, "https://example.test/", &key_init(&fresh_key("plain")))
        .await
        .unwrap();
    assert!(Object::is(&returned, &original));
}

#[wasm_bindgen_test]
async fn an_inner_fetch_rejection_reaches_the_caller_unchanged() {
    // Observe and admit only (`retry: false`): what the inner fetch rejects with is what the
    // caller gets.
    let failure = construct("TypeError", &["fetch failed: ECONNREFUSED".into()]);
    let thrown = failure.clone();
    let fake = FakeFetch::new(move |_, _| Ok(Promise::reject(&thrown).into()));
    let t = observer(10.0, 1000.0, &fake);
    let init = key_init(&fresh_key("reject"));
    let error = call(&t, "https://example.test/", &init)
        .await
        .expect_err("the rejection is passed on");
    assert!(
        Object::is(&error, &failure),
        "the rejection was replaced: {error:?}"
    );

    // A synchronous throw, and a rejection with a non-Error value, are passed on as well.
    let sentinel = object(&[("code", "E_SENTINEL".into())]);
    let thrown = sentinel.clone();
    let throwing = FakeFetch::new(move |_, _| Err(thrown.clone()));
    let t2 = observer(10.0, 1000.0, &throwing);
    let error = call(&t2, "https://example.test/", &init)
        .await
        .expect_err("the throw is passed on");
    assert!(
        Object::is(&error, &sentinel),
        "the throw was replaced: {error:?}"
    );

    let rejecting = FakeFetch::new(|_, _| Ok(Promise::reject(&"plain string".into()).into()));
    let t3 = observer(10.0, 1000.0, &rejecting);
    let error = call(&t3, "https://example.test/", &init).await.unwrap_err();
    assert_eq!(error.as_string().as_deref(), Some("plain string"));

    // Each attempt reached the server, so each spent a token; none was throttled.
    let gate = only_gate(&t);
    assert_eq!(num(&gate, "admitted"), 3.0);
    assert_eq!(num(&gate, "throttled"), 0.0);
    assert_eq!(num(&t.stats().unwrap(), "retries"), 0.0);

    // With retries on, a rejection is a network failure: retried through the gate, and after
    // the third attempt given up, never a success: with the third rejection itself, as fetch
    // would have rejected...
    let thrown = failure.clone();
    let fake = FakeFetch::new(move |_, _| Ok(Promise::reject(&thrown).into()));
    let t = transport_with(10.0, 1000.0, &fake, &[("retry", fast_retry(&[]))]);
    let error = call(
        &t,
        "https://example.test/",
        &key_init(&fresh_key("reject-as-is")),
    )
    .await
    .expect_err("given up");
    assert!(
        Object::is(&error, &failure),
        "the failure itself: {error:?}"
    );
    assert_eq!(fake.count(), 3);
    assert_eq!(num(&get(&only_gate(&t), "abandoned"), "attempts"), 1.0);
    // ...or, with `typedErrors`, with a GateAbandonedError whose cause it is.
    let thrown = failure.clone();
    let fake = FakeFetch::new(move |_, _| Ok(Promise::reject(&thrown).into()));
    let typed = [("retry", fast_retry(&[])), ("typedErrors", true.into())];
    let t = transport_with(10.0, 1000.0, &fake, &typed);
    let error = call(
        &t,
        "https://example.test/",
        &key_init(&fresh_key("reject-retry")),
    )
    .await
    .expect_err("given up");
    assert_abandoned(&error, "attempts", 3, "retried rejection");
    assert!(Object::is(&get(&error, "cause"), &failure));
    assert!(get(&error, "status").is_null(), "no response ever came");
    assert_eq!(fake.count(), 3);
    let gate = only_gate(&t);
    assert_eq!(num(&gate, "admitted"), 3.0);
    assert_eq!(num(&gate, "requests"), 3.0);
    assert_eq!(num(&get(&gate, "retries"), "network"), 2.0);
    assert_eq!(num(&get(&gate, "abandoned"), "attempts"), 1.0);
    // Two transient retries at 10 tokens each, never refunded: the call did not succeed.
    assert_eq!(num(&gate, "retryBudget"), 480.0);
    let totals = t.stats().unwrap();
    assert_eq!(num(&totals, "retries"), 2.0);
    assert_eq!(num(&totals, "abandoned"), 1.0);
}

#[wasm_bindgen_test]
async fn the_global_fetch_is_used_when_no_fetch_option_is_given() {
    let original = response(200, "global", &[]);
    let fake = FakeFetch::always(&original);
    let t = Transport::new(object(&[("rate", rate(10.0, 1000.0))])).unwrap();
    // Installed after the wrapper was made: the global is looked up at call time.
    let global_object = js_sys::global();
    let saved = global("fetch");
    Reflect::set(&global_object, &"fetch".into(), &fake.function).unwrap();
    let result = call(&t, "https://example.test/", &key_init(&fresh_key("global"))).await;
    Reflect::set(&global_object, &"fetch".into(), &saved).unwrap();
    let returned = result.unwrap();
    assert!(Object::is(&returned, &original));
    assert_eq!(fake.count(), 1);
}

// ---------------------------------------------------------------------------------------------
// 429 feedback

#[wasm_bindgen_test]
async fn a_429_with_retry_after_seconds_sets_the_cooldown_and_records_the_headers() {
    let original = response(
        429,
        "{\"detail\":\"Too many requests\"}",
        &[
            ("Retry-After", "30"),
            ("X-RateLimit-Limit", "2"),
            ("X-RateLimit-Remaining", "0"),
            ("X-RateLimit-Reset", "0.5"),
            ("X-RateLimit-Bucket", "snapshot"),
        ],
    );
    let fake = FakeFetch::always(&original);
    // Observe and admit only: the 429 goes back to the caller as it is.
    let t = observer(2.0, 2.0, &fake);
    let key = fresh_key("retry-after");
    let before = now();
    let returned = call(&t, "https://example.test/", &key_init(&key))
        .await
        .expect("a 429 is returned, not thrown");
    assert!(Object::is(&returned, &original));
    assert_eq!(get(&returned, "bodyUsed"), JsValue::FALSE);

    let stats = t.stats().unwrap();
    assert_eq!(num(&stats, "throttled"), 1.0);
    let gate = only_gate(&t);
    let remaining = num(&gate, "cooldownRemainingMs");
    assert!(
        (29_000.0..=30_000.0).contains(&remaining),
        "cooldownRemainingMs {remaining}"
    );
    let until = num(&gate, "cooldownUntil");
    assert!(
        until >= before + 30_000.0 && until <= now() + 30_000.0,
        "cooldownUntil {until} is not 30 s after the response"
    );
    let feedback = get(&gate, "lastFeedback");
    assert_eq!(num(&feedback, "retryAfterMs"), 30_000.0);
    assert_eq!(num(&feedback, "limit"), 2.0);
    assert_eq!(num(&feedback, "remaining"), 0.0);
    assert_eq!(num(&feedback, "resetMs"), 500.0);
    assert_eq!(
        get(&feedback, "limiter").as_string().as_deref(),
        Some("snapshot")
    );
    assert_eq!(get(&gate, "timerArmed"), JsValue::FALSE);

    // Another wrapper on the same key is held by the same cooldown: with no deadline it waits
    // (a token is there), and only its abort takes it out of line, without a fetch.
    let other_fake = FakeFetch::ok();
    let other = observer(2.0, 2.0, &other_fake);
    let controller = abort_controller();
    let init = object(&[
        ("headers", object(&[("X-API-Key", key.as_str().into())])),
        ("signal", get(&controller, "signal")),
    ]);
    let pending = other.fetch_promise("https://example.test/".into(), init);
    sleep(30.0).await;
    let gate = only_gate(&other);
    assert_eq!(num(&gate, "waiting"), 1.0);
    assert_eq!(get(&gate, "timerArmed"), JsValue::TRUE);
    let reason = construct("Error", &["caller gave up".into()]);
    call_method(&controller, "abort", std::slice::from_ref(&reason));
    let error = settle(pending).await.expect_err("aborted while waiting");
    assert!(
        Object::is(&error, &reason),
        "not the abort reason: {error:?}"
    );
    let gate = only_gate(&other);
    assert_eq!(num(&gate, "waiting"), 0.0);
    assert_eq!(num(&gate, "cancelled"), 1.0);
    assert_eq!(num(&gate, "admitted"), 1.0);
    assert_eq!(get(&gate, "timerArmed"), JsValue::FALSE);
    assert!(num(&gate, "cooldownRemainingMs") > 29_000.0);
    assert_eq!(other_fake.count(), 0);
    assert_eq!(fake.count(), 1);

    // A wrapper that waits at most 1 s (and, to share the gate, has no retry budget): the
    // cooldown outlasts that, so the call is refused at once, without a fetch.
    let hurried_fake = FakeFetch::ok();
    let hurried = transport_with(
        2.0,
        2.0,
        &hurried_fake,
        &[
            ("retry", object(&[("budget", false.into())])),
            ("maxWaitMs", 1000.into()),
        ],
    );
    let error = call(&hurried, "https://example.test/", &key_init(&key))
        .await
        .expect_err("admission is predicted after the longest wait");
    assert_abandoned(&error, "queue-wait", 0, "predicted late");
    assert_eq!(hurried_fake.count(), 0);
    let gate = only_gate(&hurried);
    assert_eq!(num(&gate, "expired"), 1.0);
    assert_eq!(num(&get(&gate, "abandoned"), "queue-wait"), 1.0);
    assert_eq!(num(&gate, "waiting"), 0.0);
    assert_eq!(num(&gate, "admitted"), 1.0);
}

#[wasm_bindgen_test]
async fn a_retry_after_http_date_sets_a_cooldown_until_that_date() {
    let at = js_sys::Date::new(&(js_sys::Date::now() + 20_000.0).into());
    let date = at.to_utc_string().as_string().unwrap();
    let original = response(429, "", &[("Retry-After", date.as_str())]);
    let fake = FakeFetch::always(&original);
    let t = observer(2.0, 2.0, &fake);
    call(&t, "https://example.test/", &key_init(&fresh_key("date")))
        .await
        .unwrap();
    let gate = only_gate(&t);
    let remaining = num(&gate, "cooldownRemainingMs");
    // The date has whole seconds: up to one second less than asked.
    assert!(
        (18_500.0..=20_000.0).contains(&remaining),
        "Retry-After: {date} gave cooldownRemainingMs {remaining}"
    );
    let retry_after = num(&get(&gate, "lastFeedback"), "retryAfterMs");
    assert!(
        (18_500.0..=20_000.0).contains(&retry_after),
        "{retry_after}"
    );
}

#[wasm_bindgen_test]
async fn an_unreadable_retry_after_sets_no_cooldown() {
    for value in [None, Some("later"), Some("-1"), Some("1.5"), Some("")] {
        let headers: Vec<(&str, &str)> = value.map(|v| ("Retry-After", v)).into_iter().collect();
        let original = response(429, "", &headers);
        let fake = FakeFetch::always(&original);
        let t = observer(2.0, 2.0, &fake);
        let init = key_init(&fresh_key("later"));
        let case = format!("Retry-After: {value:?}");
        let returned = call(&t, "https://example.test/", &init).await.unwrap();
        assert!(Object::is(&returned, &original), "{case}");
        let gate = only_gate(&t);
        assert_eq!(num(&gate, "throttled"), 1.0, "{case}");
        assert_eq!(num(&gate, "cooldownUntil"), 0.0, "{case}");
        assert_eq!(num(&gate, "cooldownRemainingMs"), 0.0, "{case}");
        let feedback = get(&gate, "lastFeedback");
        assert!(feedback.is_object(), "{case}: feedback is recorded");
        assert!(get(&feedback, "retryAfterMs").is_null(), "{case}");
        assert!(get(&feedback, "limit").is_null(), "{case}");
        // The second token of the burst goes at once: nothing holds the gate, so the inner
        // fetch is called before `fetch` even returns.
        let second = t.fetch_promise("https://example.test/".into(), init.clone());
        assert_eq!(fake.count(), 2, "{case}: the second call waited");
        settle(second).await.unwrap();
    }
}

#[wasm_bindgen_test]
async fn only_a_429_is_read_as_throttle_feedback() {
    // Observe and admit only: nothing but a 429 is read. A 503 before any answer is a failure
    // all the same, and holds the gate for the failure's jittered backoff (the defaults' 2 s
    // at most), never for the Retry-After it was not read for.
    for status in [200, 503] {
        let original = response(status, "", &[("Retry-After", "30")]);
        let fake = FakeFetch::always(&original);
        let t = observer(2.0, 2.0, &fake);
        let returned = call(&t, "https://example.test/", &key_init(&fresh_key("status")))
            .await
            .unwrap();
        assert!(Object::is(&returned, &original), "status {status}");
        let gate = only_gate(&t);
        assert_eq!(num(&gate, "throttled"), 0.0, "status {status}");
        let held = num(&gate, "cooldownRemainingMs");
        match status {
            200 => assert_eq!(held, 0.0),
            _ => assert!(held <= 2_000.0, "held {held} ms"),
        }
        assert!(get(&gate, "lastFeedback").is_null(), "status {status}");
    }

    // With retries on, every response may pace the gate: a 503's Retry-After becomes the
    // shared cooldown as a 429's does, a 200's does not. Neither is a throttle. (503 is left
    // out of the retried statuses so the call ends at once, with the 503 itself.)
    for (status, held) in [(200, false), (503, true)] {
        let original = response(status, "", &[("Retry-After", "30")]);
        let fake = FakeFetch::always(&original);
        let retry = object(&[("statuses", Array::of1(&429.into()).into())]);
        let t = transport_with(2.0, 2.0, &fake, &[("retry", retry)]);
        let returned = call(&t, "https://example.test/", &key_init(&fresh_key("paced")))
            .await
            .unwrap();
        assert!(Object::is(&returned, &original), "status {status}");
        assert_eq!(fake.count(), 1, "status {status}");
        let gate = only_gate(&t);
        assert_eq!(num(&gate, "throttled"), 0.0, "status {status}");
        assert!(get(&gate, "lastFeedback").is_null(), "status {status}");
        let remaining = num(&gate, "cooldownRemainingMs");
        if held {
            assert!(
                (29_000.0..=30_000.0).contains(&remaining),
                "status {status}: cooldownRemainingMs {remaining}"
            );
        } else {
            assert_eq!(remaining, 0.0, "status {status}");
        }
    }
}

#[wasm_bindgen_test]
async fn a_retry_after_too_large_to_hold_rejects_with_a_range_error() {
    for retry in [JsValue::FALSE, JsValue::TRUE] {
        for value in ["999999999999999999999", "9007199254741"] {
            let case = format!("retry: {retry:?}, Retry-After: {value}");
            let original = response(
                429,
                &"x".repeat(1000),
                &[("Retry-After", value), ("X-RateLimit-Limit", "2")],
            );
            let fake = FakeFetch::always(&original);
            let t = transport_with(2.0, 2.0, &fake, &[("retry", retry.clone())]);
            let key = fresh_key("huge");
            let error = call(&t, "https://example.test/", &key_init(&key))
                .await
                .expect_err("an unrepresentable delay is an error, never a shorter wait");
            assert_range_error(&error, "Retry-After", &case);
            assert!(!message(&error).contains(&key));
            assert_eq!(fake.count(), 1, "{case}: not retried");
            // The 429 is still counted, with the headers that could be read; its delay is
            // recorded as none rather than as a shorter one. (Whether it holds a cooldown is
            // deliberately not asserted.)
            let gate = only_gate(&t);
            assert_eq!(num(&gate, "throttled"), 1.0, "{case}");
            assert_eq!(num(&t.stats().unwrap(), "throttled"), 1.0, "{case}");
            let feedback = get(&gate, "lastFeedback");
            assert!(feedback.is_object(), "{case}: feedback is recorded");
            assert!(get(&feedback, "retryAfterMs").is_null(), "{case}");
            assert_eq!(num(&feedback, "limit"), 2.0, "{case}");
            // The body nobody will read was cancelled.
            assert_eq!(get(&original, "bodyUsed"), JsValue::TRUE, "{case}");
        }
    }

    // The largest whole number of seconds that fits is honoured exactly: handed back as it
    // is without retries...
    let original = response(429, "", &[("Retry-After", "9007199254740")]);
    let fake = FakeFetch::always(&original);
    let t = observer(2.0, 2.0, &fake);
    let returned = call(&t, "https://example.test/", &key_init(&fresh_key("max")))
        .await
        .unwrap();
    assert!(Object::is(&returned, &original));
    let feedback = get(&only_gate(&t), "lastFeedback");
    assert_eq!(num(&feedback, "retryAfterMs"), 9_007_199_254_740_000.0);

    // ...and with retries, given up at once because it outlasts the call's time budget: the
    // 429 itself comes back, body unread...
    let original = response(429, "", &[("Retry-After", "9007199254740")]);
    let fake = FakeFetch::always(&original);
    let t = transport(2.0, 2.0, &fake);
    let returned = call(
        &t,
        "https://example.test/",
        &key_init(&fresh_key("max-as-is")),
    )
    .await
    .unwrap();
    assert!(Object::is(&returned, &original));
    assert_eq!(get(&original, "bodyUsed"), JsValue::FALSE);
    assert_eq!(fake.count(), 1);
    // ...or, with `typedErrors`, the exact delay is reported on the error.
    let original = response(429, "", &[("Retry-After", "9007199254740")]);
    let fake = FakeFetch::always(&original);
    let t = transport_with(2.0, 2.0, &fake, &[("typedErrors", true.into())]);
    let error = call(
        &t,
        "https://example.test/",
        &key_init(&fresh_key("max-retry")),
    )
    .await
    .expect_err("no call waits 285,000 years");
    assert_abandoned(
        &error,
        "retry-after-exceeds-deadline",
        1,
        "max with retries",
    );
    assert_eq!(num(&error, "status"), 429.0);
    assert_eq!(num(&error, "retryAfterMs"), 9_007_199_254_740_000.0);
    assert_eq!(fake.count(), 1);
    let feedback = get(&only_gate(&t), "lastFeedback");
    assert_eq!(num(&feedback, "retryAfterMs"), 9_007_199_254_740_000.0);
    assert_eq!(
        num(
            &get(&only_gate(&t), "abandoned"),
            "retry-after-exceeds-deadline"
        ),
        1.0
    );
}

// ---------------------------------------------------------------------------------------------
// Waiting

#[wasm_bindgen_test]
async fn waiting_calls_go_in_order_at_the_configured_rate() {
    let fake = FakeFetch::ok();
    // One at once, then one every 100 ms.
    let t = transport(1.0, 10.0, &fake);
    let init = key_init(&fresh_key("fifo"));
    let started = now();
    let pending: Vec<Promise> = (0..4)
        .map(|i| t.fetch_promise(format!("https://example.test/{i}").into(), init.clone()))
        .collect();
    // The calls join the line synchronously, in call order, behind one timer.
    let gate = only_gate(&t);
    assert_eq!(num(&gate, "admitted"), 1.0);
    assert_eq!(num(&gate, "waiting"), 3.0);
    assert_eq!(num(&t.stats().unwrap(), "waiting"), 3.0);
    assert_eq!(get(&gate, "timerArmed"), JsValue::TRUE);
    assert_eq!(fake.count(), 1);

    for promise in pending {
        settle(promise).await.unwrap();
    }
    let calls = fake.calls.borrow().clone();
    let order: Vec<String> = calls.iter().map(|c| c.0.as_string().unwrap()).collect();
    assert_eq!(
        order,
        (0..4)
            .map(|i| format!("https://example.test/{i}"))
            .collect::<Vec<_>>()
    );
    // Spaced by the refill time (a little slack for timer granularity).
    for pair in calls.windows(2) {
        let gap = pair[1].2 - pair[0].2;
        assert!(gap >= 90.0, "calls only {gap} ms apart");
    }
    assert!(calls[3].2 - started >= 295.0);
    // Only a wide bound above (a loaded machine runs timers late); the pacing itself is tested
    // on a virtual clock in tests/machine.rs.
    assert!(now() - started < 10_000.0, "waited far too long");

    let gate = only_gate(&t);
    assert_eq!(num(&gate, "admitted"), 4.0);
    assert_eq!(num(&gate, "waiting"), 0.0);
    assert_eq!(num(&gate, "peakWaiting"), 3.0);
    assert!(num(&gate, "wakeups") >= 1.0);
    assert_eq!(get(&gate, "timerArmed"), JsValue::FALSE);
}

#[wasm_bindgen_test]
async fn a_429_cooldown_holds_the_next_call() {
    let throttled = response(429, "", &[("Retry-After", "1")]);
    let first = Rc::new(Cell::new(true));
    let fake = FakeFetch::new(move |_, _| {
        let reply = if first.replace(false) {
            throttled.clone()
        } else {
            response(200, "ok", &[])
        };
        Ok(Promise::resolve(&reply).into())
    });
    // Plenty of tokens: only the cooldown can hold the second call. Observe and admit only,
    // so the 429 comes back to the caller instead of being retried.
    let t = observer(5.0, 1000.0, &fake);
    let init = key_init(&fresh_key("cooldown"));
    let status = get(
        &call(&t, "https://example.test/", &init).await.unwrap(),
        "status",
    );
    assert_eq!(status.as_f64(), Some(429.0));
    let throttled_at = now();

    let pending = t.fetch_promise("https://example.test/".into(), init.clone());
    let gate = only_gate(&t);
    assert_eq!(num(&gate, "waiting"), 1.0);
    assert_eq!(get(&gate, "timerArmed"), JsValue::TRUE);
    assert_eq!(fake.count(), 1);

    let status = get(&settle(pending).await.unwrap(), "status");
    assert_eq!(status.as_f64(), Some(200.0));
    let second_at = fake.calls.borrow()[1].2;
    let held = second_at - throttled_at;
    assert!(
        (950.0..10_000.0).contains(&held),
        "the next call went {held} ms after a Retry-After: 1"
    );
    let gate = only_gate(&t);
    assert_eq!(num(&gate, "admitted"), 2.0);
    assert_eq!(num(&gate, "throttled"), 1.0);
    assert_eq!(num(&gate, "cooldownRemainingMs"), 0.0);
    assert_eq!(get(&gate, "timerArmed"), JsValue::FALSE);
}

#[wasm_bindgen_test]
async fn an_abort_while_waiting_rejects_with_the_reason_and_spends_no_token() {
    let fake = FakeFetch::ok();
    // One at once, then one every 400 ms.
    let t = transport(1.0, 2.5, &fake);
    let key = fresh_key("abort");
    call(&t, "https://example.test/first", &key_init(&key))
        .await
        .unwrap();

    let controller = abort_controller();
    let aborted_init = object(&[
        ("headers", object(&[("X-API-Key", key.as_str().into())])),
        ("signal", get(&controller, "signal")),
    ]);
    let aborted = t.fetch_promise("https://example.test/aborted".into(), aborted_init);
    let third = t.fetch_promise("https://example.test/third".into(), key_init(&key));
    assert_eq!(num(&only_gate(&t), "waiting"), 2.0);
    let reason = object(&[("why", "user navigated away".into())]);
    call_method(&controller, "abort", std::slice::from_ref(&reason));
    let error = settle(aborted).await.expect_err("aborted");
    assert!(
        Object::is(&error, &reason),
        "not the abort reason: {error:?}"
    );
    let gate = only_gate(&t);
    assert_eq!(num(&gate, "waiting"), 1.0);
    assert_eq!(num(&gate, "cancelled"), 1.0);
    // Someone still waits, so the timer stays.
    assert_eq!(get(&gate, "timerArmed"), JsValue::TRUE);

    // The third call goes next (that it takes the aborted one's token is tested on a virtual
    // clock in tests/machine.rs).
    settle(third).await.unwrap();
    let urls: Vec<String> = fake
        .calls
        .borrow()
        .iter()
        .map(|c| c.0.as_string().unwrap())
        .collect();
    assert_eq!(
        urls,
        ["https://example.test/first", "https://example.test/third"]
    );
    let gate = only_gate(&t);
    assert_eq!(num(&gate, "admitted"), 2.0);
    assert_eq!(num(&gate, "waiting"), 0.0);
    assert_eq!(get(&gate, "timerArmed"), JsValue::FALSE);
}

#[wasm_bindgen_test]
async fn an_already_aborted_signal_rejects_at_once_without_a_fetch() {
    let fake = FakeFetch::ok();
    let t = transport(5.0, 1000.0, &fake);
    let key = fresh_key("pre-aborted");
    let abort_signal = global("AbortSignal");

    // No reason given: an AbortError, as fetch itself would reject with.
    let signal = call_method(&abort_signal, "abort", &[]);
    let init = object(&[
        ("headers", object(&[("X-API-Key", key.as_str().into())])),
        ("signal", signal),
    ]);
    let error = call(&t, "https://example.test/", &init)
        .await
        .expect_err("aborted before the call");
    assert_eq!(
        get(&error, "name").as_string().as_deref(),
        Some("AbortError")
    );

    // A reason is passed on as it is; a signal on a `Request` input counts too.
    let reason = object(&[("code", "E_CANCELLED".into())]);
    let signal = call_method(&abort_signal, "abort", std::slice::from_ref(&reason));
    let request = construct(
        "Request",
        &[
            "https://example.test/".into(),
            object(&[
                ("headers", object(&[("X-API-Key", key.as_str().into())])),
                ("signal", signal),
            ]),
        ],
    );
    let error = settle(t.fetch_promise(request, JsValue::UNDEFINED))
        .await
        .expect_err("aborted request");
    assert!(
        Object::is(&error, &reason),
        "not the abort reason: {error:?}"
    );

    assert_eq!(fake.count(), 0);
    assert_eq!(num(&t.stats().unwrap(), "admitted"), 0.0);
    // The wrapper still works for a live call.
    call(&t, "https://example.test/", &key_init(&key))
        .await
        .unwrap();
    assert_eq!(fake.count(), 1);
}

// ---------------------------------------------------------------------------------------------
// Retries

#[wasm_bindgen_test]
async fn a_503_then_a_200_resolves_with_the_200_after_disposing_of_the_503() {
    let unavailable = response(503, "{\"detail\":\"Service unavailable\"}", &[]);
    let ok = response(200, "{\"odds\":[]}", &[]);
    let fake = FakeFetch::replies(vec![unavailable.clone(), ok.clone()]);
    let events = Rc::new(RefCell::new(Vec::new()));
    let seen = events.clone();
    let on_event =
        Closure::<dyn FnMut(JsValue)>::new(move |event: JsValue| seen.borrow_mut().push(event));
    let t = transport_with(
        10.0,
        1000.0,
        &fake,
        &[
            ("retry", fast_retry(&[])),
            ("onEvent", on_event.into_js_value()),
        ],
    );
    let init = key_init(&fresh_key("503-200"));
    let returned = call(&t, "https://example.test/odds", &init)
        .await
        .expect("the retry succeeded");
    assert!(Object::is(&returned, &ok), "not the 200 Response itself");
    assert_eq!(get(&returned, "bodyUsed"), JsValue::FALSE);
    assert_eq!(fake.count(), 2, "one attempt and one retry");
    assert_body_disposed(&unavailable, "the retried 503").await;
    // Both attempts carried the caller's request.
    for index in 0..2 {
        let sent = fake.init(index);
        assert!(Object::is(&get(&sent, "headers"), &get(&init, "headers")));
    }

    let gate = only_gate(&t);
    assert_eq!(num(&gate, "requests"), 2.0);
    assert_eq!(num(&gate, "admitted"), 2.0);
    let retries = get(&gate, "retries");
    assert_eq!(num(&retries, "serverError"), 1.0);
    assert_eq!(num(&retries, "throttled"), 0.0);
    assert_eq!(num(&retries, "network"), 0.0);
    let backoff = get(&gate, "backoffMs");
    assert_eq!(
        num(&backoff, "count"),
        1.0,
        "a computed backoff, no Retry-After"
    );
    assert!(num(&backoff, "maxMs") < 2.0, "capMs is 2");
    // The retry's cost is refunded on success.
    assert_eq!(num(&gate, "retryBudget"), 500.0);
    let stats = t.stats().unwrap();
    assert_eq!(num(&stats, "retries"), 1.0);
    assert_eq!(num(&stats, "abandoned"), 0.0);

    let events = events.borrow();
    let retry_events: Vec<&JsValue> = events
        .iter()
        .filter(|e| get(e, "type").as_string().as_deref() == Some("retry"))
        .collect();
    assert_eq!(retry_events.len(), 1, "{events:?}");
    assert_eq!(num(retry_events[0], "attempt"), 2.0);
    assert_eq!(get(retry_events[0], "serverDelay"), JsValue::FALSE);
    assert_eq!(get(retry_events[0], "scope"), get(&gate, "scope"));
}

#[wasm_bindgen_test]
async fn a_bare_post_is_sent_once_and_an_idempotency_key_makes_it_retryable() {
    let key = fresh_key("post");
    let post = |headers: JsValue| {
        object(&[
            ("method", "POST".into()),
            ("body", "{\"stake\":1}".into()),
            ("headers", headers),
        ])
    };

    // No Idempotency-Key: the 503 goes back as it is, after one attempt, body unread.
    let busy = response(503, "busy", &[]);
    let fake = FakeFetch::replies(vec![busy.clone(), response(200, "placed", &[])]);
    let t = transport_with(10.0, 1000.0, &fake, &[("retry", fast_retry(&[]))]);
    let bare = post(object(&[("X-API-Key", key.as_str().into())]));
    let returned = call(&t, "https://example.test/bets", &bare)
        .await
        .expect("a 503 is a response, not an error");
    assert!(Object::is(&returned, &busy), "not the 503 itself");
    assert_eq!(get(&returned, "bodyUsed"), JsValue::FALSE);
    assert_eq!(fake.count(), 1, "a bare POST was sent twice");
    assert_eq!(num(&t.stats().unwrap(), "retries"), 0.0);

    // Nor is a failed bare POST retried: its rejection comes back unchanged.
    let failure = construct("TypeError", &["socket hang up".into()]);
    let thrown = failure.clone();
    let rejecting = FakeFetch::new(move |_, _| Ok(Promise::reject(&thrown).into()));
    let t2 = transport_with(10.0, 1000.0, &rejecting, &[("retry", fast_retry(&[]))]);
    let error = call(&t2, "https://example.test/bets", &bare)
        .await
        .expect_err("the rejection is passed on");
    assert!(Object::is(&error, &failure), "replaced: {error:?}");
    assert_eq!(rejecting.count(), 1);

    // With an Idempotency-Key (here in a `Headers`) the same POST is retried.
    let busy = response(503, "busy", &[]);
    let placed = response(200, "placed", &[]);
    let keyed_fake = FakeFetch::replies(vec![busy.clone(), placed.clone()]);
    let t3 = transport_with(10.0, 1000.0, &keyed_fake, &[("retry", fast_retry(&[]))]);
    let headers = web_sys::Headers::new().unwrap();
    headers.append("X-API-Key", &key).unwrap();
    headers.append("Idempotency-Key", "bet-42").unwrap();
    let returned = call(&t3, "https://example.test/bets", &post(headers.into()))
        .await
        .expect("retried to success");
    assert!(Object::is(&returned, &placed), "not the 200 itself");
    assert_eq!(keyed_fake.count(), 2, "the keyed POST was not retried");
    for index in 0..2 {
        let sent = keyed_fake.init(index);
        assert_eq!(get(&sent, "method").as_string().as_deref(), Some("POST"));
        let sent_headers: web_sys::Headers = get(&sent, "headers").unchecked_into();
        assert_eq!(
            sent_headers.get("idempotency-key").unwrap().as_deref(),
            Some("bet-42")
        );
    }
    assert_body_disposed(&busy, "the retried 503").await;
    // All three wrappers share the key's gate.
    assert_eq!(num(&get(&only_gate(&t3), "retries"), "serverError"), 1.0);
    assert_eq!(num(&only_gate(&t3), "admitted"), 4.0);
}

#[wasm_bindgen_test]
async fn the_inner_fetch_gets_a_copy_of_init_with_a_signal_of_its_own() {
    let key = fresh_key("copy");
    let fake = FakeFetch::ok();
    let t = transport_with(10.0, 1000.0, &fake, &[("retry", fast_retry(&[]))]);
    let controller = abort_controller();
    let caller_signal = get(&controller, "signal");
    let headers = object(&[("X-API-Key", key.as_str().into())]);
    let init = object(&[
        ("method", "GET".into()),
        ("headers", headers.clone()),
        ("cache", "no-store".into()),
        ("signal", caller_signal.clone()),
    ]);
    call(&t, "https://example.test/", &init).await.unwrap();
    let sent = fake.init(0);
    assert!(
        !Object::is(&sent, &init),
        "the caller's own init was passed on"
    );
    let inner_signal = get(&sent, "signal");
    assert!(
        inner_signal.is_instance_of::<web_sys::AbortSignal>(),
        "not an AbortSignal: {inner_signal:?}"
    );
    assert!(
        !Object::is(&inner_signal, &caller_signal),
        "the caller's signal"
    );
    // Everything else is the caller's, and the caller's init is left as it was.
    assert!(Object::is(&get(&sent, "headers"), &headers));
    assert_eq!(get(&sent, "method").as_string().as_deref(), Some("GET"));
    assert_eq!(get(&sent, "cache").as_string().as_deref(), Some("no-store"));
    assert!(Object::is(&get(&init, "signal"), &caller_signal));

    // A caller without a signal (or without an init) gets one for the attempt all the same.
    call(&t, "https://example.test/", &key_init(&key))
        .await
        .unwrap();
    let request = construct("Request", &["https://example.test/".into(), key_init(&key)]);
    settle(t.fetch_promise(request, JsValue::UNDEFINED))
        .await
        .unwrap();
    for index in [1, 2] {
        let signal = get(&fake.init(index), "signal");
        assert!(signal.is_instance_of::<web_sys::AbortSignal>(), "{index}");
    }

    // That signal follows the caller's: an abort mid-attempt aborts it with the caller's
    // reason, and the call rejects with that reason, never retried.
    let hanging = FakeFetch::new(|_, init| Ok(until_aborted(init)));
    // A short attempt timeout, so a signal that failed to follow the caller's fails fast.
    let retry = fast_retry(&[("attemptTimeoutMs", 2000.into())]);
    let t2 = transport_with(10.0, 1000.0, &hanging, &[("retry", retry)]);
    let controller = abort_controller();
    let init = object(&[
        ("headers", headers.clone()),
        ("signal", get(&controller, "signal")),
    ]);
    let pending = t2.fetch_promise("https://example.test/".into(), init);
    assert_eq!(hanging.count(), 1, "admitted at once, so sent at once");
    let inner_signal = get(&hanging.init(0), "signal");
    assert_eq!(get(&inner_signal, "aborted"), JsValue::FALSE);
    let reason = construct("Error", &["caller gave up".into()]);
    call_method(&controller, "abort", std::slice::from_ref(&reason));
    let error = settle(pending).await.expect_err("aborted mid-attempt");
    // The caller's reason, not the attempt timeout's TimeoutError: the abort ended it.
    assert!(
        Object::is(&error, &reason),
        "not the abort reason: {error:?}"
    );
    assert_eq!(get(&inner_signal, "aborted"), JsValue::TRUE);
    assert!(Object::is(&get(&inner_signal, "reason"), &reason));
    assert_eq!(hanging.count(), 1, "an aborted call was retried");

    // And it is ours: the per-attempt timeout aborts it with a TimeoutError, and a timed-out
    // attempt is retried.
    let hanging = FakeFetch::new(|_, init| Ok(until_aborted(init)));
    let retry = fast_retry(&[("attemptTimeoutMs", 20.into()), ("maxAttempts", 2.into())]);
    let t3 = transport_with(10.0, 1000.0, &hanging, &[("retry", retry)]);
    let error = call(
        &t3,
        "https://example.test/",
        &key_init(&fresh_key("timeout")),
    )
    .await
    .expect_err("every attempt timed out");
    // Given up as fetch with a timeout signal would have: with the last TimeoutError.
    assert_eq!(
        get(&error, "name").as_string().as_deref(),
        Some("TimeoutError"),
        "{error:?}"
    );
    assert_eq!(num(&get(&only_gate(&t3), "abandoned"), "attempts"), 1.0);
    assert_eq!(hanging.count(), 2);
    let first = get(&hanging.init(0), "signal");
    assert_eq!(get(&first, "aborted"), JsValue::TRUE);
    assert_eq!(
        get(&get(&first, "reason"), "name").as_string().as_deref(),
        Some("TimeoutError")
    );
    assert_eq!(num(&get(&only_gate(&t3), "retries"), "timeout"), 1.0);
}

#![cfg(target_arch = "wasm32")]
//! `Transport` (the engine behind `createFetch`) under Node: option validation, credential
//! extraction, the caller's `Response` handed back untouched, 429 feedback, rejections passed
//! through, FIFO waiting and aborts.
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

// ---------------------------------------------------------------------------------------------
// Helpers

fn object(entries: &[(&str, JsValue)]) -> JsValue {
    let object = Object::new();
    for (key, value) in entries {
        Reflect::set(&object, &JsValue::from_str(key), value).unwrap();
    }
    object.into()
}

fn get(value: &JsValue, key: &str) -> JsValue {
    Reflect::get(value, &JsValue::from_str(key)).unwrap()
}

#[track_caller]
fn num(value: &JsValue, key: &str) -> f64 {
    let field = get(value, key);
    field
        .as_f64()
        .unwrap_or_else(|| panic!("`{key}` is not a number: {field:?}"))
}

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

    fn count(&self) -> usize {
        self.calls.borrow().len()
    }
}

fn transport(burst: f64, per_second: f64, fake: &FakeFetch) -> Transport {
    let options = object(&[
        ("rate", rate(burst, per_second)),
        ("fetch", fake.function.clone().into()),
    ]);
    Transport::new(options).expect("valid options are accepted")
}

async fn settle(promise: Promise) -> Result<JsValue, JsValue> {
    JsFuture::from(promise).await
}

async fn call(t: &Transport, input: &str, init: &JsValue) -> Result<JsValue, JsValue> {
    settle(t.fetch(input.into(), init.clone())).await
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
    get(&t.stats(), "gates").unchecked_into()
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

// ---------------------------------------------------------------------------------------------
// Options

#[wasm_bindgen_test]
fn options_of_the_wrong_type_or_shape_are_type_errors_naming_the_field() {
    let fetch: JsValue = FakeFetch::ok().function.into();
    let ok_rate = || rate(2.0, 2.0);
    let cases: Vec<(&str, JsValue, &str)> = vec![
        ("no options", JsValue::UNDEFINED, "options"),
        ("null options", JsValue::NULL, "options"),
        ("number options", 42.into(), "options"),
        ("array options", Array::new().into(), "options"),
        ("no rate", object(&[]), "rate"),
        ("numeric rate", object(&[("rate", 2.into())]), "rate"),
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
            "retry true",
            object(&[
                ("rate", ok_rate()),
                ("fetch", fetch.clone()),
                ("retry", true.into()),
            ]),
            "retry",
        ),
        (
            "retry a number",
            object(&[("rate", ok_rate()), ("retry", 3.into())]),
            "retry",
        ),
    ];
    for (case, options, needle) in cases {
        let error = construct_error(options, case);
        assert_type_error(&error, needle, case);
    }

    // And the accepted shapes really are accepted.
    for options in [
        object(&[("rate", ok_rate())]),
        object(&[("rate", ok_rate()), ("retry", false.into())]),
        object(&[("rate", ok_rate()), ("fetch", fetch.clone())]),
        object(&[("rate", ok_rate()), ("fetch", JsValue::UNDEFINED)]),
    ] {
        assert!(Transport::new(options).is_ok());
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

    for text in &messages {
        assert!(!text.is_empty());
        assert!(!text.contains(&key), "message repeats the key: {text:?}");
    }
    let figures = js_sys::JSON::stringify(&a.stats())
        .unwrap()
        .as_string()
        .unwrap();
    assert!(!figures.contains(&key), "stats repeat the key: {figures}");
    let scope = get(&only_gate(&a), "scope").as_string().unwrap();
    assert!(scope.starts_with("key:") && scope.len() > 20, "{scope}");
    let description = get(&a.describe(), "text").as_string().unwrap();
    assert!(!description.contains(&key));
}

#[wasm_bindgen_test]
fn describe_reports_the_configured_rate() {
    let fake = FakeFetch::ok();
    let t = transport(4.0, 0.5, &fake);
    let description = t.describe();
    let text = get(&description, "text").as_string().unwrap();
    assert!(
        text.contains("burst 4 at 0.5 per second"),
        "describe().text: {text}"
    );
    let rate = get(&description, "rate");
    assert_eq!(num(&rate, "burst"), 4.0);
    assert_eq!(num(&rate, "perSecond"), 0.5);
    // A wrapper that has made no call has no gate and no totals yet.
    let stats = t.stats();
    assert_eq!(gates(&t).length(), 0);
    assert_eq!(num(&stats, "admitted"), 0.0);
}

// ---------------------------------------------------------------------------------------------
// Credentials

#[wasm_bindgen_test]
async fn the_credential_is_read_from_every_header_shape() {
    let fake = FakeFetch::ok();
    let t = transport(100.0, 1000.0, &fake);
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
    settle(t.fetch(request, JsValue::UNDEFINED)).await.unwrap();
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
    assert_eq!(num(&t.stats(), "admitted"), 5.0);
    assert_eq!(fake.count(), 5);
    let scope = get(&gate, "scope");

    // A different key is a different gate.
    call(&t, "https://example.test/6", &key_init(&fresh_key("other")))
        .await
        .unwrap();
    let all = gates(&t);
    assert_eq!(all.length(), 2);
    assert_eq!(num(&t.stats(), "admitted"), 6.0);
    let original = all
        .iter()
        .find(|g| get(g, "scope") == scope)
        .expect("the first key keeps its gate");
    assert_eq!(num(&original, "admitted"), 5.0);
}

#[wasm_bindgen_test]
async fn authorization_is_the_credential_when_there_is_no_api_key() {
    let fake = FakeFetch::ok();
    let t = transport(100.0, 1000.0, &fake);
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
    let t = transport(10.0, 1000.0, &fake);
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
    let failure = construct("TypeError", &["fetch failed: ECONNREFUSED".into()]);
    let thrown = failure.clone();
    let fake = FakeFetch::new(move |_, _| Ok(Promise::reject(&thrown).into()));
    let t = transport(10.0, 1000.0, &fake);
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
    let t2 = transport(10.0, 1000.0, &throwing);
    let error = call(&t2, "https://example.test/", &init)
        .await
        .expect_err("the throw is passed on");
    assert!(
        Object::is(&error, &sentinel),
        "the throw was replaced: {error:?}"
    );

    let rejecting = FakeFetch::new(|_, _| Ok(Promise::reject(&"plain string".into()).into()));
    let t3 = transport(10.0, 1000.0, &rejecting);
    let error = call(&t3, "https://example.test/", &init).await.unwrap_err();
    assert_eq!(error.as_string().as_deref(), Some("plain string"));

    // Each attempt reached the server, so each spent a token; none was throttled.
    let gate = only_gate(&t);
    assert_eq!(num(&gate, "admitted"), 3.0);
    assert_eq!(num(&gate, "throttled"), 0.0);
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
    let t = transport(2.0, 2.0, &fake);
    let key = fresh_key("retry-after");
    let before = now();
    let returned = call(&t, "https://example.test/", &key_init(&key))
        .await
        .expect("a 429 is returned, not thrown");
    assert!(Object::is(&returned, &original));
    assert_eq!(get(&returned, "bodyUsed"), JsValue::FALSE);

    let stats = t.stats();
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
    assert_eq!(num(&feedback, "resetSeconds"), 0.5);
    assert_eq!(
        get(&feedback, "bucket").as_string().as_deref(),
        Some("snapshot")
    );
    assert_eq!(get(&gate, "timerArmed"), JsValue::FALSE);

    // Another wrapper on the same key is held by the same cooldown: it waits (a token is
    // there), and its abort takes it out of line without a fetch.
    let other_fake = FakeFetch::ok();
    let other = transport(2.0, 2.0, &other_fake);
    let controller = abort_controller();
    let init = object(&[
        ("headers", object(&[("X-API-Key", key.as_str().into())])),
        ("signal", get(&controller, "signal")),
    ]);
    let pending = other.fetch("https://example.test/".into(), init);
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
}

#[wasm_bindgen_test]
async fn a_retry_after_http_date_sets_a_cooldown_until_that_date() {
    let at = js_sys::Date::new(&(js_sys::Date::now() + 20_000.0).into());
    let date = at.to_utc_string().as_string().unwrap();
    let original = response(429, "", &[("Retry-After", date.as_str())]);
    let fake = FakeFetch::always(&original);
    let t = transport(2.0, 2.0, &fake);
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
        let t = transport(2.0, 2.0, &fake);
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
        // The second token of the burst goes at once: nothing holds the gate.
        let started = now();
        call(&t, "https://example.test/", &init).await.unwrap();
        assert!(now() - started < 200.0, "{case}: the second call waited");
        assert_eq!(fake.count(), 2, "{case}");
    }
}

#[wasm_bindgen_test]
async fn only_a_429_is_read_as_throttle_feedback() {
    for status in [200, 503] {
        let original = response(status, "", &[("Retry-After", "30")]);
        let fake = FakeFetch::always(&original);
        let t = transport(2.0, 2.0, &fake);
        call(&t, "https://example.test/", &key_init(&fresh_key("status")))
            .await
            .unwrap();
        let gate = only_gate(&t);
        assert_eq!(num(&gate, "throttled"), 0.0, "status {status}");
        assert_eq!(num(&gate, "cooldownUntil"), 0.0, "status {status}");
        assert!(get(&gate, "lastFeedback").is_null(), "status {status}");
    }
}

#[wasm_bindgen_test]
async fn a_retry_after_too_large_to_hold_rejects_with_a_range_error() {
    for value in ["999999999999999999999", "9007199254741"] {
        let original = response(429, &"x".repeat(1000), &[("Retry-After", value)]);
        let fake = FakeFetch::always(&original);
        let t = transport(2.0, 2.0, &fake);
        let key = fresh_key("huge");
        let error = call(&t, "https://example.test/", &key_init(&key))
            .await
            .expect_err("an unrepresentable delay is an error, never a shorter wait");
        assert_range_error(&error, "Retry-After", value);
        assert!(!message(&error).contains(&key));
        // Deliberately not asserted: whether the gate counts this 429 or holds a cooldown for
        // it. Today it does neither, which is an open design question, not a settled contract.
        // The body nobody will read was cancelled.
        assert_eq!(get(&original, "bodyUsed"), JsValue::TRUE, "{value}");
    }
    // The largest whole number of seconds that fits is honoured exactly.
    let original = response(429, "", &[("Retry-After", "9007199254740")]);
    let fake = FakeFetch::always(&original);
    let t = transport(2.0, 2.0, &fake);
    call(&t, "https://example.test/", &key_init(&fresh_key("max")))
        .await
        .unwrap();
    let feedback = get(&only_gate(&t), "lastFeedback");
    assert_eq!(num(&feedback, "retryAfterMs"), 9_007_199_254_740_000.0);
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
        .map(|i| t.fetch(format!("https://example.test/{i}").into(), init.clone()))
        .collect();
    // The calls join the line synchronously, in call order.
    let gate = only_gate(&t);
    assert_eq!(num(&gate, "admitted"), 1.0);
    assert_eq!(num(&gate, "waiting"), 3.0);
    sleep(30.0).await;
    let gate = only_gate(&t);
    assert_eq!(num(&gate, "admitted"), 1.0);
    assert_eq!(num(&gate, "waiting"), 3.0);
    assert_eq!(num(&t.stats(), "waiting"), 3.0);
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
    assert!(now() - started < 1500.0, "waited far too long");

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
    // Plenty of tokens: only the cooldown can hold the second call.
    let t = transport(5.0, 1000.0, &fake);
    let init = key_init(&fresh_key("cooldown"));
    let status = get(
        &call(&t, "https://example.test/", &init).await.unwrap(),
        "status",
    );
    assert_eq!(status.as_f64(), Some(429.0));
    let throttled_at = now();

    let pending = t.fetch("https://example.test/".into(), init.clone());
    sleep(30.0).await;
    let gate = only_gate(&t);
    assert_eq!(num(&gate, "waiting"), 1.0);
    assert_eq!(get(&gate, "timerArmed"), JsValue::TRUE);
    assert_eq!(fake.count(), 1);

    let status = get(&settle(pending).await.unwrap(), "status");
    assert_eq!(status.as_f64(), Some(200.0));
    let second_at = fake.calls.borrow()[1].2;
    let held = second_at - throttled_at;
    assert!(
        (950.0..2000.0).contains(&held),
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
    let started = now();
    call(&t, "https://example.test/first", &key_init(&key))
        .await
        .unwrap();

    let controller = abort_controller();
    let aborted_init = object(&[
        ("headers", object(&[("X-API-Key", key.as_str().into())])),
        ("signal", get(&controller, "signal")),
    ]);
    let aborted = t.fetch("https://example.test/aborted".into(), aborted_init);
    let third = t.fetch("https://example.test/third".into(), key_init(&key));
    sleep(20.0).await;
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

    // The third call takes the token the aborted one would have had.
    settle(third).await.unwrap();
    let third_at = fake.calls.borrow()[1].2;
    assert!(
        third_at - started < 750.0,
        "the third call went {} ms in: the aborted call spent a token",
        third_at - started
    );
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
    let error = settle(t.fetch(request, JsValue::UNDEFINED))
        .await
        .expect_err("aborted request");
    assert!(
        Object::is(&error, &reason),
        "not the abort reason: {error:?}"
    );

    assert_eq!(fake.count(), 0);
    assert_eq!(num(&t.stats(), "admitted"), 0.0);
    // The wrapper still works for a live call.
    call(&t, "https://example.test/", &key_init(&key))
        .await
        .unwrap();
    assert_eq!(fake.count(), 1);
}

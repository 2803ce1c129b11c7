//! The caller's `Response` and the inner fetch's rejections pass through untouched, and the
//! global `fetch` is the inner one by default.

use super::*;

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
    // the third attempt abandoned, never a success: with the third rejection itself, as fetch
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
    .expect_err("abandoned");
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
    .expect_err("abandoned");
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

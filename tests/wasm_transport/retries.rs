//! The retry path: a 503 then a 200, a bare POST sent once unless it has an idempotency key,
//! and the inner fetch's own copy of `init` with a signal of its own.

use super::*;

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
    // Abandoned as fetch with a timeout signal would have: with the last TimeoutError.
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

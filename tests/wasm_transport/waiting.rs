//! Waiting: calls go in order at the configured rate, a cooldown holds the next call, and an
//! abort while waiting (or before) rejects without spending a token.

use super::*;

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
    // The calls join the queue synchronously, in call order, behind one timer.
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

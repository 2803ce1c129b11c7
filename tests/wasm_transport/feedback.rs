//! 429 feedback: `Retry-After` in seconds or as an HTTP date sets the cooldown, an unreadable
//! one sets none, only a 429 is throttle feedback, and a delay too large to hold rejects.

use super::*;

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
    // (a token is there), and only its abort takes it out of the queue, without a fetch.
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
    assert_eq!(num(&gate, "abandonedInQueue"), 1.0);
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

    // ...and with retries, abandoned at once because it outlasts the call's time budget: the
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

//! Credentials: read from every header shape, `Authorization` when there is no key, the
//! anonymous gate, and wrappers sharing a key sharing one gate.

use super::*;

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

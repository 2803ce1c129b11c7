//! Options: wrong types and shapes are `TypeError`s and out-of-range numbers `RangeError`s,
//! each naming its field; no message or figure repeats a raw key; `describe()`.

use super::*;

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
    // And a call abandoned.
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
        .expect_err("abandoned");
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

#![cfg(target_arch = "wasm32")]
//! The article's model through the bindings under Node: `simulate(options)` and the virtual-clock
//! `Gate` (`ModelGate` in Rust), with their option validation.

use js_sys::Array;
use odds_gate::js::{simulate, ModelGate};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_test::*;

mod wasm_support;
use wasm_support::{get, num, object};

#[track_caller]
fn run(options: JsValue) -> JsValue {
    simulate(options).unwrap_or_else(|e| panic!("simulate refused valid options: {e:?}"))
}

/// `(attempts, throttled, completed, abandoned)`.
#[track_caller]
fn counts(report: &JsValue) -> (f64, f64, f64, f64) {
    (
        num(report, "attempts"),
        num(report, "throttled"),
        num(report, "completed"),
        num(report, "abandoned"),
    )
}

fn message(error: &JsValue) -> String {
    get(error, "message").as_string().unwrap_or_default()
}

#[track_caller]
fn assert_error(error: &JsValue, range: bool, needle: &str, case: &str) {
    let right_class = if range {
        error.is_instance_of::<js_sys::RangeError>()
    } else {
        error.is_instance_of::<js_sys::TypeError>()
    };
    let class = if range { "RangeError" } else { "TypeError" };
    assert!(right_class, "{case}: expected a {class}, got {error:?}");
    let text = message(error);
    assert!(
        text.contains(needle),
        "{case}: message {text:?} should name {needle:?}"
    );
}

fn article_rate() -> JsValue {
    object(&[("burst", 2.into()), ("perSecond", 2.into())])
}

fn gate() -> ModelGate {
    ModelGate::new(article_rate()).expect("the article's rate is valid")
}

// ---------------------------------------------------------------------------------------------
// simulate

#[wasm_bindgen_test]
fn independent_retries_repeat_the_collision() {
    for options in [JsValue::UNDEFINED, object(&[])] {
        let report = run(options);
        assert_eq!(counts(&report), (20.0, 12.0, 8.0, 0.0));
        assert_eq!(num(&report, "lastAttemptMs"), 3000.0);
        let timeline: Array = get(&report, "timeline").unchecked_into();
        assert_eq!(timeline.length(), 20);
        let throttled = timeline
            .iter()
            .filter(|a| num(a, "status") == 429.0)
            .count();
        assert_eq!(throttled, 12);
    }
}

#[wasm_bindgen_test]
fn one_shared_gate_avoids_it() {
    let report = run(object(&[("shared", true.into())]));
    assert_eq!(counts(&report), (8.0, 0.0, 8.0, 0.0));
    assert_eq!(num(&report, "lastAttemptMs"), 3000.0);
    let timeline: Array = get(&report, "timeline").unchecked_into();
    let at: Vec<f64> = timeline.iter().map(|a| num(&a, "at")).collect();
    assert_eq!(
        at,
        [0.0, 0.0, 500.0, 1000.0, 1500.0, 2000.0, 2500.0, 3000.0]
    );
    let mut workers: Vec<f64> = timeline.iter().map(|a| num(&a, "worker")).collect();
    workers.sort_by(f64::total_cmp);
    assert_eq!(workers, (0..8).map(f64::from).collect::<Vec<_>>());
    // `separateGates: false` is the same as leaving it out.
    let same = run(object(&[
        ("shared", true.into()),
        ("separateGates", false.into()),
    ]));
    assert_eq!(counts(&same), (8.0, 0.0, 8.0, 0.0));
}

#[wasm_bindgen_test]
fn separate_gates_still_exceed_the_one_allowance() {
    for separate in [JsValue::TRUE, 2.into()] {
        let report = run(object(&[("separateGates", separate.clone())]));
        assert_eq!(
            counts(&report),
            (14.0, 6.0, 8.0, 0.0),
            "separateGates: {separate:?}"
        );
    }
    // One "separate" gate is one shared gate.
    let one = run(object(&[("separateGates", 1.into())]));
    assert_eq!(counts(&one), (8.0, 0.0, 8.0, 0.0));
}

#[wasm_bindgen_test]
fn attempt_caps_and_a_shared_retry_budget_bound_a_persistent_failure() {
    let per_worker = run(object(&[
        ("alwaysReject", true.into()),
        ("maxAttempts", 3.into()),
    ]));
    assert_eq!(counts(&per_worker), (24.0, 24.0, 0.0, 8.0));
    let budget = run(object(&[
        ("alwaysReject", true.into()),
        ("maxAttempts", 3.into()),
        ("retryBudget", 4.into()),
    ]));
    assert_eq!(counts(&budget), (12.0, 12.0, 0.0, 8.0));
    // `retryBudget: null` means no budget, like leaving it out.
    let unbounded = run(object(&[
        ("alwaysReject", true.into()),
        ("maxAttempts", 3.into()),
        ("retryBudget", JsValue::NULL),
    ]));
    assert_eq!(counts(&unbounded), (24.0, 24.0, 0.0, 8.0));
}

#[wasm_bindgen_test]
fn the_scenario_numbers_are_options() {
    // One worker never collides.
    let alone = run(object(&[("workers", 1.into())]));
    assert_eq!(counts(&alone), (1.0, 0.0, 1.0, 0.0));
    // A burst as large as the batch admits everyone at once.
    let wide = run(object(&[("burst", 8.into())]));
    assert_eq!(counts(&wide), (8.0, 0.0, 8.0, 0.0));
    assert_eq!(num(&wide, "lastAttemptMs"), 0.0);
    // A shared gate at 4 per second finishes the eight in 1.5 s.
    let faster = run(object(&[("shared", true.into()), ("perSecond", 4.into())]));
    assert_eq!(counts(&faster), (8.0, 0.0, 8.0, 0.0));
    assert_eq!(num(&faster, "lastAttemptMs"), 1500.0);
    // The server's delay moves the retries.
    let slow = run(object(&[("retryAfterMs", 5000.into())]));
    assert_eq!(num(&slow, "lastAttemptMs"), 15_000.0);
}

#[wasm_bindgen_test]
fn bad_simulate_options_throw_the_right_error_naming_the_option() {
    // (case, options, RangeError?, the name the message must contain)
    let cases: Vec<(&str, JsValue, bool, &str)> = vec![
        ("null options", JsValue::NULL, false, "options"),
        ("string options", "shared".into(), false, "options"),
        ("array options", Array::new().into(), false, "options"),
        (
            "unknown option",
            object(&[("worker", 8.into())]),
            false,
            "options.worker",
        ),
        (
            "workers a string",
            object(&[("workers", "8".into())]),
            false,
            "workers",
        ),
        (
            "shared a number",
            object(&[("shared", 1.into())]),
            false,
            "shared",
        ),
        (
            "alwaysReject a string",
            object(&[("alwaysReject", "yes".into())]),
            false,
            "alwaysReject",
        ),
        (
            "shared and separateGates",
            object(&[("shared", true.into()), ("separateGates", 2.into())]),
            false,
            "separateGates",
        ),
        (
            "separateGates a string",
            object(&[("separateGates", "2".into())]),
            false,
            "separateGates",
        ),
        (
            "burst a string",
            object(&[("burst", "2".into())]),
            false,
            "burst",
        ),
        (
            "workers 0",
            object(&[("workers", 0.into())]),
            true,
            "workers",
        ),
        (
            "workers fractional",
            object(&[("workers", 1.5.into())]),
            true,
            "workers",
        ),
        (
            "workers too many",
            object(&[("workers", 100_001.into())]),
            true,
            "workers",
        ),
        (
            "maxAttempts 0",
            object(&[("maxAttempts", 0.into())]),
            true,
            "maxAttempts",
        ),
        (
            "retryBudget negative",
            object(&[("retryBudget", (-1).into())]),
            true,
            "retryBudget",
        ),
        (
            "separateGates 0",
            object(&[("separateGates", 0.into())]),
            true,
            "separateGates",
        ),
        (
            "retryAfterMs negative",
            object(&[("retryAfterMs", (-1).into())]),
            true,
            "retryAfterMs",
        ),
        (
            "retryAfterMs NaN",
            object(&[("retryAfterMs", f64::NAN.into())]),
            true,
            "retryAfterMs",
        ),
        ("burst 0", object(&[("burst", 0.into())]), true, "burst"),
        (
            "perSecond infinite",
            object(&[("perSecond", f64::INFINITY.into())]),
            true,
            "perSecond",
        ),
    ];
    for (case, options, range, needle) in cases {
        let error = match simulate(options) {
            Ok(report) => panic!("{case}: accepted, gave {report:?}"),
            Err(error) => error,
        };
        assert_error(&error, range, needle, case);
    }
}

// ---------------------------------------------------------------------------------------------
// Gate

#[wasm_bindgen_test]
fn the_gate_admits_the_burst_then_one_per_refill() {
    let mut g = gate();
    assert_eq!(g.admit_at(0.0).unwrap(), 0.0);
    assert_eq!(g.admit_at(0.0).unwrap(), 0.0);
    // Empty: come back when a token is there, spending nothing.
    assert_eq!(g.admit_at(0.0).unwrap(), 500.0);
    assert_eq!(g.admit_at(100.0).unwrap(), 500.0);
    assert_eq!(g.admit_at(500.0).unwrap(), 500.0);
    assert_eq!(g.admit_at(500.0).unwrap(), 1000.0);
    assert_eq!(g.blocked_until(), 0.0);
}

#[wasm_bindgen_test]
fn a_cooldown_blocks_everyone_then_admission_still_limits_the_burst() {
    let mut g = gate();
    g.defer(0.0, 2000.0).unwrap();
    assert_eq!(g.blocked_until(), 2000.0);
    assert!((0..8).all(|_| g.admit_at(1999.0).unwrap() == 2000.0));
    let resumed: Vec<f64> = (0..8).map(|_| g.admit_at(2000.0).unwrap()).collect();
    // Two take the burst; the six others are told to come back at the next token.
    assert_eq!(
        resumed,
        [2000.0, 2000.0, 2500.0, 2500.0, 2500.0, 2500.0, 2500.0, 2500.0]
    );
}

#[wasm_bindgen_test]
fn cooldowns_extend_but_never_shorten() {
    let mut g = gate();
    g.defer(0.0, 5000.0).unwrap();
    g.defer(100.0, 1000.0).unwrap();
    assert_eq!(g.blocked_until(), 5000.0);
    g.defer(1000.0, 8000.0).unwrap();
    assert_eq!(g.blocked_until(), 9000.0);
    g.defer(9000.0, 0.0).unwrap();
    assert_eq!(g.blocked_until(), 9000.0);
}

#[wasm_bindgen_test]
fn bad_gate_arguments_are_refused_and_change_nothing() {
    let mut g = gate();
    g.defer(0.0, 1000.0).unwrap();
    for (now, delay, field) in [
        (0.0, -1.0, "delayMs"),
        (0.0, f64::INFINITY, "delayMs"),
        (0.0, f64::NAN, "delayMs"),
        (f64::NAN, 10.0, "now"),
        (f64::NEG_INFINITY, 10.0, "now"),
    ] {
        let case = format!("defer({now}, {delay})");
        let error = g.defer(now, delay).expect_err(&case);
        assert_error(&error, true, field, &case);
    }
    for now in [f64::NAN, f64::INFINITY] {
        let case = format!("admitAt({now})");
        let error = g.admit_at(now).expect_err(&case);
        assert_error(&error, true, "now", &case);
    }
    assert_eq!(g.blocked_until(), 1000.0);
    // No refused call spent a token.
    assert_eq!(g.admit_at(1000.0).unwrap(), 1000.0);
    assert_eq!(g.admit_at(1000.0).unwrap(), 1000.0);
}

#[wasm_bindgen_test]
fn bad_gate_rates_are_refused_with_the_right_error() {
    let cases: Vec<(&str, JsValue, bool, &str)> = vec![
        ("no rate", JsValue::UNDEFINED, false, "rate"),
        ("numeric rate", 2.into(), false, "rate"),
        (
            "missing perSecond",
            object(&[("burst", 2.into())]),
            false,
            "rate.perSecond",
        ),
        (
            "unknown key",
            object(&[
                ("burst", 2.into()),
                ("perSecond", 2.into()),
                ("capacity", 2.into()),
            ]),
            false,
            "rate.capacity",
        ),
        (
            "burst below one",
            object(&[("burst", 0.5.into()), ("perSecond", 2.into())]),
            true,
            "rate.burst",
        ),
        (
            "perSecond zero",
            object(&[("burst", 2.into()), ("perSecond", 0.into())]),
            true,
            "rate.perSecond",
        ),
    ];
    for (case, rate, range, needle) in cases {
        let error = match ModelGate::new(rate) {
            Ok(_) => panic!("{case}: accepted"),
            Err(error) => error,
        };
        assert_error(&error, range, needle, case);
    }
}

//! The JavaScript shapes more than one binding module hands out (`stats()`, `describe()`,
//! `onEvent`, `simulate()`): a leaf, so those modules import it and never each other.

use serde::Serialize;
use wasm_bindgen::JsValue;

use super::clock;
use crate::core::rules::learn::Estimate;

/// Plain objects, `null` for an absent value: what `JSON.stringify` would also print.
#[inline(never)]
pub fn to_js(value: &impl Serialize) -> JsValue {
    value
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .unwrap_or(JsValue::NULL)
}

/// `stats().gates[i].learned`: what a learning gate has learned.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Learned {
    burst: Option<f64>,
    per_second: f64,
    at_least: f64,
    confidence: f64,
    /// A `Date`, or `null`.
    #[serde(with = "serde_wasm_bindgen::preserve")]
    last_throttle: JsValue,
}

impl From<Estimate> for Learned {
    fn from(e: Estimate) -> Self {
        Learned {
            burst: e.burst,
            per_second: e.per_second,
            at_least: e.at_least,
            confidence: e.confidence,
            last_throttle: e.last_throttle.map_or(JsValue::NULL, date),
        }
    }
}

/// A time on the gate's clock as a `Date`.
pub fn date(ms: f64) -> JsValue {
    js_sys::Date::new(&clock::to_wall(ms).into()).into()
}

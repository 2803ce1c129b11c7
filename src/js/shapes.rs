//! The JavaScript shapes more than one binding module hands out (`stats()`, `describe()`,
//! `onEvent`, `simulate()`): a leaf, so those modules import it and never each other.

use serde::{Serialize, Serializer};
use wasm_bindgen::JsValue;

use super::clock;

/// Plain objects, `null` for an absent value: what `JSON.stringify` would also print.
#[inline(never)]
pub fn to_js(value: &impl Serialize) -> JsValue {
    value
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .unwrap_or(JsValue::NULL)
}

/// A time on the gate's clock as a `Date`, or `null`.
pub struct Date(pub Option<f64>);

impl Serialize for Date {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let date = self.0.map_or(JsValue::NULL, |ms| {
            js_sys::Date::new(&clock::to_wall(ms).into()).into()
        });
        serde_wasm_bindgen::preserve::serialize(&date, s)
    }
}

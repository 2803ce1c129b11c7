//! The option readers both modules use (`createFetch`'s and the article's `Gate`'s rate,
//! `createFetch`'s and `simulate()`'s `quota.costs`):
//! here rather than in `options.rs`, which the simulator's module does not compile (it reaches
//! the whole fetch path).

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::de::{self, Kind};
use super::errors::config_error;
use crate::core::rules::allowance::{Rate, RateGiven};

/// Reads and checks `rate: { burst, perSecond, learn? }`, and whether it learns.
pub fn rate(value: &JsValue) -> Result<(Rate, bool), JsValue> {
    let fields = [
        ("burst", Kind::Number),
        ("perSecond", Kind::Number),
        ("learn", Kind::Boolean),
    ];
    let [burst, per_second, learn] = de::object(value, "rate", "rate.", &fields)?;
    let given = RateGiven {
        burst: burst.number(),
        per_second: per_second.number(),
        learn: learn.flag(),
    };
    given.rate().map_err(config_error)
}

/// Reads `quota.costs`: an object of route patterns to credits, as given (the core checks
/// them); empty when left out.
pub fn costs(value: Option<JsValue>) -> Result<Vec<(String, f64)>, JsValue> {
    let Some(given) = value else {
        return Ok(Vec::new());
    };
    let expected = "an object of route patterns to credits";
    if !de::is_object(&given) {
        return Err(de::wrong("quota.costs", expected, &given));
    }
    let mut costs = Vec::new();
    for entry in js_sys::Object::entries(given.unchecked_ref()).iter() {
        let entry: js_sys::Array = entry.unchecked_into();
        let credits = entry.get(1);
        let Some(n) = credits.as_f64() else {
            return Err(de::wrong("quota.costs", expected, &credits));
        };
        costs.push((entry.get(0).as_string().unwrap_or_default(), n));
    }
    Ok(costs)
}

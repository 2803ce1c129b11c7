//! The option readers both modules use (`createFetch`'s and the article's `Gate`'s rate,
//! `createFetch`'s and `simulate()`'s `quota.costs`):
//! here rather than in `options.rs`, which the simulator's module does not compile (it reaches
//! the whole fetch path).

use serde::{Deserialize, Deserializer};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::de;
use super::errors::config_error;
use crate::core::rules::allowance::{Rate, RateGiven};

/// Reads and checks `rate: { burst, perSecond, learn? }`, and whether it learns.
pub fn rate(value: &JsValue) -> Result<(Rate, bool), JsValue> {
    let given: RateGiven = de::object(value, "rate", "rate.")?;
    given.rate().map_err(config_error)
}

/// `quota.costs` as it was given, for [`costs`] to read.
#[derive(Default)]
pub struct Costs(Option<JsValue>);

impl<'de> Deserialize<'de> for Costs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        de::value(d).map(Costs)
    }
}

/// Reads `quota.costs`: an object of route patterns to credits, as given (the core checks
/// them); empty when left out.
pub fn costs(value: Costs) -> Result<Vec<(String, f64)>, JsValue> {
    let Some(given) = value.0 else {
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

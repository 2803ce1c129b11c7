//! The option reader both modules use (`createFetch`'s and the article's `Gate`'s rate):
//! here rather than in `options.rs`, which the simulator's module does not compile (it reaches
//! the whole fetch path).

use wasm_bindgen::prelude::*;

use super::de;
use super::errors::config_error;
use crate::core::rules::allowance::{Rate, RateGiven};

/// Reads and checks `rate: { burst, perSecond, learn? }`, and whether it learns.
pub fn rate(value: &JsValue) -> Result<(Rate, bool), JsValue> {
    let given: RateGiven = de::object(value, "rate", "rate.")?;
    given.rate().map_err(config_error)
}

//! The option readers both modules use (`createFetch`'s and the article's `Gate`'s rate,
//! `simulate()`'s whole numbers): here rather than in `options.rs`, which the simulator's
//! module does not compile (it reaches the whole fetch path).

use serde::Deserialize;
use wasm_bindgen::prelude::*;

use super::de;
use super::errors::{config_error, range_error, type_error};
use super::text::number;
use crate::core::rules::allowance::{Allowance, Rate};
use crate::core::rules::ranges::Whole;

/// `rate: { burst, perSecond }`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RateOptions {
    burst: Option<f64>,
    per_second: Option<f64>,
    learn: Option<bool>,
}

impl RateOptions {
    /// Reads `rate`: left out or `'auto'` (learned from the responses), `{ burst, perSecond }`
    /// (enforced as given), or that with `learn: true` (learned, never above it).
    pub fn allowance(value: Option<JsValue>) -> Result<Allowance, JsValue> {
        let Some(value) = value.filter(|v| !v.is_undefined()) else {
            return Ok(Allowance::Learned(None));
        };
        match value.as_string() {
            Some(text) if text == "auto" => return Ok(Allowance::Learned(None)),
            Some(_) => return Err(de::wrong("rate", "'auto' or { burst, perSecond }", &value)),
            None => {}
        }
        let (rate, learn) = RateOptions::read_with(&value, "rate")?;
        Ok(match learn {
            true => Allowance::Learned(Some(rate)),
            false => Allowance::Fixed(rate),
        })
    }

    /// Reads and checks `{ burst, perSecond }` named `what`.
    pub fn read(value: &JsValue, what: &str) -> Result<Rate, JsValue> {
        let (rate, learn) = RateOptions::read_with(value, what)?;
        if learn {
            return Err(type_error(&format!(
                "`{what}.learn` is for createFetch's `rate` only"
            )));
        }
        Ok(rate)
    }

    /// Reads `{ burst, perSecond, learn? }` named `what`.
    fn read_with(value: &JsValue, what: &str) -> Result<(Rate, bool), JsValue> {
        let prefix = format!("{what}.");
        let given: RateOptions = de::object(value, what, &prefix)?;
        let burst = de::required(given.burst, &format!("{prefix}burst"))?;
        let per_second = de::required(given.per_second, &format!("{prefix}perSecond"))?;
        let rate = Rate::new(burst, per_second).map_err(config_error)?;
        Ok((rate, given.learn.unwrap_or(false)))
    }
}

/// A whole number in `range`, when given.
pub fn integer(field: &str, n: Option<f64>, range: Whole) -> Result<Option<u32>, JsValue> {
    let Some(n) = n else {
        return Ok(None);
    };
    let refused = || {
        range_error(&format!(
            "Expected `{field}` to be an integer from {} to {}, got {}",
            number(range.min),
            number(range.max),
            number(n)
        ))
    };
    range.holds(n).map(Some).ok_or_else(refused)
}

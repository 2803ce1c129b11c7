//! Reading option objects with errors that name the field: a `TypeError` for a wrong type or an
//! unknown key (a typo would otherwise be a silent default), a `RangeError` from the core for a
//! value out of range.

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::errors::{range_error, type_error};
use super::props::get;
use super::text::number as text;

/// Checks that `value` is a plain object (or absent, when `optional`) whose keys are all known.
pub fn object(value: &JsValue, what: &str, known: &[&str], optional: bool) -> Result<(), JsValue> {
    if optional && value.is_undefined() {
        return Ok(());
    }
    if !value.is_object() || js_sys::Array::is_array(value) {
        return Err(type_error(&format!(
            "Expected `{what}` to be an object, got {}",
            describe(value)
        )));
    }
    for key in js_sys::Object::keys(value.unchecked_ref::<js_sys::Object>()).iter() {
        let key = key.as_string().unwrap_or_default();
        if !known.contains(&key.as_str()) {
            return Err(type_error(&format!(
                "Unknown option `{what}.{key}`; known options: {}",
                // As Strings: figures.rs joins Strings, and one copy of `join` is enough.
                known
                    .iter()
                    .map(|k| k.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
    }
    Ok(())
}

/// A number field; `None` when absent.
pub fn number(object: &JsValue, key: &str, field: &str) -> Result<Option<f64>, JsValue> {
    let value = get(object, key);
    if value.is_undefined() {
        return Ok(None);
    }
    value.as_f64().map(Some).ok_or_else(|| {
        type_error(&format!(
            "Expected `{field}` to be a number, got {}",
            describe(&value)
        ))
    })
}

/// A required number field.
pub fn required_number(object: &JsValue, key: &str, field: &str) -> Result<f64, JsValue> {
    number(object, key, field)?
        .ok_or_else(|| type_error(&format!("`{field}` is required (a number)")))
}

/// A whole-number field within `min..=max`; `None` when absent.
pub fn integer(
    object: &JsValue,
    key: &str,
    field: &str,
    min: f64,
    max: f64,
) -> Result<Option<u32>, JsValue> {
    match number(object, key, field)? {
        None => Ok(None),
        Some(n) if n.fract() == 0.0 && n >= min && n <= max => Ok(Some(n as u32)),
        Some(n) => Err(range_error(&format!(
            "Expected `{field}` to be an integer from {} to {}, got {}",
            text(min),
            text(max),
            text(n)
        ))),
    }
}

/// A boolean field; `None` when absent.
pub fn boolean(object: &JsValue, key: &str, field: &str) -> Result<Option<bool>, JsValue> {
    let value = get(object, key);
    if value.is_undefined() {
        return Ok(None);
    }
    value.as_bool().map(Some).ok_or_else(|| {
        type_error(&format!(
            "Expected `{field}` to be a boolean, got {}",
            describe(&value)
        ))
    })
}

/// A short description of a value's type for error messages; never the value itself, which
/// might be a secret.
pub fn describe(value: &JsValue) -> String {
    if value.is_null() {
        "null".into()
    } else if js_sys::Array::is_array(value) {
        "an array".into()
    } else {
        value.js_typeof().as_string().unwrap_or_default()
    }
}

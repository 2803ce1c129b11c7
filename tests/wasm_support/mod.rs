//! Helpers shared by the wasm-bindgen-test suites: build and read plain JavaScript objects.
#![allow(dead_code)] // each suite uses its own subset

use js_sys::{Object, Reflect};
use wasm_bindgen::prelude::*;

/// `{ key: value, ... }`.
pub fn object(entries: &[(&str, JsValue)]) -> JsValue {
    let object = Object::new();
    for (key, value) in entries {
        Reflect::set(&object, &JsValue::from_str(key), value).unwrap();
    }
    object.into()
}

/// `value[key]`.
pub fn get(value: &JsValue, key: &str) -> JsValue {
    Reflect::get(value, &JsValue::from_str(key)).unwrap()
}

/// `value[key]` as a number; panics naming the key otherwise.
#[track_caller]
pub fn num(value: &JsValue, key: &str) -> f64 {
    let field = get(value, key);
    field
        .as_f64()
        .unwrap_or_else(|| panic!("`{key}` is not a number: {field:?}"))
}

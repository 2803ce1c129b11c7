//! Reading and writing properties of JavaScript objects, never throwing: a missing property is
//! `undefined`, a failed write is ignored (the objects are our own, or the caller's options).

use wasm_bindgen::JsValue;

/// Reads `key` from an object; `undefined` when it is absent.
pub fn get(object: &JsValue, key: &str) -> JsValue {
    js_sys::Reflect::get(object, &name(key)).unwrap_or(JsValue::UNDEFINED)
}

/// Sets `key` on an object (a figure, an event, an error's fields).
pub fn set(object: &JsValue, key: &str, value: JsValue) {
    let _ = js_sys::Reflect::set(object, &name(key), &value);
}

/// A property name as a JavaScript string, made once per name: the same few dozen names are
/// read and written millions of times (headers and fields read on every call).
fn name(key: &str) -> JsValue {
    JsValue::from_str(wasm_bindgen::intern(key))
}

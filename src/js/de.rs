//! Options from JavaScript, read by serde (derive) through serde-wasm-bindgen, one object at a
//! time. serde checks each field's type and refuses unknown keys; this module gives its errors
//! the shape a caller expects: a `TypeError` that names the field (`retry.baseMs`) and the type
//! it got, never the value (it might be a secret). Ranges are checked by the core afterwards
//! (`RangeError`).
//!
//! Two JavaScript habits are kept: a key whose value is `undefined` counts as left out, and
//! `null` is refused rather than read as "the default" (the field readers below see a value
//! only when one was given, and `null` is not a number, a string or an object).

use std::cell::Cell;

use serde::de::value::MapDeserializer;
use serde::de::{DeserializeOwned, Deserializer, Error as _, IntoDeserializer, Visitor};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::errors::type_error;
use crate::core::rules::toggle::Toggle;

type Error = serde_wasm_bindgen::Error;

/// Reads the plain object `value` as `T`. `what` names it in errors (`retry`); `prefix` is put
/// before its fields' names (`retry.`, or nothing for the top-level options).
#[inline(never)]
pub fn object<T: DeserializeOwned>(
    value: &JsValue,
    what: &str,
    prefix: &str,
) -> Result<T, JsValue> {
    if !is_object(value) {
        return Err(wrong(what, "an object", value));
    }
    let entries = entries(value);
    // serde reads a key, then its value: when the value fails, the last key read is at fault.
    let at = Cell::new(0);
    let pairs = entries.iter().enumerate().map(|(i, (key, value))| {
        at.set(i);
        (key.clone(), Given(value.clone()))
    });
    let unknown = Cell::new(None);
    let checked = Checked {
        map: MapDeserializer::<_, Error>::new(pairs),
        keys: &entries,
        unknown: &unknown,
    };
    T::deserialize(checked).map_err(|e| match unknown.get() {
        Some((i, fields)) => unknown_option(what, &entries[i].0, fields),
        None => {
            let (key, given) = entries.get(at.get()).cloned().unwrap_or_default();
            field_error(prefix, &key, &given, e)
        }
    })
}

/// [`object`] for an options argument, which may be left out (read as `{}`).
pub fn options<T: DeserializeOwned>(value: &JsValue, what: &str) -> Result<T, JsValue> {
    let empty = js_sys::Object::new();
    object(if value.is_undefined() { &empty } else { value }, what, "")
}

/// The object's own keys and values, leaving out keys whose value is `undefined`.
fn entries(value: &JsValue) -> Vec<(String, JsValue)> {
    js_sys::Object::entries(value.unchecked_ref())
        .iter()
        .filter_map(|entry| {
            let entry: js_sys::Array = entry.unchecked_into();
            let value = entry.get(1);
            (!value.is_undefined()).then(|| (entry.get(0).as_string().unwrap_or_default(), value))
        })
        .collect()
}

/// The map of an object's entries, refusing keys the struct read from it does not have (serde
/// names its fields only to `deserialize_struct`; a map deserializer would ignore them).
struct Checked<'a, M> {
    map: M,
    keys: &'a [(String, JsValue)],
    unknown: &'a Cell<Option<(usize, &'static [&'static str])>>,
}

impl<'de, M: Deserializer<'de, Error = Error>> Deserializer<'de> for Checked<'_, M> {
    type Error = Error;

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        if let Some(i) = self
            .keys
            .iter()
            .position(|(k, _)| !fields.contains(&k.as_str()))
        {
            self.unknown.set(Some((i, fields)));
            return Err(Error::custom("unknown option"));
        }
        self.map.deserialize_any(visitor)
    }

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.map.deserialize_any(visitor)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

/// A field's value as given (never `undefined`: such a key counts as left out). serde reads it
/// as the type of its field, `Option<f64>`, `Option<String>` or `Option<bool>`, refusing any
/// other type with what was expected; a field with a reader below gets the value as it is.
struct Given(JsValue);

impl IntoDeserializer<'_, Error> for Given {
    type Deserializer = Given;
    fn into_deserializer(self) -> Given {
        self
    }
}

impl<'de> Deserializer<'de> for Given {
    type Error = Error;

    /// A value was given: `null` too, which is no number, string or boolean.
    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_some(self)
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let given = self.0.as_f64();
        visitor.visit_f64(given.ok_or_else(|| expected::<Error>("a number"))?)
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let given = self.0.as_string();
        visitor.visit_string(given.ok_or_else(|| expected::<Error>("a string"))?)
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let given = self.0.as_bool();
        visitor.visit_bool(given.ok_or_else(|| expected::<Error>("a boolean"))?)
    }

    /// serde-wasm-bindgen's `preserve` asks for its value as a tuple struct of its own.
    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        serde_wasm_bindgen::Deserializer::from(self.0).deserialize_tuple_struct(name, len, visitor)
    }

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        serde_wasm_bindgen::Deserializer::from(self.0).deserialize_any(visitor)
    }

    serde::forward_to_deserialize_any! {
        i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 char str bytes byte_buf unit unit_struct
        newtype_struct seq tuple map struct enum identifier ignored_any
    }
}

// Each field's value is taken as the JavaScript value it is (serde-wasm-bindgen's `preserve`)
// and its type checked here: serde-wasm-bindgen's own type errors would print the value.

/// The field's value as it is.
#[inline(never)]
fn given<'de, D: Deserializer<'de>>(d: D) -> Result<JsValue, D::Error> {
    serde_wasm_bindgen::preserve::deserialize(d)
}

/// The error for a value of the wrong type: only what was expected ("a number");
/// [`field_error`] names the field and the type it got.
fn expected<E: serde::de::Error>(what: &'static str) -> E {
    E::custom(what)
}

/// A field kept as the JavaScript value it is, for the caller to look at (a nested object, a
/// store, a meter).
#[inline(never)]
pub fn value<'de, D: Deserializer<'de>>(d: D) -> Result<Option<JsValue>, D::Error> {
    given(d).map(Some)
}

/// A function field.
#[inline(never)]
pub fn function<'de, D: Deserializer<'de>>(d: D) -> Result<Option<js_sys::Function>, D::Error> {
    given(d)?
        .dyn_into()
        .map(Some)
        .map_err(|_| expected("a function"))
}

/// What an item of a list must be.
pub trait Item: Sized {
    /// The list, as errors say it must be ("HTTP status codes").
    const WHAT: &'static str;
    /// The item, if `value` is one.
    fn from_js(value: JsValue) -> Option<Self>;
}

/// An array field whose items are `T`s.
#[inline(never)]
pub fn list<'de, D: Deserializer<'de>, T: Item>(d: D) -> Result<Option<Vec<T>>, D::Error> {
    let value = given(d)?;
    if !js_sys::Array::is_array(&value) {
        return Err(expected("an array"));
    }
    let items: js_sys::Array = value.unchecked_into();
    items
        .iter()
        .map(T::from_js)
        .collect::<Option<Vec<T>>>()
        .map(Some)
        .ok_or_else(|| D::Error::custom(format_args!("{HOLDING}{}", T::WHAT)))
}

/// An option given as a flag or an object (`retry`, `cache`), the object read by `read`.
pub fn toggle<T>(
    value: Option<JsValue>,
    field: &str,
    read: impl FnOnce(&JsValue) -> Result<T, JsValue>,
) -> Result<Option<Toggle<T>>, JsValue> {
    let Some(value) = value else {
        return Ok(None);
    };
    match value.as_bool() {
        Some(flag) => Ok(Some(Toggle::Flag(flag))),
        None if is_object(&value) => read(&value).map(|given| Some(Toggle::Given(given))),
        None => Err(wrong(field, "a boolean or an object", &value)),
    }
}

/// A plain object: not `null`, an array or a function.
pub fn is_object(value: &JsValue) -> bool {
    value.is_object() && !js_sys::Array::is_array(value) && !value.is_function()
}

/// The error for `field` given a value of the wrong type: what it must be, and the type given.
pub fn wrong(field: &str, expected: &str, value: &JsValue) -> JsValue {
    type_error(&format!(
        "Expected `{field}` to be {expected}, got {}",
        describe(value)
    ))
}

/// A short description of a value's type for error messages; never the value itself.
fn describe(value: &JsValue) -> String {
    if value.is_null() {
        "null".into()
    } else if js_sys::Array::is_array(value) {
        "an array".into()
    } else {
        value.js_typeof().as_string().unwrap_or_default()
    }
}

/// Marks an error about a list's items rather than the list.
const HOLDING: &str = "holding ";

/// A field's error as the caller's `TypeError`: the field, what it must be, and the type of
/// the value it was `given` (never the value). The message is what a reader above set
/// (`expected`); any other failure is serde-wasm-bindgen's own.
fn field_error(prefix: &str, key: &str, given: &JsValue, error: Error) -> JsValue {
    let text = JsValue::from(error)
        .dyn_into::<js_sys::Error>()
        .map(|e| String::from(e.message()))
        .unwrap_or_default();
    if let Some(items) = text.strip_prefix(HOLDING) {
        return type_error(&format!("Expected `{prefix}{key}` to hold {items}"));
    }
    wrong(&format!("{prefix}{key}"), &text, given)
}

/// An unknown key, with the keys `fields` that are known.
fn unknown_option(what: &str, key: &str, fields: &[&str]) -> JsValue {
    type_error(&format!(
        "Unknown option `{what}.{key}`; known options: {}",
        fields.join(", ")
    ))
}

//! The simulator's options (`simulate()`'s, feature `sim`), read by serde's derive through
//! serde-wasm-bindgen, one object at a time, with the words of `de.rs`'s errors: a `TypeError`
//! that names the field and the type it got, never the value. The main module reads its
//! options with `de.rs`'s tables instead, without a copy of this per options struct; the
//! simulator keeps serde for the forms its own fields take (`separateGates`: a flag or a
//! number, `retryBudget`: a number or `null`).
//!
//! As in `de.rs`, a key whose value is `undefined` counts as left out, and `null` is refused.

use std::cell::Cell;

use serde::de::value::MapDeserializer;
use serde::de::{DeserializeOwned, Deserializer, Error as _, IntoDeserializer, Visitor};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::de::{entries, is_object, unknown_option, wrong};

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
        Some((i, fields)) => unknown_option(what, &entries[i].0, &fields.join(", ")),
        None => {
            let (key, given) = entries.get(at.get()).cloned().unwrap_or_default();
            field_error(prefix, &key, &given, e)
        }
    })
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
/// other type with what was expected; a field read by [`value`] gets the value as it is.
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
        visitor.visit_f64(given.ok_or_else(|| Error::custom("a number"))?)
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let given = self.0.as_string();
        visitor.visit_string(given.ok_or_else(|| Error::custom("a string"))?)
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let given = self.0.as_bool();
        visitor.visit_bool(given.ok_or_else(|| Error::custom("a boolean"))?)
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

/// A field kept as the JavaScript value it is, for the caller to look at (a nested object):
/// serde-wasm-bindgen's `preserve`, whose own type errors would print the value.
#[inline(never)]
pub fn value<'de, D: Deserializer<'de>>(d: D) -> Result<Option<JsValue>, D::Error> {
    serde_wasm_bindgen::preserve::deserialize(d).map(Some)
}

/// A field's error as the caller's `TypeError`: the field, what it must be, and the type of
/// the value it was `given` (never the value). The message is what a reader set (`a number`,
/// or a form's own, as `a boolean or a number`); any other failure is serde-wasm-bindgen's own.
fn field_error(prefix: &str, key: &str, given: &JsValue, error: Error) -> JsValue {
    let text = JsValue::from(error)
        .dyn_into::<js_sys::Error>()
        .map(|e| String::from(e.message()))
        .unwrap_or_default();
    wrong(&format!("{prefix}{key}"), &text, given)
}

/// `quota.costs` as it was given, for `readers::costs` to read.
#[derive(Default)]
pub struct Costs(pub Option<JsValue>);

impl<'de> serde::Deserialize<'de> for Costs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        value(d).map(Costs)
    }
}

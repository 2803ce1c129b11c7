//! Options from JavaScript, one object at a time, by a table of its fields: each field's name
//! and the kind of value it takes. One function (not one per options struct, as serde's derive
//! made: 3-4 KB of wasm each) checks an object against its table; the caller then takes each
//! field's value by its kind. The errors a caller reads are the ones serde's derive gave:
//! a `TypeError` that names the field (`retry.baseMs`) and the type it got, never the value (it
//! might be a secret); an unknown key names the known ones. Ranges are checked by the core
//! afterwards (`RangeError`).
//!
//! Two JavaScript habits are kept: a key whose value is `undefined` counts as left out, and
//! `null` is refused rather than read as "the default" (`null` is not a number, a string or
//! an object).

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::errors::type_error;
use crate::core::rules::toggle::Toggle;

/// What a field's value must be.
#[derive(Clone, Copy)]
pub enum Kind {
    /// A number (`NaN` too: the core checks ranges).
    Number,
    /// A string.
    String,
    /// `true` or `false`.
    Boolean,
    /// A function.
    Function,
    /// Any value, for the caller to look at (a nested object, a store, a meter).
    Value,
    /// An array whose every item `holds`; `what` says the items in errors ("HTTP status
    /// codes").
    List {
        /// The items as errors name them.
        what: &'static str,
        /// Whether a value is such an item.
        holds: fn(&JsValue) -> bool,
    },
}

/// A field of an options object: its name as JavaScript writes it, and its kind.
pub type Field = (&'static str, Kind);

/// A field's value as given, of its field's kind (`None`: left out).
pub struct Given(Option<JsValue>);

impl Given {
    /// A [`Kind::Number`] field's value.
    pub fn number(&self) -> Option<f64> {
        self.0.as_ref().and_then(JsValue::as_f64)
    }

    /// A [`Kind::String`] field's value.
    pub fn string(&self) -> Option<String> {
        self.0.as_ref().and_then(JsValue::as_string)
    }

    /// A [`Kind::Boolean`] field's value.
    pub fn flag(&self) -> Option<bool> {
        self.0.as_ref().and_then(JsValue::as_bool)
    }

    /// A [`Kind::Function`] field's value.
    pub fn function(self) -> Option<js_sys::Function> {
        self.0.map(JsCast::unchecked_into)
    }

    /// A [`Kind::Value`] field's value, as it is.
    pub fn value(self) -> Option<JsValue> {
        self.0
    }

    /// A [`Kind::List`] field's items, each made by `item` (which its `holds` accepted).
    pub fn list<T>(&self, item: impl Fn(JsValue) -> Option<T>) -> Option<Vec<T>> {
        let items: &js_sys::Array = self.0.as_ref()?.unchecked_ref();
        items.iter().map(item).collect()
    }
}

/// Reads the plain object `value` by its `fields`: their values, in the table's order. `what`
/// names the object in errors (`retry`); `prefix` is put before its fields' names (`retry.`,
/// or nothing for the top-level options).
pub fn object<const N: usize>(
    value: &JsValue,
    what: &str,
    prefix: &str,
    fields: &[Field; N],
) -> Result<[Given; N], JsValue> {
    let mut given = [const { Given(None) }; N];
    read(value, what, prefix, fields, &mut given)?;
    Ok(given)
}

/// [`object`] for an options argument, which may be left out (read as `{}`).
pub fn options<const N: usize>(
    value: &JsValue,
    what: &str,
    prefix: &str,
    fields: &[Field; N],
) -> Result<[Given; N], JsValue> {
    let empty = js_sys::Object::new();
    let value = if value.is_undefined() { &empty } else { value };
    object(value, what, prefix, fields)
}

/// [`object`]'s one body for every table. As serde's derive did: any unknown key first, then
/// each key's value in the object's own order, the first of the wrong kind reported.
#[inline(never)]
fn read(
    value: &JsValue,
    what: &str,
    prefix: &str,
    fields: &[Field],
    given: &mut [Given],
) -> Result<(), JsValue> {
    if !is_object(value) {
        return Err(wrong(what, "an object", value));
    }
    let entries = entries(value);
    let mut at = Vec::with_capacity(entries.len());
    for (key, _) in &entries {
        match fields.iter().position(|(name, _)| name == key) {
            Some(i) => at.push(i),
            None => {
                let known: Vec<&str> = fields.iter().map(|(name, _)| *name).collect();
                let within = match prefix {
                    "" => format!("{what}."),
                    _ => prefix.to_owned(),
                };
                return Err(unknown_option(&within, key, &known.join(", ")));
            }
        }
    }
    for ((key, value), i) in entries.into_iter().zip(at) {
        check(fields[i].1, &value).map_err(|e| match e {
            Refused::Kind(expected) => wrong(&format!("{prefix}{key}"), expected, &value),
            Refused::Item(items) => {
                type_error(&format!("Expected `{prefix}{key}` to hold {items}"))
            }
        })?;
        given[i] = Given(Some(value));
    }
    Ok(())
}

/// Why a value does not fit its field: not of its kind (what the kind is), or an item of a
/// list that is not (what the items must be).
enum Refused {
    Kind(&'static str),
    Item(&'static str),
}

/// Whether `value` is of `kind`.
fn check(kind: Kind, value: &JsValue) -> Result<(), Refused> {
    let (fits, expected) = match kind {
        Kind::Number => (value.as_f64().is_some(), "a number"),
        Kind::String => (value.is_string(), "a string"),
        Kind::Boolean => (value.as_bool().is_some(), "a boolean"),
        Kind::Function => (value.is_instance_of::<js_sys::Function>(), "a function"),
        Kind::Value => (true, ""),
        Kind::List { what, holds } => {
            if !js_sys::Array::is_array(value) {
                return Err(Refused::Kind("an array"));
            }
            let items: &js_sys::Array = value.unchecked_ref();
            return match items.iter().all(|item| holds(&item)) {
                true => Ok(()),
                false => Err(Refused::Item(what)),
            };
        }
    };
    fits.then_some(()).ok_or(Refused::Kind(expected))
}

/// The object's own keys and values, leaving out keys whose value is `undefined`.
pub fn entries(value: &JsValue) -> Vec<(String, JsValue)> {
    js_sys::Object::entries(value.unchecked_ref())
        .iter()
        .filter_map(|entry| {
            let entry: js_sys::Array = entry.unchecked_into();
            let value = entry.get(1);
            (!value.is_undefined()).then(|| (entry.get(0).as_string().unwrap_or_default(), value))
        })
        .collect()
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

/// An unknown key of the object at `within` (`retry.`), with the keys that are `known`
/// ("a, b, c").
pub fn unknown_option(within: &str, key: &str, known: &str) -> JsValue {
    type_error(&format!(
        "Unknown option `{within}{key}`; known options: {known}"
    ))
}

//! A `serde::Serializer` that writes JSON, for figures that cross to JavaScript as one string
//! (what `stats()` and the metrics report beside the gates, which cross as numbers,
//! `wire.rs`): one `JSON.parse` there costs less than a call into JavaScript per field. It
//! writes what serde-wasm-bindgen's JSON-compatible mode builds: `None` and units `null`, maps
//! as objects, enums externally tagged; and infinities as `1e999`/`-1e999`, which `JSON.parse`
//! reads back as `Infinity`/`-Infinity` (`NaN`, which JSON cannot say, as `null`, as
//! `JSON.stringify` does).

use std::fmt::{self, Display, Write};

use serde::ser::{self, Serialize};

/// `value` as JSON text.
pub fn to_json(value: &impl Serialize) -> Result<String, Error> {
    let mut json = Json(String::new());
    value.serialize(&mut json)?;
    Ok(json.0)
}

/// Why a value could not be written: a map key that is not a string or a number, or what a
/// `Serialize` implementation reported.
#[derive(Debug)]
pub struct Error(String);

impl Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl ser::Error for Error {
    fn custom<T: Display>(msg: T) -> Self {
        Error(msg.to_string())
    }
}

/// The text written so far.
struct Json(String);

impl Json {
    /// Digits by hand: most figures are small counts, and `fmt` is slow for them.
    fn uint(&mut self, mut v: u64) {
        if v < 10 {
            self.0.push(char::from(b'0' + v as u8));
            return;
        }
        let mut digits = [0u8; 20];
        let mut at = digits.len();
        loop {
            at -= 1;
            digits[at] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        self.0
            .push_str(std::str::from_utf8(&digits[at..]).unwrap_or_default());
    }

    fn float(&mut self, v: f64) {
        /// Integers up to here are exact in an `f64`, and print as their digits.
        const EXACT: f64 = 9_007_199_254_740_992.0;
        if v == 0.0 {
            self.0
                .push_str(if v.is_sign_negative() { "-0" } else { "0" });
        } else if v.fract() == 0.0 && v.abs() <= EXACT {
            if v < 0.0 {
                self.0.push('-');
            }
            self.uint(v.abs() as u64);
        } else if v.is_finite() {
            // Rust prints the shortest digits that read back as the same number.
            let _ = write!(self.0, "{v}");
        } else if v.is_nan() {
            self.0.push_str("null");
        } else {
            self.0.push_str(if v > 0.0 { "1e999" } else { "-1e999" });
        }
    }

    fn string(&mut self, v: &str) {
        self.0.push('"');
        if !v.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') {
            // Keys and scopes: nothing to escape.
            self.0.push_str(v);
            self.0.push('"');
            return;
        }
        let mut start = 0;
        for (i, b) in v.bytes().enumerate() {
            let escape = match b {
                b'"' => "\\\"",
                b'\\' => "\\\\",
                b'\n' => "\\n",
                b'\r' => "\\r",
                b'\t' => "\\t",
                0..=0x1f => "",
                _ => continue,
            };
            self.0.push_str(&v[start..i]);
            if escape.is_empty() {
                let _ = write!(self.0, "\\u{b:04x}");
            } else {
                self.0.push_str(escape);
            }
            start = i + 1;
        }
        self.0.push_str(&v[start..]);
        self.0.push('"');
    }

    /// Opens `{"variant":` for an enum's variant with content.
    fn tag(&mut self, variant: &str) {
        self.0.push('{');
        self.string(variant);
        self.0.push(':');
    }

    fn open(&mut self, bracket: char, close: &'static str) -> Compound<'_> {
        self.0.push(bracket);
        Compound {
            json: self,
            first: true,
            close,
        }
    }
}

/// An array or object being written; `close` ends it (and a variant's tag around it).
struct Compound<'a> {
    json: &'a mut Json,
    first: bool,
    close: &'static str,
}

impl Compound<'_> {
    fn comma(&mut self) {
        if !std::mem::take(&mut self.first) {
            self.json.0.push(',');
        }
    }

    fn element<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), Error> {
        self.comma();
        value.serialize(&mut *self.json)
    }

    /// A struct's field: its name, a Rust identifier renamed to camelCase, needs no escaping.
    fn field<T: ?Sized + Serialize>(&mut self, key: &str, value: &T) -> Result<(), Error> {
        self.comma();
        let text = &mut self.json.0;
        text.push('"');
        text.push_str(key);
        text.push_str("\":");
        value.serialize(&mut *self.json)
    }

    fn close(self) -> Result<(), Error> {
        self.json.0.push_str(self.close);
        Ok(())
    }
}

impl<'a> ser::Serializer for &'a mut Json {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Compound<'a>;
    type SerializeTuple = Compound<'a>;
    type SerializeTupleStruct = Compound<'a>;
    type SerializeTupleVariant = Compound<'a>;
    type SerializeMap = Compound<'a>;
    type SerializeStruct = Compound<'a>;
    type SerializeStructVariant = Compound<'a>;

    fn serialize_bool(self, v: bool) -> Result<(), Error> {
        self.0.push_str(if v { "true" } else { "false" });
        Ok(())
    }
    fn serialize_i8(self, v: i8) -> Result<(), Error> {
        self.serialize_i64(v.into())
    }
    fn serialize_i16(self, v: i16) -> Result<(), Error> {
        self.serialize_i64(v.into())
    }
    fn serialize_i32(self, v: i32) -> Result<(), Error> {
        self.serialize_i64(v.into())
    }
    fn serialize_i64(self, v: i64) -> Result<(), Error> {
        if v < 0 {
            self.0.push('-');
        }
        self.uint(v.unsigned_abs());
        Ok(())
    }
    fn serialize_u8(self, v: u8) -> Result<(), Error> {
        self.serialize_u64(v.into())
    }
    fn serialize_u16(self, v: u16) -> Result<(), Error> {
        self.serialize_u64(v.into())
    }
    fn serialize_u32(self, v: u32) -> Result<(), Error> {
        self.serialize_u64(v.into())
    }
    fn serialize_u64(self, v: u64) -> Result<(), Error> {
        self.uint(v);
        Ok(())
    }
    fn serialize_f32(self, v: f32) -> Result<(), Error> {
        self.serialize_f64(v.into())
    }
    fn serialize_f64(self, v: f64) -> Result<(), Error> {
        self.float(v);
        Ok(())
    }
    fn serialize_char(self, v: char) -> Result<(), Error> {
        self.string(v.encode_utf8(&mut [0; 4]));
        Ok(())
    }
    fn serialize_str(self, v: &str) -> Result<(), Error> {
        self.string(v);
        Ok(())
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), Error> {
        ser::Serializer::collect_seq(self, v)
    }
    fn serialize_none(self) -> Result<(), Error> {
        self.serialize_unit()
    }
    fn serialize_some<T: ?Sized + Serialize>(self, value: &T) -> Result<(), Error> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Error> {
        self.0.push_str("null");
        Ok(())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), Error> {
        self.serialize_unit()
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, v: &'static str) -> Result<(), Error> {
        self.string(v);
        Ok(())
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        self.tag(variant);
        value.serialize(&mut *self)?;
        self.0.push('}');
        Ok(())
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Compound<'a>, Error> {
        Ok(self.open('[', "]"))
    }
    fn serialize_tuple(self, _: usize) -> Result<Compound<'a>, Error> {
        Ok(self.open('[', "]"))
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Compound<'a>, Error> {
        Ok(self.open('[', "]"))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Compound<'a>, Error> {
        self.tag(variant);
        Ok(self.open('[', "]}"))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Compound<'a>, Error> {
        Ok(self.open('{', "}"))
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Compound<'a>, Error> {
        Ok(self.open('{', "}"))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Compound<'a>, Error> {
        self.tag(variant);
        Ok(self.open('{', "}}"))
    }
}

impl ser::SerializeSeq for Compound<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_element<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), Error> {
        self.element(value)
    }
    fn end(self) -> Result<(), Error> {
        self.close()
    }
}

impl ser::SerializeTuple for Compound<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_element<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), Error> {
        self.element(value)
    }
    fn end(self) -> Result<(), Error> {
        self.close()
    }
}

impl ser::SerializeTupleStruct for Compound<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), Error> {
        self.element(value)
    }
    fn end(self) -> Result<(), Error> {
        self.close()
    }
}

impl ser::SerializeTupleVariant for Compound<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), Error> {
        self.element(value)
    }
    fn end(self) -> Result<(), Error> {
        self.close()
    }
}

impl ser::SerializeMap for Compound<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_key<T: ?Sized + Serialize>(&mut self, key: &T) -> Result<(), Error> {
        self.comma();
        key.serialize(Key(&mut *self.json))?;
        self.json.0.push(':');
        Ok(())
    }
    fn serialize_value<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), Error> {
        value.serialize(&mut *self.json)
    }
    fn end(self) -> Result<(), Error> {
        self.close()
    }
}

impl ser::SerializeStruct for Compound<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: ?Sized + Serialize>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        self.field(key, value)
    }
    fn end(self) -> Result<(), Error> {
        self.close()
    }
}

impl ser::SerializeStructVariant for Compound<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: ?Sized + Serialize>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        self.field(key, value)
    }
    fn end(self) -> Result<(), Error> {
        self.close()
    }
}

/// A map's key: a string, or a number written as one (an object's keys are strings).
struct Key<'a>(&'a mut Json);

impl Key<'_> {
    fn quoted(self, write: impl FnOnce(&mut Json)) -> Result<(), Error> {
        let mut number = Json(String::new());
        write(&mut number);
        self.0.string(&number.0);
        Ok(())
    }
}

/// Refuses a key JavaScript would not name a property by.
fn not_a_key<T>() -> Result<T, Error> {
    Err(Error("a map key that is not a string or a number".into()))
}

impl ser::Serializer for Key<'_> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = ser::Impossible<(), Error>;
    type SerializeTuple = ser::Impossible<(), Error>;
    type SerializeTupleStruct = ser::Impossible<(), Error>;
    type SerializeTupleVariant = ser::Impossible<(), Error>;
    type SerializeMap = ser::Impossible<(), Error>;
    type SerializeStruct = ser::Impossible<(), Error>;
    type SerializeStructVariant = ser::Impossible<(), Error>;

    fn serialize_str(self, v: &str) -> Result<(), Error> {
        self.0.string(v);
        Ok(())
    }
    fn serialize_char(self, v: char) -> Result<(), Error> {
        self.serialize_str(v.encode_utf8(&mut [0; 4]))
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, v: &'static str) -> Result<(), Error> {
        self.serialize_str(v)
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        value.serialize(self)
    }
    fn serialize_i8(self, v: i8) -> Result<(), Error> {
        self.serialize_i64(v.into())
    }
    fn serialize_i16(self, v: i16) -> Result<(), Error> {
        self.serialize_i64(v.into())
    }
    fn serialize_i32(self, v: i32) -> Result<(), Error> {
        self.serialize_i64(v.into())
    }
    fn serialize_i64(self, v: i64) -> Result<(), Error> {
        self.quoted(|j| {
            let _ = ser::Serializer::serialize_i64(j, v);
        })
    }
    fn serialize_u8(self, v: u8) -> Result<(), Error> {
        self.serialize_u64(v.into())
    }
    fn serialize_u16(self, v: u16) -> Result<(), Error> {
        self.serialize_u64(v.into())
    }
    fn serialize_u32(self, v: u32) -> Result<(), Error> {
        self.serialize_u64(v.into())
    }
    fn serialize_u64(self, v: u64) -> Result<(), Error> {
        self.quoted(|j| j.uint(v))
    }
    fn serialize_f32(self, v: f32) -> Result<(), Error> {
        self.serialize_f64(v.into())
    }
    fn serialize_f64(self, v: f64) -> Result<(), Error> {
        self.quoted(|j| j.float(v))
    }
    fn serialize_bool(self, _: bool) -> Result<(), Error> {
        not_a_key()
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<(), Error> {
        not_a_key()
    }
    fn serialize_none(self) -> Result<(), Error> {
        not_a_key()
    }
    fn serialize_some<T: ?Sized + Serialize>(self, _: &T) -> Result<(), Error> {
        not_a_key()
    }
    fn serialize_unit(self) -> Result<(), Error> {
        not_a_key()
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), Error> {
        not_a_key()
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<(), Error> {
        not_a_key()
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Error> {
        not_a_key()
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Error> {
        not_a_key()
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, Error> {
        not_a_key()
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Error> {
        not_a_key()
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Error> {
        not_a_key()
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct, Error> {
        not_a_key()
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Error> {
        not_a_key()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Shape {
        count: u64,
        below: i32,
        ratio: f64,
        bounds: [f64; 4],
        zero: f64,
        nothing: Option<u8>,
        #[serde(skip_serializing_if = "Option::is_none")]
        skipped: Option<u8>,
        name: &'static str,
        kind: Kind,
        pair: (String, f64),
        by_key: BTreeMap<u32, bool>,
        #[serde(flatten)]
        more: Inner,
    }

    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    enum Kind {
        Open,
        Held(f64),
        Spread { per_hour: f64 },
    }

    #[derive(serde::Serialize)]
    struct Inner {
        flat: u8,
    }

    #[test]
    fn writes_what_serde_wasm_bindgen_builds_in_its_json_mode() {
        let shape = Shape {
            count: 12_345,
            below: -7,
            ratio: 0.1 + 0.2,
            bounds: [1e21, f64::INFINITY, f64::NEG_INFINITY, f64::NAN],
            zero: -0.0,
            nothing: None,
            skipped: None,
            name: "a \"quoted\" \\ line\n\u{1}é",
            kind: Kind::Open,
            pair: ("x".into(), 2.5),
            by_key: BTreeMap::from([(2, true)]),
            more: Inner { flat: 1 },
        };
        let json = to_json(&shape).unwrap();
        assert_eq!(
            json,
            r#"{"count":12345,"below":-7,"ratio":0.30000000000000004,"#.to_owned()
                + r#""bounds":[1000000000000000000000,1e999,-1e999,null],"zero":-0,"#
                + r#""nothing":null,"name":"a \"quoted\" \\ line\n\u0001é","kind":"open","#
                + r#""pair":["x",2.5],"byKey":{"2":true},"flat":1}"#
        );
        let variants = [Kind::Held(3.0), Kind::Spread { per_hour: 0.5 }];
        assert_eq!(
            to_json(&variants).unwrap(),
            r#"[{"held":3},{"spread":{"per_hour":0.5}}]"#
        );
    }

    #[test]
    fn refuses_a_key_that_names_no_property() {
        let map = BTreeMap::from([((1, 2), 3)]);
        assert!(to_json(&map).is_err());
    }
}

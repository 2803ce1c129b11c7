//! Reading headers in every shape `fetch` accepts (a `Headers`, an array of pairs, a plain
//! object), case-insensitively, and reading a `Response`'s through plain property access so a
//! `Response` from undici or another realm works too.

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::read::get;

/// What the gate needs to know of a request's headers.
pub struct Credential {
    /// `X-API-Key`, when sent.
    pub api_key: Option<String>,
    /// `Authorization`, when sent.
    pub authorization: Option<String>,
    /// Whether an `Idempotency-Key` makes a non-idempotent method safe to replay.
    pub idempotency_key: bool,
}

/// The credential (and idempotency key) a `fetch(input, init)` call carries. As in `fetch`,
/// `init.headers` replaces the headers of a `Request` passed as `input`.
pub fn credential(input: &JsValue, init: &JsValue) -> Credential {
    let mut headers = if init.is_object() {
        get(init, "headers")
    } else {
        JsValue::UNDEFINED
    };
    if headers.is_undefined() && input.is_object() {
        headers = get(input, "headers");
    }
    let mut found = Credential {
        api_key: None,
        authorization: None,
        idempotency_key: false,
    };
    each_header(&headers, |name, value| {
        if name.eq_ignore_ascii_case("x-api-key") {
            found.api_key = Some(value);
        } else if name.eq_ignore_ascii_case("authorization") {
            found.authorization = Some(value);
        } else if name.eq_ignore_ascii_case("idempotency-key") {
            found.idempotency_key = true;
        }
    });
    found
}

/// The request's method: `init.method`, else a `Request`'s, else GET.
pub fn method(input: &JsValue, init: &JsValue) -> String {
    [init, input]
        .into_iter()
        .filter(|v| v.is_object())
        .find_map(|v| get(v, "method").as_string())
        .unwrap_or_else(|| "GET".into())
}

/// The request's URL as a string: `input` itself, a `URL`'s `href`, or a `Request`'s `url`.
pub fn url(input: &JsValue) -> Option<String> {
    input
        .as_string()
        .or_else(|| get(input, "href").as_string())
        .or_else(|| get(input, "url").as_string())
}

/// Calls `visit(name, value)` for each header in `headers`.
fn each_header(headers: &JsValue, mut visit: impl FnMut(&str, String)) {
    if !headers.is_object() {
        return;
    }
    if js_sys::Array::is_array(headers) {
        for pair in js_sys::Array::from(headers).iter() {
            let name = js_sys::Reflect::get_u32(&pair, 0)
                .ok()
                .and_then(|v| v.as_string());
            let value = js_sys::Reflect::get_u32(&pair, 1)
                .ok()
                .and_then(|v| v.as_string());
            if let (Some(name), Some(value)) = (name, value) {
                visit(&name, value);
            }
        }
    } else if get(headers, "get").is_function() {
        for name in ["x-api-key", "authorization", "idempotency-key"] {
            if let Some(value) = lookup(headers, name) {
                visit(name, value);
            }
        }
    } else {
        let object: &js_sys::Object = headers.unchecked_ref();
        for entry in js_sys::Object::entries(object).iter() {
            let name = js_sys::Reflect::get_u32(&entry, 0)
                .ok()
                .and_then(|v| v.as_string());
            let value = js_sys::Reflect::get_u32(&entry, 1)
                .ok()
                .and_then(|v| v.as_string());
            if let (Some(name), Some(value)) = (name, value) {
                visit(&name, value);
            }
        }
    }
}

/// `headers.get(name)` on a `Headers`-like object (case-insensitive by contract).
pub fn lookup(headers: &JsValue, name: &str) -> Option<String> {
    let get_fn: js_sys::Function = get(headers, "get").dyn_into().ok()?;
    get_fn
        .call1(headers, &JsValue::from_str(name))
        .ok()?
        .as_string()
}

//! Reading what the gate needs from a request and a response: the credential, method and
//! idempotency key of a `fetch(input, init)` call in every shape `fetch` accepts (a `Headers`,
//! an array of pairs, a plain object; a `Request` as `input`), the caller's signal, and a
//! response's headers by name through plain property access (so a `Response` from undici or
//! another realm works too).

use wasm_bindgen::prelude::*;

use super::props::get;
use crate::core::parse::feedback::FEEDBACK_HEADERS;
use crate::core::rules::classify::Body;

/// What the gate needs to know of a request's headers.
pub struct Credential {
    /// `X-API-Key`, when sent.
    pub api_key: Option<String>,
    /// `Authorization`, when sent.
    pub authorization: Option<String>,
    /// Whether an `Idempotency-Key` makes a non-idempotent method safe to replay.
    pub idempotency_key: bool,
}

#[wasm_bindgen(module = "/src/js/reads.js")]
extern "C" {
    #[wasm_bindgen(js_name = requestFacts)]
    fn request_facts(input: &JsValue, init: &JsValue) -> String;
    /// The caller's signal: `init.signal`, else a `Request`'s.
    #[wasm_bindgen(js_name = callerSignal)]
    pub fn caller_signal(input: &JsValue, init: &JsValue) -> Option<web_sys::AbortSignal>;
    /// `headers.get(name)` on a `Headers`-like object (case-insensitive by contract).
    #[wasm_bindgen(js_name = headerValue)]
    pub fn header_value(headers: &JsValue, name: &JsValue) -> Option<String>;
}

thread_local! {
    /// The feedback header names as JavaScript strings, made once.
    static NAMES: Vec<(&'static str, JsValue)> = FEEDBACK_HEADERS
        .iter()
        .map(|&n| (n, JsValue::from_str(n)))
        .collect();
}

/// What `reads.js` sends for a header that is absent.
const NONE: &str = "\u{1}";

fn present(value: &str) -> Option<String> {
    (value != NONE).then(|| value.to_string())
}

/// The credential, idempotency key, method, kind of body and URL of a `fetch(input, init)`
/// call, in one crossing. As in `fetch`, `init.headers` replaces the headers of a `Request`
/// passed as `input`.
pub fn request(input: &JsValue, init: &JsValue) -> (Credential, String, Body, String) {
    let facts = request_facts(input, init);
    // Bytes, not chars: the separator is ASCII, and every part stays valid UTF-8. The URL
    // comes last, whole (a NUL in it stays in it).
    let mut parts = facts.as_bytes().splitn(6, |&b| b == 0);
    let mut next = || {
        parts
            .next()
            .and_then(|part| std::str::from_utf8(part).ok())
            .unwrap_or(NONE)
    };
    let credential = Credential {
        api_key: present(next()),
        authorization: present(next()),
        idempotency_key: next() == "1",
    };
    let method = next().to_string();
    let body = match next() {
        "r" => Body::Reusable,
        "s" => Body::Stream,
        "o" => Body::OneShot,
        _ => Body::None,
    };
    let url = parts
        .next()
        .and_then(|part| std::str::from_utf8(part).ok())
        .unwrap_or_default()
        .to_string();
    (credential, method, body, url)
}

/// A lookup into a response's headers for the gate: one call into JavaScript per name asked,
/// with the name passed as a string made once.
pub fn lookup(response: &JsValue) -> impl Fn(&str) -> Option<String> + '_ {
    let headers = std::cell::OnceCell::new();
    move |name| {
        let headers = headers.get_or_init(|| get(response, "headers"));
        NAMES.with(|names| {
            let (_, js) = names.iter().find(|(n, _)| *n == name)?;
            header_value(headers, js)
        })
    }
}

//! Reading headers in every shape `fetch` accepts (a `Headers`, an array of pairs, a plain
//! object), case-insensitively, and reading a `Response`'s through plain property access so a
//! `Response` from undici or another realm works too.

use wasm_bindgen::prelude::*;

use super::read::get;
use crate::core::feedback::FEEDBACK_HEADERS;

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

/// The credential, idempotency key and method of a `fetch(input, init)` call. As in `fetch`,
/// `init.headers` replaces the headers of a `Request` passed as `input`.
pub fn request(input: &JsValue, init: &JsValue) -> (Credential, String) {
    let facts = request_facts(input, init);
    // A closure, not '\0': a char pattern brings core's CharSearcher (0.6 KB of wasm).
    #[allow(clippy::manual_pattern_char_comparison)]
    let mut parts = facts.split(|c| c == '\0');
    let mut next = || parts.next().unwrap_or(NONE);
    let credential = Credential {
        api_key: present(next()),
        authorization: present(next()),
        idempotency_key: next() == "1",
    };
    (credential, next().to_string())
}

/// A lookup into a response's headers for the feedback parser: one call into JavaScript per
/// name asked, with the name passed as a string made once.
pub fn feedback_lookup(response: &JsValue) -> impl Fn(&str) -> Option<String> {
    let headers = get(response, "headers");
    move |name| {
        NAMES.with(|names| {
            let (_, js) = names.iter().find(|(n, _)| *n == name)?;
            header_value(&headers, js)
        })
    }
}

/// The request's URL as a string: `input` itself, a `URL`'s `href`, or a `Request`'s `url`.
pub fn url(input: &JsValue) -> Option<String> {
    input
        .as_string()
        .or_else(|| get(input, "href").as_string())
        .or_else(|| get(input, "url").as_string())
}

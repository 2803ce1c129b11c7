//! Reading what the gate needs from a request and a response: the credential, method and
//! idempotency key of a `fetch(input, init)` call in every shape `fetch` accepts (a `Headers`,
//! an array of pairs, a plain object; a `Request` as `input`), the caller's signal, and a
//! response's feedback headers. `reads.js` does the reading on the JavaScript side, so each
//! crosses into wasm as one string.

use wasm_bindgen::prelude::*;

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
    /// The `/usage` probe's `init`: a `GET` for JSON with the credential's headers.
    #[wasm_bindgen(js_name = usageInit)]
    pub fn usage_init(api_key: Option<String>, authorization: Option<String>) -> JsValue;
    #[wasm_bindgen(js_name = useFeedbackNames)]
    fn use_feedback_names(list: &str);
}

/// What `reads.js` sends for a header that is absent.
const NONE: &str = "\u{1}";

fn present(value: &str) -> Option<String> {
    (value != NONE).then(|| value.to_string())
}

/// Tells `reads.js` which response headers the gate reads (the core's list), once per thread:
/// before the first response is read.
pub fn name_feedback() {
    thread_local!(static NAMED: () = use_feedback_names(&FEEDBACK_HEADERS.join(",")));
    NAMED.with(|_| ());
}

/// The credential, idempotency key, method, kind of body and URL of a `fetch(input, init)`
/// call, in one crossing. As in `fetch`, `init.headers` replaces the headers of a `Request`
/// passed as `input`.
pub fn request(input: &JsValue, init: &JsValue) -> (Credential, String, Body, String) {
    facts(&request_facts(input, init))
}

/// [`request`] from the string `reads.js`'s `requestFacts` made.
pub fn facts(facts: &str) -> (Credential, String, Body, String) {
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
    let body = Body::from_letter(next());
    let url = parts
        .next()
        .and_then(|part| std::str::from_utf8(part).ok())
        .unwrap_or_default()
        .to_string();
    (credential, method, body, url)
}

/// A lookup into the feedback headers `reads.js`'s `feedbackOf` read from a response: each
/// present one as its index's letter in [`FEEDBACK_HEADERS`], its value and a NUL.
pub fn lookup(feedback: Option<&str>) -> impl Fn(&str) -> Option<String> + '_ {
    move |name| {
        let index = FEEDBACK_HEADERS.iter().position(|&n| n == name)?;
        let letter = b'A' + index as u8;
        feedback?
            .split_terminator('\0')
            .find(|entry| entry.as_bytes().first() == Some(&letter))
            .map(|entry| entry[1..].to_string())
    }
}

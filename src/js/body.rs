//! Disposing of a response body the caller will never see (a retried 429 or 503). An unread
//! body keeps its connection busy until garbage collection, so it is drained when small (the
//! connection goes back to the pool) and cancelled past a cap (the connection closes now).

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

use super::clock;
use super::headers::header_value;
use super::props::get;
use crate::core::gate::respond::{drains, BodyFacts};
use crate::core::rules::quota::Usage;

#[wasm_bindgen(module = "/src/js/body.js")]
extern "C" {
    /// The body's JSON (from its chunks), or `null` when it is not JSON.
    #[wasm_bindgen(js_name = jsonFacts)]
    fn json_facts(chunks: &js_sys::Array) -> JsValue;
    /// Cancels a body or a reader, ignoring a failed cancel: there is nobody to tell.
    pub fn cancel(stream: &JsValue);
    /// A read answer (`response` and its body's chunks), kept to be given again.
    #[wasm_bindgen(js_name = keepAnswer)]
    fn keep_answer(response: &JsValue, chunks: &js_sys::Array) -> JsValue;
    /// A kept answer given again: a new `Response` with its status, headers and body, marked
    /// `x-odds-gate: <marker>`.
    #[wasm_bindgen(js_name = giveAgain)]
    pub fn give_again(kept: &JsValue, marker: &str) -> JsValue;
}

/// What a body read to the end said: its JSON's `code` and `detail`, and the answer kept whole.
pub struct Read {
    /// The JSON's `code` and `detail` (none when it is no JSON).
    pub facts: BodyFacts,
    /// The answer, to be given again (see [`give_again`]).
    pub kept: JsValue,
}

/// Drains or cancels the body. With `read`, returns what it said when it was small enough to
/// read whole; without, nothing is decoded or kept.
pub async fn discard(response: &JsValue, read: bool) -> Option<Read> {
    let body = get(response, "body");
    if !body.is_object() {
        return None;
    }
    let content_length = JsValue::from_str("content-length");
    let declared = header_value(&get(response, "headers"), &content_length)
        .and_then(|v| v.trim().parse::<usize>().ok());
    if declared.is_some_and(|n| !drains(n)) {
        cancel(&body);
        return None;
    }
    let reader = call(&body, "getReader")?;
    let chunks = js_sys::Array::new();
    let mut length = 0;
    loop {
        let chunk = match call(&reader, "read") {
            Some(promise) => JsFuture::from(js_sys::Promise::resolve(&promise))
                .await
                .ok()?,
            None => return None,
        };
        if get(&chunk, "done").is_truthy() {
            if !read {
                return None;
            }
            let json = json_facts(&chunks);
            let field = |k| get(&json, k).as_string();
            let facts = BodyFacts {
                code: field("code"),
                detail: field("detail"),
            };
            let kept = keep_answer(response, &chunks);
            return Some(Read { facts, kept });
        }
        let value: js_sys::Uint8Array = get(&chunk, "value").dyn_into().ok()?;
        length += value.length() as usize;
        if !drains(length) {
            cancel(&reader);
            return None;
        }
        if read {
            chunks.push(&value);
        }
    }
}

/// What a `GET /usage` response reports, read whole (its JSON; see [`Usage::read`]).
pub async fn usage(response: &JsValue) -> Option<Usage> {
    let promise = call(response, "json")?;
    let json = JsFuture::from(js_sys::Promise::resolve(&promise))
        .await
        .ok()?;
    let field = |k: &str| get(&json, k);
    Usage::read(
        |k| field(k).as_f64(),
        |k| field(k).as_string(),
        clock::from_wall,
    )
}

fn call(target: &JsValue, method: &str) -> Option<JsValue> {
    let f: js_sys::Function = get(target, method).dyn_into().ok()?;
    f.call0(target).ok()
}

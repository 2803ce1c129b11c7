//! Disposing of a response body the caller will never see (a retried 429 or 503). An unread
//! body keeps its connection busy until garbage collection, so it is drained when small (the
//! connection goes back to the pool) and cancelled past a cap (the connection closes now).

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

use super::headers::header_value;
use super::read::get;

#[wasm_bindgen(module = "/src/js/body.js")]
extern "C" {
    #[wasm_bindgen(js_name = utf8Text)]
    fn utf8_text(chunks: &js_sys::Array) -> String;
    /// Cancels a body or a reader, ignoring a failed cancel: there is nobody to tell.
    pub fn cancel(stream: &JsValue);
}

/// Bodies up to this size are read to the end; larger ones are cancelled.
pub const DRAIN_CAP: usize = 64 * 1024;

/// Drains or cancels the body. Returns its text when it was small enough to read whole.
pub async fn discard(response: &JsValue) -> Option<String> {
    let body = get(response, "body");
    if !body.is_object() {
        return None;
    }
    let content_length = JsValue::from_str("content-length");
    let declared = header_value(&get(response, "headers"), &content_length)
        .and_then(|v| v.trim().parse::<usize>().ok());
    if declared.is_some_and(|n| n > DRAIN_CAP) {
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
            return Some(utf8_text(&chunks));
        }
        let value: js_sys::Uint8Array = get(&chunk, "value").dyn_into().ok()?;
        length += value.length() as usize;
        if length > DRAIN_CAP {
            cancel(&reader);
            return None;
        }
        chunks.push(&value);
    }
}

fn call(target: &JsValue, method: &str) -> Option<JsValue> {
    let f: js_sys::Function = get(target, method).dyn_into().ok()?;
    f.call0(target).ok()
}

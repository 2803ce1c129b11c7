//! Calls that keep to their own requests (`requests.js`), for runtimes where each incoming
//! request is a context of its own (Cloudflare's workerd): each waiting call keeps a timer of its
//! request that wakes the gates, and its attempts are sent from its request. The edge entry
//! turns it on; the rules stay the core's.

use wasm_bindgen::prelude::*;

use super::driver::driver;
use crate::core::gates::ids::CallRef;
use crate::core::Millis;

#[wasm_bindgen(module = "/src/js/requests.js")]
extern "C" {
    fn listen(tick: &Closure<dyn FnMut() -> f64>);
    fn enroll(id: f64, due_in_ms: f64);
    fn leave(id: f64);
}

/// Turns per-request calls on for this thread: the edge entry, as it loads.
#[wasm_bindgen(js_name = perRequest)]
pub fn per_request() {
    if driver().keep_requests() {
        // Lives as long as the module.
        let tick = Closure::<dyn FnMut() -> f64>::new(|| driver().tick());
        listen(&tick);
        tick.forget();
    }
}

/// `call` waits, its caller's request running: the gates wake `due_in` from now.
pub fn waits(call: CallRef, due_in: Option<Millis>) {
    enroll(call as f64, due_in.unwrap_or(Millis::INFINITY));
}

/// `call` settled.
pub fn settled(call: CallRef) {
    leave(call as f64);
}

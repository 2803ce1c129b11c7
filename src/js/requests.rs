//! Calls that keep to their own requests (`requests.js`), for runtimes where each incoming
//! request is a context of its own (Cloudflare's workerd): each waiting call keeps a timer of its
//! request that wakes the gates, and its attempts are sent from its request. The driver turns it
//! on for the edge entry and says which calls wait; this file only reaches `requests.js`.

use wasm_bindgen::prelude::*;

use crate::core::gates::ids::CallRef;
use crate::core::Millis;

#[wasm_bindgen(module = "/src/js/requests.js")]
extern "C" {
    #[wasm_bindgen(js_name = listen)]
    fn listen_with(tick: &Closure<dyn FnMut() -> f64>);
    fn enroll(id: f64, due_in_ms: f64);
    fn leave(id: f64);
}

/// From now on calls keep to their own requests: `tick` wakes the gates if they are due and
/// says how long until they are due next.
pub fn listen(tick: impl FnMut() -> f64 + 'static) {
    let tick = Closure::<dyn FnMut() -> f64>::new(tick);
    listen_with(&tick);
    // Lives as long as the module.
    tick.forget();
}

/// `call` waits, its caller's request running: the gates wake `due_in` from now.
pub fn waits(call: CallRef, due_in: Option<Millis>) {
    enroll(call as f64, due_in.unwrap_or(Millis::INFINITY));
}

/// `call` settled.
pub fn settled(call: CallRef) {
    leave(call as f64);
}

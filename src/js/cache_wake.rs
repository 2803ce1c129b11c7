//! The driver's timer waking a cache's machine: apart from `cache.rs`, which asks the driver to
//! watch its caches, so the two modules do not import each other.

use wasm_bindgen::prelude::*;

use super::options::SharedCache;

#[wasm_bindgen(module = "/src/js/cache.js")]
extern "C" {
    /// Performs `words` (actions) on `cache.js`'s side of a cache.
    #[wasm_bindgen(js_name = run)]
    fn run_actions(side: &JsValue, words: Vec<f64>);
}

/// The timer woke `cache`'s machine at `now`: what it asks is done on its side.
pub(super) fn wake(cache: &SharedCache, now: f64) {
    let (words, side) = {
        let mut c = cache.borrow_mut();
        c.0.wake(now);
        (c.0.take_words(), c.1.clone())
    };
    if !words.is_empty() {
        run_actions(&side, words);
    }
}

//! Numbers as text, written by JavaScript's `String(n)`: the same shortest round-trip digits
//! as Rust's `Display`, without Rust's float formatting (grisu, dragon, their tables) in the
//! module. JavaScript's own spellings remain: `Infinity`, and an exponent from 1e21 on.

use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_name = String)]
    fn string(n: f64) -> String;
}

/// `n` as JavaScript writes it.
pub fn number(n: f64) -> String {
    string(n)
}

//! The ring of the threads' cache bytes (`arena.js` lays it out and moves the bytes) as the
//! core's [`Ring`]: `rules/arena.rs` decides where an entry goes and whether what was read
//! back is intact.

use std::cell::Cell;

use js_sys::Uint8Array;
use wasm_bindgen::prelude::*;

use super::shared_memory::{self, SharedMemory};
use crate::core::rules::arena::{self, Place, Ring};

#[wasm_bindgen(module = "/src/js/arena.js")]
extern "C" {
    #[wasm_bindgen(js_name = arenaCapacity)]
    fn capacity(s: &SharedMemory) -> f64;
    #[wasm_bindgen(js_name = arenaReserve)]
    fn reserve(s: &SharedMemory, len: f64) -> f64;
    #[wasm_bindgen(js_name = arenaHead)]
    fn head(s: &SharedMemory) -> f64;
    #[wasm_bindgen(js_name = arenaWrite)]
    fn write(s: &SharedMemory, at: f64, bytes: &Uint8Array, from: f64, len: f64);
    #[wasm_bindgen(js_name = arenaRead)]
    fn read(s: &SharedMemory, at: f64, bytes: &Uint8Array, to: f64, len: f64);
    #[wasm_bindgen(js_name = arenaDigest)]
    fn digest(bytes: &Uint8Array) -> Vec<f64>;
    #[wasm_bindgen(js_name = arenaFit)]
    fn fit(s: &SharedMemory, want: f64);
}

thread_local! {
    /// The ring's size this thread's caches want: the largest `cache.maxBytes` of those that
    /// share with the threads.
    static WANT: Cell<f64> = const { Cell::new(0.0) };
}

/// The ring holds at least `max_bytes` (a cache that shares with the threads).
pub fn bound(max_bytes: f64) {
    WANT.with(|w| w.set(w.get().max(max_bytes)));
}

/// One entry's bytes on their way into or out of the current ring.
struct Hand<'a> {
    memory: &'a SharedMemory,
    bytes: &'a Uint8Array,
}

impl Ring for Hand<'_> {
    fn capacity(&self) -> f64 {
        capacity(self.memory)
    }
    fn reserve(&self, len: f64) -> f64 {
        reserve(self.memory, len)
    }
    fn head(&self) -> f64 {
        head(self.memory)
    }
    fn write(&self, at: f64, from: f64, len: f64) {
        write(self.memory, at, self.bytes, from, len)
    }
    fn read(&self, at: f64, to: f64, len: f64) {
        read(self.memory, at, self.bytes, to, len)
    }
    fn digest(&self) -> [f64; 2] {
        let d = digest(self.bytes);
        [d.first().copied().unwrap_or(0.0), d.get(1).copied().unwrap_or(0.0)]
    }
}

/// Writes `bytes` into the ring of the shared memory this thread uses: their place, or `None`
/// when there is none or it could not take them.
pub fn keep(bytes: &Uint8Array) -> Option<Place> {
    let memory = shared_memory::current()?;
    fit(&memory, arena::size(WANT.with(Cell::get)));
    let hand = Hand {
        memory: &memory,
        bytes,
    };
    arena::keep(&hand, f64::from(bytes.length()))
}

/// The bytes at `place`, when they are the very ones written there.
pub fn take(place: &Place) -> Option<Uint8Array> {
    let memory = shared_memory::current()?;
    let bytes = Uint8Array::new_with_length(place.len as u32);
    let hand = Hand {
        memory: &memory,
        bytes: &bytes,
    };
    arena::take(&hand, place).then_some(bytes)
}

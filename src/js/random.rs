//! The core's [`Random`] from the operating system (getrandom, through `crypto.getRandomValues`).

use std::cell::Cell;

use crate::core::random::Random;

/// Fresh randomness for every draw: jitter must differ between processes started together.
pub struct OsRandom;

impl OsRandom {
    fn bits(&self) -> u64 {
        // Should the source ever fail, a value from Math.random() still de-synchronises.
        getrandom::u64().unwrap_or_else(|_| (js_sys::Math::random() * 2f64.powi(53)) as u64 * 2048)
    }
}

impl Random for OsRandom {
    fn unit(&mut self) -> f64 {
        (self.bits() >> 11) as f64 / (1u64 << 53) as f64
    }
}

thread_local! {
    /// The key of the credential fingerprints: random per process, so a fingerprint means
    /// nothing outside it. Drawn on first use (0 until then).
    static FINGERPRINT_KEY: Cell<u64> = const { Cell::new(0) };
}

/// This process's fingerprint key.
pub fn fingerprint_key() -> u64 {
    FINGERPRINT_KEY.with(|key| {
        if key.get() == 0 {
            key.set(OsRandom.bits() | 1);
        }
        key.get()
    })
}

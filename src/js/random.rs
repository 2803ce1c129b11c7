//! The core's [`Random`] from the operating system (getrandom, through `crypto.getRandomValues`).

use std::cell::Cell;

use crate::core::base::random::{process_id_of, unit_of, Random};

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
        unit_of(self.bits())
    }
}

thread_local! {
    /// The keys of the credential fingerprints: random per process, so a fingerprint means
    /// nothing outside it. Drawn on first use.
    static FINGERPRINT_KEYS: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
    /// This process's name for its admissions in a shared store.
    static PROCESS_ID: String = process_id_of(OsRandom.bits());
}

/// This process's two fingerprint keys (128 bits between them).
pub fn fingerprint_keys() -> (u64, u64) {
    FINGERPRINT_KEYS.with(|keys| {
        if keys.get().0 == 0 {
            keys.set((OsRandom.bits() | 1, OsRandom.bits() | 1));
        }
        keys.get()
    })
}

/// This process's id in a shared store: 16 random hex digits.
pub fn process_id() -> String {
    PROCESS_ID.with(Clone::clone)
}

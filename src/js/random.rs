//! The core's [`Random`] from the operating system (getrandom, through `crypto.getRandomValues`).

use crate::core::random::Random;

/// Fresh randomness for every draw: jitter must differ between processes started together.
pub struct OsRandom;

impl Random for OsRandom {
    fn unit(&mut self) -> f64 {
        // Should the source ever fail, a value from Math.random() still de-synchronises.
        let bits = getrandom::u64()
            .unwrap_or_else(|_| (js_sys::Math::random() * 2f64.powi(53)) as u64 * 2048);
        (bits >> 11) as f64 / (1u64 << 53) as f64
    }
}

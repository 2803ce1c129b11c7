//! Randomness through a small trait, so jitter is real in production (getrandom, in the
//! bindings) and reproducible in the simulator and the tests (a seeded generator).

/// A source of uniform numbers in `[0, 1)`.
pub trait Random {
    /// The next uniform number in `[0, 1)`.
    fn unit(&mut self) -> f64;
}

/// SplitMix64: tiny, fast, and good enough for jitter; seeded for repeatable runs.
#[derive(Debug, Clone)]
pub struct Seeded(u64);

impl Seeded {
    /// A generator that always yields the same sequence for the same seed.
    pub fn new(seed: u64) -> Self {
        Seeded(seed)
    }
}

impl Random for Seeded {
    fn unit(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        // The top 53 bits, as a fraction: exactly representable, never 1.0.
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_sequence() {
        let a: Vec<f64> = (0..5)
            .map({
                let mut r = Seeded::new(7);
                move |_| r.unit()
            })
            .collect();
        let b: Vec<f64> = (0..5)
            .map({
                let mut r = Seeded::new(7);
                move |_| r.unit()
            })
            .collect();
        assert_eq!(a, b);
    }

    #[test]
    fn stays_in_the_unit_interval_and_spreads_out() {
        let mut r = Seeded::new(1);
        let draws: Vec<f64> = (0..10_000).map(|_| r.unit()).collect();
        assert!(draws.iter().all(|&x| (0.0..1.0).contains(&x)));
        let low = draws.iter().filter(|&&x| x < 0.5).count();
        assert!((4_500..5_500).contains(&low), "{low} of 10000 below 0.5");
    }
}

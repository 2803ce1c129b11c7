//! Randomness through a small trait, so jitter is real in production (getrandom, in the
//! bindings) and reproducible in the simulator and the tests (a seeded generator).

/// A source of uniform numbers in `[0, 1)`.
pub trait Random {
    /// The next uniform number in `[0, 1)`.
    fn unit(&mut self) -> f64;
}

/// A uniform number in `[0, 1)` from 64 random bits: the top 53, as a fraction (exactly
/// representable, never 1.0).
pub(crate) fn unit_of(bits: u64) -> f64 {
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

/// A process's id in a shared store, from 64 random bits: 16 lower-case hex digits (by hand:
/// `{:016x}` brings padded integer formatting into the module).
pub fn process_id_of(bits: u64) -> String {
    (0..16)
        .rev()
        .map(|i| char::from(b"0123456789abcdef"[(bits >> (4 * i) & 15) as usize]))
        .collect()
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
        unit_of(z)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_make_a_unit_number_and_a_process_id() {
        assert_eq!(unit_of(0), 0.0);
        assert!(unit_of(u64::MAX) < 1.0);
        assert_eq!(unit_of(1 << 63), 0.5);
        assert_eq!(process_id_of(0xfe), "00000000000000fe");
        assert_eq!(process_id_of(u64::MAX), "ffffffffffffffff");
    }

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

//! Backoff when the server gave no `Retry-After`: full jitter, `uniform(0, min(cap, base *
//! 2^n))` for the n-th retry. Full jitter is what de-synchronises many clients retrying the
//! same failure; every path through here draws a fresh random number.

use crate::core::base::random::Random;
use crate::core::rules::allowance::{at_least, positive, ConfigError};
use crate::core::Millis;

/// Full-jitter exponential backoff.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize),
    serde(rename_all = "camelCase")
)]
pub struct Backoff {
    base_ms: Millis,
    cap_ms: Millis,
}

impl Backoff {
    /// The provider's guidance: about 2 s, doubling, up to about 60 s.
    pub(crate) const DEFAULT: Backoff = Backoff {
        base_ms: 2_000.0,
        cap_ms: 60_000.0,
    };

    /// Validates `base_ms > 0` and `cap_ms >= base_ms`.
    pub fn new(base_ms: Millis, cap_ms: Millis) -> Result<Backoff, ConfigError> {
        let base_ms = positive("retry.baseMs", base_ms)?;
        let cap_ms = at_least(
            "retry.capMs",
            cap_ms,
            base_ms,
            "a finite number >= retry.baseMs",
        )?;
        Ok(Backoff { base_ms, cap_ms })
    }

    /// The first retry's ceiling.
    pub fn base_ms(&self) -> Millis {
        self.base_ms
    }

    /// The largest ceiling.
    pub fn cap_ms(&self) -> Millis {
        self.cap_ms
    }

    /// The ceiling for retry number `n` (0 for the first retry).
    pub(crate) fn ceiling(&self, n: u32) -> Millis {
        (self.base_ms * 2f64.powi(n.min(64) as i32)).min(self.cap_ms)
    }

    /// A delay for retry number `n`, uniform in `[0, ceiling(n))`.
    pub(crate) fn delay(&self, n: u32, random: &mut dyn Random) -> Millis {
        random.unit() * self.ceiling(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::base::random::Seeded;

    #[test]
    fn the_ceiling_doubles_up_to_the_cap() {
        let b = Backoff::DEFAULT;
        let ceilings: Vec<Millis> = (0..7).map(|n| b.ceiling(n)).collect();
        assert_eq!(ceilings, [2e3, 4e3, 8e3, 16e3, 32e3, 60e3, 60e3]);
        assert_eq!(b.ceiling(1000), 60e3);
    }

    #[test]
    fn delays_are_fully_jittered_below_the_ceiling() {
        let b = Backoff::new(100.0, 1000.0).unwrap();
        let mut r = Seeded::new(3);
        let delays: Vec<Millis> = (0..1000).map(|_| b.delay(2, &mut r)).collect();
        assert!(delays.iter().all(|&d| (0.0..400.0).contains(&d)));
        assert!(delays.iter().any(|&d| d < 40.0), "some retries go early");
        assert!(delays.iter().any(|&d| d > 360.0), "some go late");
    }

    #[test]
    fn refuses_a_cap_below_the_base() {
        let err = Backoff::new(500.0, 100.0).unwrap_err();
        assert!(err.to_string().contains("retry.capMs"));
        assert!(Backoff::new(0.0, 100.0).is_err());
    }
}

//! The ranges of the options given as whole numbers, each defined once: a caller's number is
//! checked against them (`Whole::given`, its error worded as a JavaScript caller reads it),
//! and the core's own checks use the same bounds.

use super::allowance::ConfigError;

/// Whole numbers from `min` to `max`, both included.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Whole {
    /// The least accepted.
    pub min: f64,
    /// The most accepted.
    pub max: f64,
}

impl Whole {
    /// `n`, when it is a whole number in the range.
    pub(crate) fn holds(self, n: f64) -> Option<u32> {
        (n.fract() == 0.0 && n >= self.min && n <= self.max).then_some(n as u32)
    }

    /// `n` when it was given, checked: a whole number in the range, or an error naming `field`.
    // One copy for its dozen callers: inlined, each built the error again (1 KB of wasm).
    #[inline(never)]
    pub(crate) fn given(
        self,
        field: &'static str,
        n: Option<f64>,
    ) -> Result<Option<u32>, ConfigError> {
        let Some(got) = n else {
            return Ok(None);
        };
        let refused = ConfigError::NotWhole {
            field,
            min: self.min,
            max: self.max,
            got,
        };
        self.holds(got).map(Some).ok_or(refused)
    }

    /// The same range from 0.
    pub const fn from_zero(self) -> Whole {
        Whole {
            min: 0.0,
            max: self.max,
        }
    }
}

/// A count with no bound of its own but what a `u32` holds: `maxWaiting`, and a round's
/// `retryBudget` (`batch()`, `simulate()`).
pub(crate) const COUNT: Whole = Whole { min: 0.0, max: 1e9 };

/// Attempts per call, the first included (`retry.maxAttempts`).
pub(crate) const ATTEMPTS: Whole = Whole {
    min: 1.0,
    max: 100.0,
};

/// What `retry.statuses` may hold: HTTP status codes.
pub const STATUSES: Whole = Whole {
    min: 100.0,
    max: 599.0,
};

/// `simulate()`'s workers, snapshots each, event lookups, and each lane's workers and
/// snapshots; also its calls in all: a run small enough to finish in well under a second.
pub(crate) const SIM_CALLS: Whole = Whole {
    min: 1.0,
    max: 100_000.0,
};

/// `simulate()`'s attempts per worker (`maxAttempts`).
pub(crate) const SIM_ATTEMPTS: Whole = Whole {
    min: 1.0,
    max: 1_000.0,
};

/// The gates, processes or threads `simulate()` spreads its workers over.
pub(crate) const SIM_SPLIT: Whole = Whole {
    min: 1.0,
    max: 1_000.0,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_holds_whole_numbers_between_its_bounds_included() {
        assert_eq!(ATTEMPTS.holds(1.0), Some(1));
        assert_eq!(ATTEMPTS.holds(100.0), Some(100));
        for n in [0.0, 101.0, 1.5, -1.0, f64::NAN, f64::INFINITY] {
            assert_eq!(ATTEMPTS.holds(n), None, "{n}");
        }
        assert_eq!(SIM_CALLS.from_zero().holds(0.0), Some(0));
        assert_eq!(SIM_CALLS.holds(0.0), None);
        assert_eq!(COUNT.holds(1e9), Some(1_000_000_000));
    }

    #[test]
    fn a_number_given_out_of_range_is_refused_in_the_callers_words() {
        assert_eq!(ATTEMPTS.given("retry.maxAttempts", None), Ok(None));
        assert_eq!(ATTEMPTS.given("retry.maxAttempts", Some(3.0)), Ok(Some(3)));
        let refused = ATTEMPTS.given("retry.maxAttempts", Some(0.5)).unwrap_err();
        assert_eq!(
            refused.to_string(),
            "Expected `retry.maxAttempts` to be an integer from 1 to 100, got 0.5"
        );
        assert!(!refused.is_shape());
    }
}

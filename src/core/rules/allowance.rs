//! The allowance a gate enforces, validated once at the boundary so the rest of the core can
//! trust it.

use std::fmt;

/// The slowest refill a rate may have: one token per 2^53 ms.
pub const MIN_PER_SECOND: f64 = 1000.0 / 9_007_199_254_740_992.0;

/// A token-bucket allowance: `burst` requests at once, refilled at `per_second`.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize),
    serde(rename_all = "camelCase")
)]
pub struct Rate {
    burst: f64,
    per_second: f64,
}

/// What a wrapper says of its key's allowance.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Allowance {
    /// Enforced as given.
    Fixed(Rate),
    /// Learned from the responses; never above the ceiling, when one is given.
    Learned(Option<Rate>),
}

/// Why a configuration value was refused. Every variant names the field it is about.
#[derive(Debug, Clone, PartialEq)]
pub enum ConfigError {
    /// The value is not a finite number inside the field's range.
    OutOfRange {
        /// The option's name as the caller wrote it.
        field: &'static str,
        /// What would have been accepted.
        expected: &'static str,
        /// What was given.
        got: f64,
    },
    /// The option cannot go with another option the caller set.
    Unsupported {
        /// The option's name as the caller wrote it.
        field: &'static str,
        /// What it cannot go with, and why.
        with: &'static str,
    },
}

impl ConfigError {
    /// The message, with the offending number written by `number` (the bindings have
    /// JavaScript write it, as the caller would).
    pub fn message(&self, number: impl Fn(f64) -> String) -> String {
        self.message_in("", number)
    }

    /// The message, its field named within the object at `at` (`lanes[1].`).
    pub fn message_in(&self, at: &str, number: impl Fn(f64) -> String) -> String {
        let got;
        let parts = match self {
            ConfigError::OutOfRange {
                field,
                expected,
                got: value,
            } => {
                got = number(*value);
                ["`", at, field, "` must be ", expected, ", got ", &got]
            }
            ConfigError::Unsupported { field, with } => ["`", at, field, "` ", with, "", ""],
        };
        // Pushed, not `concat`ed: the bindings' one copy of `join` is for Strings.
        let mut message = String::new();
        for part in parts {
            message.push_str(part);
        }
        message
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message(|n| n.to_string()))
    }
}

impl std::error::Error for ConfigError {}

/// Accepts a finite number `>= min`; names `field` otherwise.
pub(crate) fn at_least(
    field: &'static str,
    value: f64,
    min: f64,
    expected: &'static str,
) -> Result<f64, ConfigError> {
    if value.is_finite() && value >= min {
        Ok(value)
    } else {
        Err(ConfigError::OutOfRange {
            field,
            expected,
            got: value,
        })
    }
}

/// Accepts a finite number `> 0`; names `field` otherwise.
pub fn positive(field: &'static str, value: f64) -> Result<f64, ConfigError> {
    if value.is_finite() && value > 0.0 {
        Ok(value)
    } else {
        Err(ConfigError::OutOfRange {
            field,
            expected: "a finite number greater than 0",
            got: value,
        })
    }
}

impl Rate {
    /// Validates an allowance. A burst below one could never admit anything, so it is refused
    /// along with zero, negative and non-finite values.
    pub fn new(burst: f64, per_second: f64) -> Result<Rate, ConfigError> {
        Rate::named(burst, per_second, ["rate.burst", "rate.perSecond"])
    }

    /// As [`Rate::new`], with the caller's names for the two fields in its errors.
    pub fn named(
        burst: f64,
        per_second: f64,
        fields: [&'static str; 2],
    ) -> Result<Rate, ConfigError> {
        let burst = at_least(fields[0], burst, 1.0, "a finite number >= 1")?;
        // A token per 2^53 ms at the slowest: a slower refill is a wait nothing can represent.
        let per_second = at_least(
            fields[1],
            per_second,
            MIN_PER_SECOND,
            "a finite number > 0 (at least 1.2e-13: one token per 2^53 ms)",
        )?;
        Ok(Rate { burst, per_second })
    }

    /// The article's allowance, burst 2 at 2 per second: the simulator's default.
    pub const ARTICLE: Rate = Rate {
        burst: 2.0,
        per_second: 2.0,
    };

    /// Tokens the bucket holds when full.
    pub fn burst(&self) -> f64 {
        self.burst
    }

    /// Tokens added per second.
    pub fn per_second(&self) -> f64 {
        self.per_second
    }

    /// Milliseconds it takes to refill one token.
    pub fn ms_per_token(&self) -> f64 {
        1000.0 / self.per_second
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_articles_allowance() {
        let rate = Rate::new(2.0, 2.0).unwrap();
        assert_eq!(rate.ms_per_token(), 500.0);
    }

    #[test]
    fn refuses_bad_values_and_names_the_field() {
        for (burst, per_second, field) in [
            (0.0, 2.0, "rate.burst"),
            (-1.0, 2.0, "rate.burst"),
            (f64::NAN, 2.0, "rate.burst"),
            (f64::INFINITY, 2.0, "rate.burst"),
            (0.5, 2.0, "rate.burst"),
            (2.0, 0.0, "rate.perSecond"),
            (2.0, -3.0, "rate.perSecond"),
            (2.0, f64::NAN, "rate.perSecond"),
            (2.0, f64::INFINITY, "rate.perSecond"),
            (2.0, 5e-324, "rate.perSecond"),
        ] {
            let err = Rate::new(burst, per_second).unwrap_err();
            assert!(err.to_string().contains(field), "{err} should name {field}");
        }
    }
}

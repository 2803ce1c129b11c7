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

/// `rate: { burst, perSecond, learn }` as given (`None`: left out).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RateGiven {
    /// The burst, required.
    pub burst: Option<f64>,
    /// The refill per second, required.
    pub per_second: Option<f64>,
    /// Whether the gate learns, never above the rate (left out: it does not).
    pub learn: Option<bool>,
}

impl RateGiven {
    /// The rate, checked, and whether it is learned.
    pub fn rate(self) -> Result<(Rate, bool), ConfigError> {
        let fields = ["rate.burst", "rate.perSecond"];
        let rate = Rate::given([self.burst, self.per_second], fields)?;
        Ok((rate, self.learn.unwrap_or(false)))
    }
}

impl Allowance {
    /// `rate` as given, with its `learn`: left out or `'auto'` (`None`) is learned from the
    /// answers; a rate is enforced as given, or with `learn: true` learned and never above it.
    pub fn given(rate: Option<(Rate, bool)>) -> Allowance {
        match rate {
            None => Allowance::Learned(None),
            Some((rate, true)) => Allowance::Learned(Some(rate)),
            Some((rate, false)) => Allowance::Fixed(rate),
        }
    }
}

/// Why a configuration value was refused. Every variant names the field it is about
/// ([`ConfigError::Shape`] in its own words).
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
    /// The value is not what the field takes, worded "Expected `field` to be ...".
    NotA {
        /// The option's name as the caller wrote it.
        field: &'static str,
        /// What would have been accepted.
        expected: &'static str,
        /// What was given.
        got: f64,
    },
    /// The value is not a whole number from `min` to `max`.
    NotWhole {
        /// The option's name as the caller wrote it.
        field: &'static str,
        /// The least accepted.
        min: f64,
        /// The most accepted.
        max: f64,
        /// What was given.
        got: f64,
    },
    /// A field that must be given was left out (a type error to the caller).
    Missing {
        /// The option's name as the caller wrote it.
        field: &'static str,
    },
    /// A value of a kind the field does not take, or options that cannot be given together,
    /// worded whole (a type error to the caller): what to give or leave out.
    Shape(&'static str),
    /// The error of an item of a list (`lanes[1].weight`).
    Item {
        /// The list's name.
        list: &'static str,
        /// The item's place in it, from 0.
        index: usize,
        /// What is wrong with the item.
        error: Box<ConfigError>,
    },
    /// The error of a field of the options given to a method (`lane.weight`).
    Within {
        /// The method's name.
        object: &'static str,
        /// What is wrong with the field.
        error: Box<ConfigError>,
    },
    /// A key of the map the field takes is not one it accepts (the key is quoted in the
    /// message: keys are names, never secrets).
    Key {
        /// The option's name as the caller wrote it.
        field: &'static str,
        /// The key as given.
        key: String,
        /// What a key is.
        expected: &'static str,
    },
    /// The option cannot go with another option the caller set.
    Unsupported {
        /// The option's name as the caller wrote it.
        field: &'static str,
        /// What it cannot go with, and why.
        with: &'static str,
    },
}

/// `key` in double quotes, cut to 80 characters (a key pasted by mistake may be long).
fn quoted(key: &str) -> String {
    let mut cut: String = key.chars().take(80).collect();
    if cut.len() < key.len() {
        cut.push('…');
    }
    format!("{cut:?}")
}

impl ConfigError {
    /// `error`, its field named within the options given to `object()` (`lane.weight`).
    pub fn within(object: &'static str, error: ConfigError) -> ConfigError {
        ConfigError::Within {
            object,
            error: Box::new(error),
        }
    }

    /// The message, with the offending number written by `number` (the bindings have
    /// JavaScript write it, as the caller would).
    pub fn message(&self, number: impl Fn(f64) -> String) -> String {
        self.message_in("", &number)
    }

    /// Whether the caller gave a wrong shape (a field missing, a value of the wrong kind,
    /// options that clash) rather than a value out of range: a `TypeError` in JavaScript, where the others are
    /// `RangeError`s.
    pub fn is_shape(&self) -> bool {
        match self {
            ConfigError::Missing { .. } | ConfigError::Shape(_) => true,
            ConfigError::Item { error, .. } | ConfigError::Within { error, .. } => error.is_shape(),
            _ => false,
        }
    }

    /// The message, its field named within the object at `at` (`lanes[1].`).
    fn message_in(&self, at: &str, number: &dyn Fn(f64) -> String) -> String {
        // Pushed, not `concat`ed: the bindings' one copy of `join` is for Strings.
        let mut message = String::new();
        let parts: &[&str] = match self {
            ConfigError::OutOfRange {
                field,
                expected,
                got,
            } => &[
                "`",
                at,
                field,
                "` must be ",
                expected,
                ", got ",
                &number(*got),
            ],
            ConfigError::NotA {
                field,
                expected,
                got,
            } => &[
                "Expected `",
                at,
                field,
                "` to be ",
                expected,
                ", got ",
                &number(*got),
            ],
            ConfigError::NotWhole {
                field,
                min,
                max,
                got,
            } => &[
                "Expected `",
                at,
                field,
                "` to be an integer from ",
                &number(*min),
                " to ",
                &number(*max),
                ", got ",
                &number(*got),
            ],
            ConfigError::Unsupported { field, with } => &["`", at, field, "` ", with],
            ConfigError::Key {
                field,
                key,
                expected,
            } => &[
                "`",
                at,
                field,
                "` takes ",
                expected,
                " as keys, got ",
                &quoted(key),
            ],
            ConfigError::Missing { field } => &["`", at, field, "` is required"],
            ConfigError::Shape(what) => &[what],
            ConfigError::Item { list, index, error } => {
                let within = format!("{at}{list}[{index}].");
                return error.message_in(&within, number);
            }
            ConfigError::Within { object, error } => {
                return error.message_in(&format!("{at}{object}."), number);
            }
        };
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

/// Accepts a finite number; names `field` otherwise.
pub fn finite(field: &'static str, value: f64) -> Result<f64, ConfigError> {
    match value.is_finite() {
        true => Ok(value),
        false => Err(ConfigError::NotA {
            field,
            expected: "a finite number",
            got: value,
        }),
    }
}

/// Accepts a finite number `> 0`; names `field` otherwise.
pub(crate) fn positive(field: &'static str, value: f64) -> Result<f64, ConfigError> {
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

    /// `{ burst, perSecond }` as given (`None`: left out), both required, named `fields`.
    pub(crate) fn given(
        [burst, per_second]: [Option<f64>; 2],
        fields: [&'static str; 2],
    ) -> Result<Rate, ConfigError> {
        let missing = |field| ConfigError::Missing { field };
        let burst = burst.ok_or(missing(fields[0]))?;
        let per_second = per_second.ok_or(missing(fields[1]))?;
        Rate::named(burst, per_second, fields)
    }

    /// As [`Rate::new`], with the caller's names for the two fields in its errors.
    pub(crate) fn named(
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
    fn a_rate_given_needs_burst_and_per_second_and_does_not_learn_unless_asked() {
        let given = RateGiven {
            burst: Some(2.0),
            per_second: Some(2.0),
            learn: None,
        };
        assert_eq!(given.rate(), Ok((Rate::ARTICLE, false)));
        let learning = RateGiven {
            learn: Some(true),
            ..given
        };
        assert_eq!(learning.rate(), Ok((Rate::ARTICLE, true)));
        let missing = RateGiven::default().rate().unwrap_err();
        assert_eq!(missing.to_string(), "`rate.burst` is required");
    }

    #[test]
    fn a_rate_given_is_enforced_unless_it_learns() {
        let r = Rate::ARTICLE;
        assert_eq!(Allowance::given(None), Allowance::Learned(None));
        assert_eq!(Allowance::given(Some((r, false))), Allowance::Fixed(r));
        assert_eq!(
            Allowance::given(Some((r, true))),
            Allowance::Learned(Some(r))
        );
    }

    #[test]
    fn a_number_that_is_not_finite_is_named() {
        assert_eq!(finite("now", -1.0), Ok(-1.0));
        let refused = finite("now", f64::NAN).unwrap_err();
        assert_eq!(
            refused.to_string(),
            "Expected `now` to be a finite number, got NaN"
        );
    }

    #[test]
    fn a_rate_given_needs_both_fields() {
        let fields = ["lookups.burst", "lookups.perSecond"];
        assert_eq!(
            Rate::given([Some(2.0), Some(2.0)], fields),
            Ok(Rate::ARTICLE)
        );
        let missing = Rate::given([Some(2.0), None], fields).unwrap_err();
        assert_eq!(missing.to_string(), "`lookups.perSecond` is required");
        assert!(missing.is_shape());
        let low = Rate::given([Some(0.5), None], fields).unwrap_err();
        assert_eq!(low.to_string(), "`lookups.perSecond` is required");
        let low = Rate::given([Some(0.5), Some(1.0)], fields).unwrap_err();
        assert!(!low.is_shape(), "{low}");
    }

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

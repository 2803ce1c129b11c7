//! The spread's settings: [`Spread`], and `quota: { .. }` as given ([`SpreadGiven`]), checked
//! into the settings and the [`Costs`] stated with them. What a config reads and validates,
//! apart from what the bucket does with it.

use super::costs::Costs;
use crate::core::rules::allowance::{at_least, positive, ConfigError};

/// The least `quota.refreshMs`: every reading is a `GET /usage`, and a reading a millisecond
/// (a typo, or a unit mistaken) would send a thousand a second while every spread call waits.
pub const MIN_REFRESH_MS: f64 = 1_000.0;

/// How long a call with no `maxWaitMs` of its own may wait for the spread's credit: a caller
/// (an SDK's, which cannot cancel) hears `credit-wait` at once rather than wait for hours, and
/// calls waiting stay a minute's worth. A background job's lane raises it with its `maxWaitMs`.
pub const CREDIT_WAIT_MS: f64 = 60_000.0;

/// The settings of the spread, read as `quota`.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize),
    serde(rename_all = "camelCase")
)]
pub struct Spread {
    /// The share of the limit kept for lanes with `reserve: true`, in [0, 1).
    pub reserve: f64,
    /// The most the bucket holds, as milliseconds of its refill.
    pub burst_ms: f64,
    /// How often `/usage` is read.
    pub refresh_ms: f64,
}

impl Default for Spread {
    fn default() -> Self {
        Spread::DEFAULT
    }
}

/// `quota: { spread, reserve, burstMs, refreshMs, costs }` as given (`None`: left out);
/// `costs` as read (`C`: the bindings first take it as it is, then read it with
/// [`costs`](Self::costs)).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SpreadGiven<C = Vec<(String, f64)>> {
    /// Pace the credits to the period's end.
    pub spread: Option<bool>,
    /// [`Spread::reserve`].
    pub reserve: Option<f64>,
    /// [`Spread::burst_ms`].
    pub burst_ms: Option<f64>,
    /// [`Spread::refresh_ms`].
    pub refresh_ms: Option<f64>,
    /// Route patterns and what a call of each costs.
    pub costs: C,
}

impl<C> SpreadGiven<C> {
    /// The same, its `costs` read by `read`.
    pub fn costs<D, E>(self, read: impl FnOnce(C) -> Result<D, E>) -> Result<SpreadGiven<D>, E> {
        Ok(SpreadGiven {
            spread: self.spread,
            reserve: self.reserve,
            burst_ms: self.burst_ms,
            refresh_ms: self.refresh_ms,
            costs: read(self.costs)?,
        })
    }
}

impl SpreadGiven {
    /// What was given, checked (see `Spread::given`).
    pub fn spread(self) -> Result<Option<(Spread, Costs)>, ConfigError> {
        let settings = [self.reserve, self.burst_ms, self.refresh_ms];
        Spread::given(self.spread, settings, self.costs)
    }
}

impl Spread {
    /// 5 % kept in reserve, an hour's refill at most, a reading every 15 minutes.
    pub const DEFAULT: Spread = Spread {
        reserve: 0.05,
        burst_ms: 3_600_000.0,
        refresh_ms: 900_000.0,
    };

    /// `quota: { spread, reserve, burstMs, refreshMs, costs }` as given (`None`: left out),
    /// the defaults filling in, every value checked: the spread and its costs when `spread` is
    /// true; nothing when it is false or left out (the quota is then guarded as before).
    pub(crate) fn given(
        spread: Option<bool>,
        [reserve, burst_ms, refresh_ms]: [Option<f64>; 3],
        costs: Vec<(String, f64)>,
    ) -> Result<Option<(Spread, Costs)>, ConfigError> {
        let d = Spread::DEFAULT;
        let settings = Spread {
            reserve: reserve.unwrap_or(d.reserve),
            burst_ms: burst_ms.unwrap_or(d.burst_ms),
            refresh_ms: refresh_ms.unwrap_or(d.refresh_ms),
        }
        .validate()?;
        let costs = Costs::new(costs)?;
        Ok(spread.unwrap_or(false).then_some((settings, costs)))
    }

    /// Checks `reserve` is in [0, 1), `burst_ms` is finite and above 0, and `refresh_ms` is
    /// finite and at least `MIN_REFRESH_MS` (a second).
    pub fn validate(self) -> Result<Self, ConfigError> {
        if !(self.reserve >= 0.0 && self.reserve < 1.0) {
            return Err(ConfigError::OutOfRange {
                field: "quota.reserve",
                expected: "a number from 0 up to (not including) 1",
                got: self.reserve,
            });
        }
        positive("quota.burstMs", self.burst_ms)?;
        at_least(
            "quota.refreshMs",
            self.refresh_ms,
            MIN_REFRESH_MS,
            "a finite number >= 1000 (GET /usage at most once a second)",
        )?;
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::rules::routes::MAX_ROUTES;

    #[test]
    fn refuses_settings_out_of_range_naming_the_option() {
        for (spread, field) in [
            (
                Spread {
                    reserve: 1.0,
                    ..Spread::DEFAULT
                },
                "quota.reserve",
            ),
            (
                Spread {
                    reserve: -0.1,
                    ..Spread::DEFAULT
                },
                "quota.reserve",
            ),
            (
                Spread {
                    reserve: f64::NAN,
                    ..Spread::DEFAULT
                },
                "quota.reserve",
            ),
            (
                Spread {
                    burst_ms: 0.0,
                    ..Spread::DEFAULT
                },
                "quota.burstMs",
            ),
            (
                Spread {
                    refresh_ms: f64::INFINITY,
                    ..Spread::DEFAULT
                },
                "quota.refreshMs",
            ),
        ] {
            let message = spread.validate().unwrap_err().to_string();
            assert!(
                message.starts_with(&format!("`{field}` must be")),
                "{message}"
            );
        }
        assert!(Spread {
            reserve: 0.0,
            ..Spread::DEFAULT
        }
        .validate()
        .is_ok());
        // A reading a millisecond is refused, saying why; one a second is the least taken.
        let every = |refresh_ms| Spread {
            refresh_ms,
            ..Spread::DEFAULT
        };
        let message = every(1.0).validate().unwrap_err().to_string();
        assert_eq!(
            message,
            "`quota.refreshMs` must be a finite number >= 1000 (GET /usage at most once a \
             second), got 1"
        );
        assert!(every(MIN_REFRESH_MS - 1.0).validate().is_err());
        assert!(every(MIN_REFRESH_MS).validate().is_ok());
        let costs = Costs::new(vec![("/events".into(), -1.0)]).unwrap_err();
        assert!(costs.to_string().contains("quota.costs"));
    }

    #[test]
    fn reads_the_options_with_their_defaults_and_checks_them_even_when_off() {
        let none = [None; 3];
        assert_eq!(Spread::given(None, none, vec![]), Ok(None));
        assert_eq!(Spread::given(Some(false), none, vec![]), Ok(None));
        let (spread, costs) = Spread::given(Some(true), none, vec![]).unwrap().unwrap();
        assert_eq!(spread, Spread::DEFAULT);
        assert_eq!(costs.cost("GET /v1/events"), 1.0);
        let given = [Some(0.0), Some(1000.0), Some(5000.0)];
        let route = ("GET /events/*/odds/history".to_owned(), 5.0);
        let (spread, costs) = Spread::given(Some(true), given, vec![route])
            .unwrap()
            .unwrap();
        assert_eq!(
            (spread.reserve, spread.burst_ms, spread.refresh_ms),
            (0.0, 1000.0, 5000.0)
        );
        assert_eq!(costs.cost("GET /v1/events/*/odds/history"), 5.0);
        let off_but_wrong = Spread::given(Some(false), [Some(2.0), None, None], vec![]);
        assert!(off_but_wrong
            .unwrap_err()
            .to_string()
            .contains("quota.reserve"));
        for pattern in ["", "/", "GET ", "G T /events", "/events /odds", "(GET) /x"] {
            let refused = Costs::new(vec![(pattern.into(), 1.0)])
                .unwrap_err()
                .to_string();
            assert!(
                refused.starts_with("`quota.costs` takes route patterns"),
                "{refused}"
            );
        }
        let many = (0..=MAX_ROUTES).map(|i| (format!("/r{i}"), 1.0)).collect();
        assert!(Costs::new(many)
            .unwrap_err()
            .to_string()
            .contains("at most 256"));
    }
}

//! What a wrapper asks of the gates it uses (its [`Profile`]), and what one of its calls
//! brings ([`Request`]): plain values, read by the bindings from `createFetch`'s options and
//! from each `fetch(input, init)`.

use std::cell::RefCell;
use std::rc::Rc;

use crate::core::rules::allowance::{at_least, positive, Allowance, ConfigError};
use crate::core::rules::batch::Batch;
use crate::core::rules::budget::RefillingConfig;
use crate::core::rules::classify::Body;
use crate::core::rules::credits::{Costs, Spread};
use crate::core::rules::policy::RetryPolicy;
use crate::core::rules::ranges::COUNT;
use crate::core::Millis;

/// A shared store's number among the gates' stores (see [`Gates::store`]).
///
/// [`Gates::store`]: super::Gates::store
pub(crate) type StoreId = usize;

/// `threads` where left out: a gate kept in memory is shared by the process's threads.
pub const THREADS: bool = true;

/// `typedErrors` where left out: off, so the caller gets the server's own answers.
pub const TYPED_ERRORS: bool = false;

/// Where a gate's state lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keeping {
    /// In this process: in memory every thread of the process shares (`threads: true`), or in
    /// the thread's own.
    Memory {
        /// Shared by the process's threads.
        threads: bool,
    },
    /// In a shared store other processes reach too.
    Store(StoreId),
}

/// What a wrapper asks of its gates.
#[derive(Debug, Clone)]
pub struct Profile {
    /// The key's allowance, or how it is learned.
    pub allowance: Allowance,
    /// The gates' shared retry budget as configured (`retry.budget`; `None` for none), which
    /// its lanes inherit: its calls draw on it only if it retries (see
    /// `budget_used`).
    pub budget: Option<RefillingConfig>,
    /// Where the gates' state lives.
    pub keeping: Keeping,
    /// The retry policy; `None` for observe-and-admit (`retry: false`).
    pub policy: Option<Rc<RetryPolicy>>,
    /// Refuse a call whose admission is predicted later than this.
    pub max_wait_ms: Option<Millis>,
    /// Refuse a call when this many already wait.
    pub max_waiting: Option<usize>,
    /// Someone measures each admission's wait (a metrics histogram).
    pub reports_wait: bool,
    /// Its calls end with typed errors (see [`CallSpec::typed_errors`]).
    ///
    /// [`CallSpec::typed_errors`]: crate::core::gate::call::CallSpec::typed_errors
    pub typed_errors: bool,
    /// The key's credits paced to its billing period (`quota.spread`), and what calls cost.
    pub spread: Option<(Spread, Costs)>,
}

/// What `lane(options)` asks for beside its wrapper's profile: its own retries and limits,
/// where it gives them.
#[derive(Debug, Clone, Default)]
pub struct LaneAsks {
    /// Its retries: `Some(None)` for `retry: false`.
    pub policy: Option<Option<Rc<RetryPolicy>>>,
    /// Its own `maxWaitMs`.
    pub max_wait_ms: Option<Millis>,
    /// Its own `maxWaiting`.
    pub max_waiting: Option<usize>,
    /// Its calls draw on the spread's reserve when the spread has no credit for them
    /// (`reserve: true`): the lane's, not the profile's (see `Lane::reserve`).
    pub reserve: bool,
}

impl LaneAsks {
    /// A lane's weight as given: 1 (the wrapper's own calls' share) where left out.
    pub fn weight(given: Option<f64>) -> Result<f64, ConfigError> {
        let weight = given.unwrap_or(1.0);
        positive("weight", weight).map_err(|_| ConfigError::NotA {
            field: "weight",
            expected: "a positive finite number",
            got: weight,
        })
    }

    /// A lane may give its own `retry`, but not a `budget` in it (`names_budget`): its
    /// retries draw on its wrapper's retry budget (see [`Profile::lane`]).
    pub fn own_retry(names_budget: bool) -> Result<(), ConfigError> {
        match names_budget {
            true => Err(ConfigError::Shape(
                "A lane's retries draw on its wrapper's retry budget: set `retry.budget` in \
                 createFetch, not in lane()",
            )),
            false => Ok(()),
        }
    }
}

/// `maxWaitMs` and `maxWaiting` as given (a wrapper's, or a lane's own), checked.
pub fn limits(
    max_wait_ms: Option<f64>,
    max_waiting: Option<f64>,
) -> Result<(Option<Millis>, Option<usize>), ConfigError> {
    let max_wait_ms = max_wait_ms
        .map(|ms| at_least("maxWaitMs", ms, 0.0, "a finite number >= 0"))
        .transpose()?;
    let max_waiting = COUNT.given("maxWaiting", max_waiting)?;
    Ok((max_wait_ms, max_waiting.map(|n| n as usize)))
}

impl Profile {
    /// Whether the wrapper learns its allowance (and so tells limiters apart by route).
    pub(crate) fn learns(&self) -> bool {
        matches!(self.allowance, Allowance::Learned(_))
    }

    /// Whether its calls' routes are read: to tell limiters apart, or to say what a call
    /// costs the spread.
    pub(crate) fn reads_routes(&self) -> bool {
        self.learns() || self.spread.is_some()
    }

    /// The retry budget the wrapper brings to its gates: none when it does not retry (it joins
    /// a gate that has one, and gives none a budget), whatever it was configured with.
    pub(crate) fn budget_used(&self) -> Option<RefillingConfig> {
        self.policy.as_ref().and(self.budget)
    }

    /// A lane of this wrapper (`lane(options)`), on the same gates: its own retries and limits
    /// where `asks` gives them, the wrapper's otherwise; the wrapper's allowance, store, typed
    /// errors and metrics; and the wrapper's retry budget, which its retries draw on (a lane
    /// cannot change it).
    pub fn lane(&self, asks: LaneAsks) -> Profile {
        Profile {
            policy: asks.policy.unwrap_or_else(|| self.policy.clone()),
            max_wait_ms: asks.max_wait_ms.or(self.max_wait_ms),
            max_waiting: asks.max_waiting.or(self.max_waiting),
            ..self.clone()
        }
    }
}

/// What one `fetch(input, init)` brings.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// `X-API-Key`, when sent.
    pub api_key: Option<&'a str>,
    /// `Authorization`, when sent.
    pub authorization: Option<&'a str>,
    /// An `Idempotency-Key` makes a non-idempotent method safe to replay.
    pub idempotency_key: bool,
    /// The method.
    pub method: &'a str,
    /// What kind of body it sends.
    pub body: Body,
    /// The URL: its route tells limiters apart and says what a call costs the spread (see
    /// `Profile::reads_routes`); it also tells account calls (`GET /usage`) from others.
    pub url: &'a str,
    /// The refresh round it belongs to.
    pub batch: Option<Rc<RefCell<Batch>>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lanes_weight_is_one_where_left_out_and_positive_where_given() {
        assert_eq!(LaneAsks::weight(None), Ok(1.0));
        assert_eq!(LaneAsks::weight(Some(3.0)), Ok(3.0));
        let refused = LaneAsks::weight(Some(f64::INFINITY)).unwrap_err();
        let expected = "Expected `weight` to be a positive finite number, got inf";
        assert_eq!(refused.to_string(), expected);
        // As lane() says it: the field within the options it was given.
        let within = ConfigError::within("lane", refused);
        let expected = "Expected `lane.weight` to be a positive finite number, got inf";
        assert_eq!(within.to_string(), expected);
        assert!(!within.is_shape(), "a RangeError");
    }

    #[test]
    fn limits_are_checked_where_given() {
        assert_eq!(limits(None, None), Ok((None, None)));
        assert_eq!(limits(Some(0.0), Some(3.0)), Ok((Some(0.0), Some(3))));
        let waiting = limits(None, Some(1.5)).unwrap_err().to_string();
        let expected = "Expected `maxWaiting` to be an integer from 0 to 1000000000, got 1.5";
        assert_eq!(waiting, expected);
        assert!(limits(Some(-1.0), None).is_err());
    }

    fn retrying() -> Profile {
        Profile {
            allowance: Allowance::Learned(None),
            budget: Some(RefillingConfig::DEFAULT),
            keeping: Keeping::Store(3),
            policy: Some(Rc::new(RetryPolicy::default())),
            max_wait_ms: Some(5_000.0),
            max_waiting: Some(10),
            reports_wait: true,
            typed_errors: true,
            spread: None,
        }
    }

    #[test]
    fn lanes_inherit_the_spread() {
        let mut profile = retrying();
        profile.spread = Some((Spread::DEFAULT, Costs::default()));
        assert!(profile.lane(LaneAsks::default()).spread.is_some());
    }

    #[test]
    fn a_wrapper_that_does_not_retry_uses_no_budget() {
        let mut profile = retrying();
        assert_eq!(profile.budget_used(), Some(RefillingConfig::DEFAULT));
        profile.policy = None;
        assert_eq!(profile.budget_used(), None);
    }

    #[test]
    fn a_lane_keeps_its_wrappers_gates_and_takes_its_own_retries_and_limits_where_given() {
        let wrapper = retrying();
        let same = wrapper.lane(LaneAsks::default());
        assert_eq!(same.policy, wrapper.policy);
        assert_eq!(
            (same.max_wait_ms, same.max_waiting),
            (Some(5_000.0), Some(10))
        );
        let once = Rc::new(RetryPolicy {
            max_attempts: 1,
            ..RetryPolicy::default()
        });
        let own = wrapper.lane(LaneAsks {
            policy: Some(Some(once.clone())),
            max_wait_ms: Some(100.0),
            max_waiting: Some(0),
            reserve: true,
        });
        assert_eq!(own.policy, Some(once));
        assert_eq!((own.max_wait_ms, own.max_waiting), (Some(100.0), Some(0)));
        for lane in [&same, &own] {
            assert_eq!(lane.allowance, wrapper.allowance);
            assert_eq!(lane.keeping, wrapper.keeping);
            assert_eq!(lane.budget_used(), wrapper.budget);
            assert!(lane.typed_errors && lane.reports_wait);
        }
    }

    #[test]
    fn a_lane_that_does_not_retry_uses_no_budget_and_its_own_retrying_lane_the_wrappers() {
        let quiet = retrying().lane(LaneAsks {
            policy: Some(None),
            ..LaneAsks::default()
        });
        assert_eq!(quiet.budget_used(), None);
        let again = quiet.lane(LaneAsks {
            policy: Some(Some(Rc::new(RetryPolicy::default()))),
            ..LaneAsks::default()
        });
        assert_eq!(again.budget_used(), Some(RefillingConfig::DEFAULT));
    }
}

//! Retry budgets: how much extra work failures may cause across many calls. A per-call attempt
//! cap stops one call from retrying forever; a budget stops a thousand calls from each retrying
//! a little during an outage and multiplying the load.
//!
//! Two shapes. [`BatchBudget`] is the article's: a fixed allowance of retries for one round of
//! work, never replenished. `RefillingBudget` is for a long-running service, after AWS SDK
//! "standard" retry mode: a budget of 500 tokens; a throttling retry costs 5, a transient one
//! (5xx, network, timeout) 10; a call that succeeds after retrying refunds what its last retry
//! cost, and a call that succeeds first time adds 1. A healthy service refills the budget; a
//! sustained outage drains it and retries stop until successes return.

use crate::core::rules::allowance::{at_least, ConfigError};
use crate::core::rules::classify::Kind;

/// A fixed number of retries for one batch.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchBudget {
    left: u32,
}

impl BatchBudget {
    /// `retries` retries in all.
    pub fn new(retries: u32) -> Self {
        BatchBudget { left: retries }
    }

    /// Retries still allowed.
    pub fn left(&self) -> u32 {
        self.left
    }

    /// Whether a retry may go now (nothing is spent).
    pub(crate) fn can_withdraw(&self) -> bool {
        self.left > 0
    }

    /// Spends one retry.
    pub(crate) fn withdraw(&mut self) {
        self.left = self.left.saturating_sub(1);
    }

    /// Gives back a retry that another budget refused.
    pub(crate) fn refund(&mut self) {
        self.left += 1;
    }
}

/// The settings of a `RefillingBudget`. Read as `retry.budget`, a field left out is
/// [`RefillingConfig::DEFAULT`]'s.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize),
    serde(rename_all = "camelCase")
)]
pub struct RefillingConfig {
    /// Tokens when full (AWS: 500).
    pub capacity: f64,
    /// Cost of retrying a 429 (here: 5).
    pub throttle_cost: f64,
    /// Cost of retrying a 5xx, network failure or timeout (here: 10).
    pub transient_cost: f64,
    /// Added by a call that succeeds on its first attempt (AWS: 1).
    pub success_refill: f64,
}

impl Default for RefillingConfig {
    fn default() -> Self {
        RefillingConfig::DEFAULT
    }
}

impl RefillingConfig {
    /// The AWS-standard-mode numbers.
    pub const DEFAULT: RefillingConfig = RefillingConfig {
        capacity: 500.0,
        throttle_cost: 5.0,
        transient_cost: 10.0,
        success_refill: 1.0,
    };

    /// `retry.budget: { capacity, throttleCost, transientCost, successRefill }` as given, a
    /// field left out (`None`) [`RefillingConfig::DEFAULT`]'s; [`validate`](Self::validate)
    /// checks them.
    pub fn given(fields: [Option<f64>; 4]) -> RefillingConfig {
        let d = RefillingConfig::DEFAULT;
        let [capacity, throttle_cost, transient_cost, success_refill] = fields;
        RefillingConfig {
            capacity: capacity.unwrap_or(d.capacity),
            throttle_cost: throttle_cost.unwrap_or(d.throttle_cost),
            transient_cost: transient_cost.unwrap_or(d.transient_cost),
            success_refill: success_refill.unwrap_or(d.success_refill),
        }
    }

    /// What a retry of this kind costs.
    pub(crate) fn cost(&self, kind: Kind) -> f64 {
        match kind {
            Kind::Throttle => self.throttle_cost,
            Kind::Transient => self.transient_cost,
        }
    }

    /// Checks every field is a finite number >= 0 (capacity > 0).
    pub fn validate(self) -> Result<Self, ConfigError> {
        at_least(
            "retry.budget.capacity",
            self.capacity,
            1.0,
            "a finite number >= 1",
        )?;
        for (field, value) in [
            ("retry.budget.throttleCost", self.throttle_cost),
            ("retry.budget.transientCost", self.transient_cost),
            ("retry.budget.successRefill", self.success_refill),
        ] {
            at_least(field, value, 0.0, "a finite number >= 0")?;
        }
        Ok(self)
    }
}

/// A budget of retry tokens that successes refill.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RefillingBudget {
    config: RefillingConfig,
    available: f64,
}

impl RefillingBudget {
    /// A full budget.
    pub(crate) fn new(config: RefillingConfig) -> Self {
        RefillingBudget {
            config,
            available: config.capacity,
        }
    }

    /// A budget holding `available` tokens (as a shared slot saved it).
    pub(crate) fn holding(config: RefillingConfig, available: f64) -> Self {
        RefillingBudget { config, available }
    }

    /// The settings.
    pub(crate) fn config(&self) -> RefillingConfig {
        self.config
    }

    /// Tokens in the budget.
    pub(crate) fn available(&self) -> f64 {
        self.available
    }

    /// Credits `amount` (a success's refund), up to the capacity.
    pub(crate) fn credit(&mut self, amount: f64) {
        self.available = (self.available + amount).min(self.config.capacity);
    }

    /// Spends `cost` if the budget has it; false (and nothing spent) otherwise.
    pub(crate) fn spend(&mut self, cost: f64) -> bool {
        if self.available < cost {
            return false;
        }
        self.available -= cost;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_allowance_is_never_replenished() {
        let mut b = BatchBudget::new(2);
        assert!(b.can_withdraw());
        b.withdraw();
        b.withdraw();
        assert!(!b.can_withdraw());
        b.withdraw();
        assert_eq!(b.left(), 0);
    }

    #[test]
    fn a_budget_field_left_out_is_the_defaults() {
        let given = RefillingConfig::given([Some(5.0), None, Some(0.0), None]);
        let d = RefillingConfig::DEFAULT;
        let expected = RefillingConfig {
            capacity: 5.0,
            transient_cost: 0.0,
            ..d
        };
        assert_eq!(given, expected);
        assert_eq!(RefillingConfig::given([None; 4]), d);
    }

    #[test]
    fn an_outage_drains_the_pool_and_stops_retries() {
        let config = RefillingConfig::DEFAULT;
        let mut b = RefillingBudget::new(config);
        let mut retries = 0;
        while b.spend(config.cost(Kind::Transient)) {
            retries += 1;
        }
        assert_eq!(retries, 50);
        // Throttling retries are cheaper, but the budget is empty for them too.
        assert!(!b.spend(config.cost(Kind::Throttle)));
        assert_eq!(b.available(), 0.0, "a refused spend spends nothing");
    }

    #[test]
    fn successes_refill_the_pool_up_to_capacity() {
        let mut b = RefillingBudget::new(RefillingConfig::DEFAULT);
        assert!(b.spend(5.0));
        assert_eq!(b.available(), 495.0);
        b.credit(5.0);
        assert_eq!(b.available(), 500.0);
        b.credit(1.0);
        assert_eq!(b.available(), 500.0, "never above capacity");
    }

    #[test]
    fn refuses_nonsense_settings() {
        let mut c = RefillingConfig::DEFAULT;
        c.transient_cost = -1.0;
        assert!(c
            .validate()
            .unwrap_err()
            .to_string()
            .contains("transientCost"));
        c = RefillingConfig::DEFAULT;
        c.capacity = f64::NAN;
        assert!(c.validate().is_err());
    }
}

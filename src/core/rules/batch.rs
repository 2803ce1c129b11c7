//! One refresh round (`fetchImpl.batch`): a deadline by which every call in it must be admitted,
//! and optionally a fixed allowance of retries for the whole round (the article's, never
//! replenished).

use crate::core::rules::allowance::{positive, ConfigError};
use crate::core::rules::budget::BatchBudget;
use crate::core::rules::ranges::COUNT;
use crate::core::Millis;

/// `batch({ deadlineMs, retryBudget })` as given (`None`: left out).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BatchGiven {
    /// The round's length, required.
    pub deadline_ms: Option<f64>,
    /// Its retries in all, if it has an allowance.
    pub retry_budget: Option<f64>,
}

impl BatchGiven {
    /// The round, made at `now`, each field checked.
    pub fn batch(self, now: Millis) -> Result<Batch, ConfigError> {
        let missing = ConfigError::Missing {
            field: "deadlineMs",
        };
        let deadline_ms = positive("deadlineMs", self.deadline_ms.ok_or(missing)?)?;
        let retries = COUNT.given("retryBudget", self.retry_budget)?;
        Ok(Batch::new(now, deadline_ms, retries))
    }
}

/// A round shared by its calls, whichever gates they use.
#[derive(Debug, Clone, PartialEq)]
pub struct Batch {
    /// No call in the round is admitted after this time.
    pub deadline: Millis,
    /// Retries left for the whole round, when it has an allowance.
    pub budget: Option<BatchBudget>,
}

impl Batch {
    /// A round made at `now` that lasts `deadline_ms`, with `retries` retries in all if given.
    pub fn new(now: Millis, deadline_ms: Millis, retries: Option<u32>) -> Batch {
        Batch {
            deadline: now + deadline_ms,
            budget: retries.map(BatchBudget::new),
        }
    }

    /// Time left in the round at `now` (0 once it is over).
    pub fn remaining_ms(&self, now: Millis) -> Millis {
        (self.deadline - now).max(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_given_needs_its_deadline() {
        let given = BatchGiven {
            deadline_ms: Some(1000.0),
            retry_budget: Some(2.0),
        };
        let round = given.batch(500.0).unwrap();
        assert_eq!((round.deadline, round.budget.is_some()), (1500.0, true));
        let missing = BatchGiven::default().batch(0.0).unwrap_err();
        assert_eq!(missing.to_string(), "`deadlineMs` is required");
        assert!(missing.is_shape());
    }
}

//! One refresh round (`fetchImpl.batch`): a deadline by which every call in it must be admitted,
//! and optionally a fixed allowance of retries for the whole round (the article's, never
//! replenished).

use crate::core::rules::budget::BatchBudget;
use crate::core::Millis;

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

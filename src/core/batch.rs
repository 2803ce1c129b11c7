//! One refresh round (`fetchImpl.batch`): a deadline by which every call in it must be admitted,
//! and optionally a fixed allowance of retries for the whole round (the article's, never
//! replenished).

use super::budget::BatchBudget;
use super::Millis;

/// A round shared by its calls, whichever gates they use.
#[derive(Debug, Clone, PartialEq)]
pub struct Batch {
    /// No call in the round is admitted after this time.
    pub deadline: Millis,
    /// Retries left for the whole round, when it has an allowance.
    pub budget: Option<BatchBudget>,
}

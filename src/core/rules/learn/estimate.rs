//! What was learned so far, as `describe()`, `stats()` and the change event show it
//! ([`Estimate`]), and when a new estimate is news.

use crate::core::Millis;

/// What was learned, for `describe()`, `stats()` and the change event.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// The bucket's capacity, once a response gave it.
    pub burst: Option<f64>,
    /// The pace admissions follow now, per second.
    pub per_second: f64,
    /// The best lower bound on the server's refill rate, per second (0: none yet).
    pub at_least: f64,
    /// How much of the pace the evidence backs: the bound over the pace, at most 1.
    pub confidence: f64,
    /// When the last 429 came (on the gate's clock).
    pub last_throttle: Option<Millis>,
}

impl Estimate {
    /// Whether `self` is news next to `before`: a capacity learned or changed, a throttle, or
    /// the pace moved by a tenth or more.
    pub(crate) fn differs(&self, before: &Estimate) -> bool {
        self.burst != before.burst
            || self.last_throttle != before.last_throttle
            || (self.per_second - before.per_second).abs() >= 0.1 * before.per_second
    }
}

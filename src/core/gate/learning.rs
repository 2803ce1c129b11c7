//! A gate that learns its allowance from the answers (see [`Learner`]): what it was told,
//! what it learned, and what a fleet tells it.

use super::Gate;
use crate::core::rules::allowance::{Allowance, Rate};
use crate::core::rules::learn::{Estimate, Learner};
use crate::core::Millis;

impl Gate {
    /// Makes the gate learn its allowance from the responses (below `ceiling`, when one was
    /// configured), starting at `now` with one request in flight at a time.
    ///
    /// A gate that joins memory where another thread has learned already goes on from there.
    pub fn learning(mut self, ceiling: Option<Rate>, now: Millis) -> Gate {
        let mut learner = Learner::new(ceiling);
        let start = learner.rate(now);
        if self.threads && self.rate != start {
            learner.adopt(self.rate);
        } else {
            self.rate = start;
            self.keeper.follow(now, start, None);
        }
        self.learner = Some(learner);
        self
    }

    /// A learning gate that has heard no answer yet starts at `now` from `rate`, what the
    /// fleet learned (never above its ceiling).
    pub fn adopt_estimate(&mut self, now: Millis, rate: Rate) {
        let Some(learner) = self.learner.as_mut().filter(|l| l.opening()) else {
            return;
        };
        learner.adopt(rate);
        self.rate = learner.rate(now);
        self.keeper.follow(now, self.rate, None);
    }

    /// A learning gate's answers come from limiter `limiter`, as the fleet says, unless
    /// it heard of another already.
    pub fn assume_limiter(&mut self, limiter: &str) {
        if let Some(learner) = &mut self.learner {
            learner.owns(Some(limiter));
        }
    }

    /// The limiter a learning gate's answers came from, once one named it.
    pub fn limiter(&self) -> Option<&str> {
        self.learner.as_ref().and_then(Learner::limiter)
    }

    /// What the gate was told of the allowance.
    pub fn allowance(&self) -> Allowance {
        match &self.learner {
            Some(learner) => Allowance::Learned(learner.ceiling()),
            None => Allowance::Fixed(self.rate),
        }
    }

    /// What the gate has learned of its allowance, if it learns.
    pub fn learned(&self, now: Millis) -> Option<Estimate> {
        self.learner.as_ref().map(|l| l.estimate(now))
    }

    /// Whether the limiters this gate's answers come from are worth scouting for: none
    /// answered yet, or one named its limiter (answers that never name one all come from the
    /// same place, and a route's first call need not go ahead to learn that).
    pub fn names_limiters(&self) -> bool {
        self.learner
            .as_ref()
            .is_some_and(|l| l.opening() || l.limiter().is_some())
    }

    /// Whether admissions wait for a learning gate's first response.
    pub(super) fn awaiting_first_answer(&self) -> bool {
        self.sending > 0 && self.learner.as_ref().is_some_and(Learner::opening)
    }
}

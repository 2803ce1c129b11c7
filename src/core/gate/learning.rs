//! A gate that learns its allowance from the answers (see [`Learner`]): what it was told,
//! what it learned, and what a fleet tells it.

use super::action::{Event, GateAction};
use super::Gate;
use crate::core::rules::allowance::{Allowance, Rate};
use crate::core::rules::learn::memo::Memo;
use crate::core::rules::learn::{Estimate, Learner, Sample};
use crate::core::Millis;

impl Gate {
    /// Makes the gate learn its allowance from the responses (below `ceiling`, when one was
    /// configured), starting at `now` with one request in flight at a time.
    ///
    /// A gate that joins memory where another thread has learned already goes on from there.
    pub fn learning(mut self, ceiling: Option<Rate>, now: Millis) -> Gate {
        let mut learner = Learner::new(ceiling);
        if self.threads && self.rate != learner.rate(now) {
            learner.adopt(self.rate);
        }
        let rate = learner.rate(now);
        if rate != self.rate {
            self.rate = rate;
            self.authority.tune(now, rate, None);
        }
        self.learner = Some(Box::new(learner));
        self
    }

    /// A learning gate made at `now` in a store waits for what the fleet learned before its
    /// first admission, for at most the store's time limit: asked at the opening's pace, that
    /// admission would set the store's pace to it, and every process of the key would wait for
    /// the opening's slow token.
    pub(crate) fn recall(&mut self, now: Millis) {
        if let Some(link) = self.authority.link() {
            self.recalling_until = now + link.settings().timeout_ms;
        }
    }

    /// What the fleet learned came (or the store did not answer): admissions may go.
    pub(crate) fn recalled(&mut self) {
        self.recalling_until = f64::NEG_INFINITY;
    }

    /// Whether the gate waits for what the fleet learned (see [`recall`](Self::recall)).
    pub(super) fn recalling(&self, now: Millis) -> bool {
        now < self.recalling_until
    }

    /// A learning gate that has heard no answer yet starts at `now` from `rate`, what the
    /// fleet learned (never above its ceiling).
    pub fn adopt_estimate(&mut self, now: Millis, rate: Rate) {
        let Some(learner) = self.learner.as_mut().filter(|l| l.opening()) else {
            return;
        };
        learner.adopt(rate);
        self.rate = learner.rate(now);
        self.authority.tune(now, self.rate, None);
    }

    /// What to keep of a learning gate's estimate once it is forgotten (see [`Memo`]).
    pub(crate) fn memo(&self) -> Option<Memo> {
        self.learner.as_deref().and_then(Learner::memo)
    }

    /// A learning gate that has heard no answer yet goes on at `now` from `memo`, what its
    /// credential's forgotten gate had learned.
    pub(crate) fn resume_learning(&mut self, now: Millis, memo: &Memo) {
        let Some(learner) = self.learner.as_mut().filter(|l| l.opening()) else {
            return;
        };
        learner.resume(now, memo);
        self.rate = learner.rate(now);
        self.authority.tune(now, self.rate, None);
    }

    /// A learning gate that has heard no answer yet learns at `now` from `answer`, to a request
    /// another gate admitted: the route's scout, whose answer named this gate's limiter.
    pub(crate) fn hear(&mut self, now: Millis, answer: &Sample) {
        let Some(learner) = &mut self.learner else {
            return;
        };
        let Some(rate) = learner.hear(now, answer) else {
            return;
        };
        let news = learner.news(now);
        self.rate = rate;
        self.authority.tune(now, rate, None);
        if let Some(estimate) = news {
            self.actions
                .push_back(GateAction::Event(Event::Learned(estimate)));
        }
    }

    /// A learning gate that shares its allowance (with threads, or through a store) goes on at
    /// `now` from the estimate another thread or process set since this one last did: they
    /// follow one estimate, each adding what its own answers teach.
    pub(super) fn follow_shared(&mut self, now: Millis) {
        let Some(learner) = &mut self.learner else {
            return;
        };
        let Some(shared) = self.authority.shared_rate() else {
            return;
        };
        // The store writes the rate as 17 digits of milliseconds per token.
        let mine = self.rate;
        let close = (shared.per_second() - mine.per_second()).abs() <= 1e-9 * mine.per_second();
        if shared.burst() == mine.burst() && close {
            return;
        }
        learner.follow(shared);
        let rate = learner.rate(now);
        if rate != self.rate {
            self.rate = rate;
            self.authority.tune(now, rate, None);
        }
    }

    /// A learning gate's answers come from limiter `limiter`, as the fleet says, unless
    /// it heard of another already.
    pub(crate) fn assume_limiter(&mut self, limiter: &str) {
        if let Some(learner) = &mut self.learner {
            learner.owns(Some(limiter));
        }
    }

    /// The limiter a learning gate's answers came from, once one named it.
    pub fn limiter(&self) -> Option<&str> {
        self.learner.as_deref().and_then(Learner::limiter)
    }

    /// What the gate was told of the allowance.
    pub(crate) fn allowance(&self) -> Allowance {
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
    pub(crate) fn names_limiters(&self) -> bool {
        self.learner
            .as_ref()
            .is_some_and(|l| l.opening() || l.limiter().is_some())
    }

    /// Whether a learning gate has as many requests in flight as it may (one until the first
    /// answer; without counts, a window that grows with each answer until the first 429).
    pub(super) fn window_full(&self) -> bool {
        let window = self.learner.as_deref().and_then(Learner::window);
        window.is_some_and(|w| self.busy.sending as f64 >= w)
    }
}

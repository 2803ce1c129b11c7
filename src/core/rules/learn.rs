//! Learning a key's allowance from the API itself, for a gate nobody told the allowance.
//!
//! What the responses can say, and what each is worth:
//! - `X-RateLimit-Limit` is the bucket's capacity: it becomes the burst.
//! - `X-RateLimit-Remaining` after a known number of our own successes bounds the refill rate
//!   from below, always: between two responses `i` and `j`, the server's tokens went from at
//!   most `remaining_i + 1` to at least `remaining_j` while `c` of our requests took one each,
//!   so `rate >= (remaining_j - remaining_i - 1 + c) / dt`. A full bucket in between (refill
//!   lost) or someone else spending the key only make the true rate higher. The best bound
//!   over a few dozen recent windows is the estimate; it tightens as windows lengthen. When a
//!   backlogged gate finds the server's bucket full again before any 429, it was waiting too
//!   long: the pace doubles (to twice the bound at most) rather than wait for the bound.
//! - The remaining count also says how many tokens are there now: the gate's bucket is set to
//!   it, less the requests sent after the one that reported it. Pacing below the true rate so
//!   costs little: what the server refilled meanwhile is spent as soon as a response says so.
//! - A 429 with neither header: the server's bucket was empty then. The successes between two
//!   429s bound the rate from below the same way (`(c - 1) / dt`). Pacing starts at one per
//!   second and doubles each second until the first 429 (slow start), which halves it; from
//!   then on each 429 cuts it to [`BETA`] (CUBIC's factor) and each success raises it a step
//!   (1%, halved by each 429 down to 0.4%), never below the bound. Bursts are not learned
//!   without the limit: the gate paces one at a time.
//!
//! Before any response, one request is in flight at a time: the first answer says which of
//! the two the API speaks. A configured allowance stays a ceiling: learning only goes below.

use std::collections::VecDeque;

use crate::core::rules::allowance::{Rate, MIN_PER_SECOND};
use crate::core::rules::bucket::Count;
use crate::core::Millis;

/// What a 429 leaves of the pace without the counts (with them, of a pace above the bound):
/// a multiplicative decrease, as in CUBIC.
pub const BETA: f64 = 0.7;
/// The slowest pace learning goes down to, per second (AWS's minimum fill rate).
pub const MIN_PACE: f64 = 0.5;
/// Slow start's first pace, per second.
const START_PACE: f64 = 1.0;
/// The pace used while one request at a time is in flight (the count limits it there).
const OPEN_PACE: f64 = 1_000.0;
/// Recent observations kept to bound the rate from (the windows' starts).
const MARKS: usize = 32;
/// Without the counts, each success raises the pace by a step: this much after slow start,
/// halved by each 429 down to [`MIN_STEP`]. A 429 costs [`BETA`]'s cut, so at the smallest step
/// about one attempt in `ln(1 / BETA) / MIN_STEP` (some 90) is a 429 once the pace has settled.
const FIRST_STEP: f64 = 0.01;
const MIN_STEP: f64 = 0.004;

/// Which kind of feedback the API gives this key.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    /// No response yet: one request in flight at a time.
    Opening,
    /// Responses carry `X-RateLimit-Limit` and `-Remaining`.
    Counted,
    /// Only 429s speak; doubling until the first one (`since`: when this pace started).
    SlowStart { since: Millis },
    /// Only 429s speak; each success raises the pace by `step`, each 429 cuts it.
    Probing { step: f64 },
}

/// One response to bound the rate from: when, what was left, our successes up to it.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Mark {
    at: Millis,
    remaining: f64,
    successes: u64,
}

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
    pub fn differs(&self, before: &Estimate) -> bool {
        self.burst != before.burst
            || self.last_throttle != before.last_throttle
            || (self.per_second - before.per_second).abs() >= 0.1 * before.per_second
    }
}

/// What a response taught: set the bucket's allowance (and its count, when the server said).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Lesson {
    /// The allowance admissions follow from now.
    pub rate: Rate,
    /// Tokens the server holds for us now, when a remaining count said so (at most that
    /// many under a ceiling: learning never spends faster than the ceiling allows).
    pub tokens: Option<Count>,
}

/// One gate's learning.
#[derive(Debug, Clone)]
pub struct Learner {
    ceiling: Option<Rate>,
    phase: Phase,
    burst: Option<f64>,
    pace: f64,
    at_least: f64,
    successes: u64,
    marks: VecDeque<Mark>,
    last_throttle: Option<Millis>,
    /// The limiter whose answers these are (`X-RateLimit-Bucket`), once one named it.
    limiter: Option<String>,
}

impl Learner {
    /// Learning from nothing, below `ceiling` if one was configured.
    pub fn new(ceiling: Option<Rate>) -> Learner {
        Learner {
            ceiling,
            phase: Phase::Opening,
            burst: None,
            pace: OPEN_PACE,
            at_least: 0.0,
            successes: 0,
            marks: VecDeque::new(),
            last_throttle: None,
            limiter: None,
        }
    }

    /// The limiter this gate's answers came from, once one named it.
    pub fn limiter(&self) -> Option<&str> {
        self.limiter.as_deref()
    }

    /// Whether an answer from limiter `named` is this gate's to learn from: the first
    /// limiter named is the gate's; an answer from another belongs to that limiter's gate.
    pub fn owns(&mut self, named: Option<&str>) -> bool {
        match (named, &self.limiter) {
            (None, _) => true,
            (Some(name), None) => {
                self.limiter = Some(name.to_owned());
                true
            }
            (Some(name), Some(mine)) => name == mine,
        }
    }

    /// Learning that goes on from `rate`, what another thread sharing the gate has learned.
    pub fn adopt(&mut self, rate: Rate) {
        self.phase = Phase::Probing { step: MIN_STEP };
        self.pace = rate.per_second();
        self.burst = (rate.burst() > 1.0).then_some(rate.burst());
    }

    /// The configured allowance learning stays under, if any.
    pub fn ceiling(&self) -> Option<Rate> {
        self.ceiling
    }

    /// Whether admissions wait for the first response (one request in flight at a time).
    pub fn opening(&self) -> bool {
        self.phase == Phase::Opening
    }

    /// The allowance admissions follow at `now` (the pace grows between throttles by itself).
    pub fn rate(&self, now: Millis) -> Rate {
        let pace = match self.phase {
            Phase::SlowStart { since } => {
                let doublings = ((now - since) / 1000.0).max(0.0).floor().min(30.0);
                self.pace * 2f64.powf(doublings)
            }
            _ => self.pace,
        };
        let burst = self.burst.unwrap_or(1.0);
        let (burst, pace) = match self.ceiling {
            Some(c) => (burst.min(c.burst()), pace.min(c.per_second())),
            None => (burst, pace),
        };
        Rate::new(burst.max(1.0), pace.max(MIN_PER_SECOND)).unwrap_or(Rate::ARTICLE)
    }

    /// What was learned so far, at `now`.
    pub fn estimate(&self, now: Millis) -> Estimate {
        let per_second = self.rate(now).per_second();
        Estimate {
            burst: self.burst,
            per_second,
            at_least: self.at_least,
            confidence: (self.at_least / per_second).min(1.0),
            last_throttle: self.last_throttle,
        }
    }

    /// Learns from a response at `now` to a request sent at `sent`: its status,
    /// `X-RateLimit-Limit`/`-Remaining` when both came, how many requests were sent after this
    /// one, and whether calls were waiting for a token (a full server bucket then means the
    /// pace is too slow). A 429 to a request sent before the last 429 came is the same
    /// overshoot, already answered: it cuts nothing more.
    pub fn observe(
        &mut self,
        now: Millis,
        sent: Millis,
        status: u16,
        counted: Option<(u64, u64)>,
        sent_after: u64,
        backlogged: bool,
    ) -> Lesson {
        let rejected = status == 429;
        if !rejected {
            self.successes += 1;
        }
        let throttled = rejected && self.last_throttle.is_none_or(|at| sent >= at);
        let tokens = match counted {
            Some((limit, remaining)) => {
                self.counted(
                    now,
                    rejected,
                    throttled,
                    limit as f64,
                    remaining as f64,
                    backlogged,
                );
                let there = (remaining as f64 - sent_after as f64).max(0.0);
                Some(match self.ceiling {
                    Some(_) => Count::AtMost(there),
                    None => Count::Exactly(there),
                })
            }
            None => {
                self.blind(now, rejected, throttled);
                None
            }
        };
        Lesson {
            rate: self.rate(now),
            tokens,
        }
    }

    fn counted(
        &mut self,
        now: Millis,
        rejected: bool,
        throttled: bool,
        limit: f64,
        remaining: f64,
        busy: bool,
    ) {
        self.phase = Phase::Counted;
        self.burst = Some(limit.max(1.0));
        let mark = self.mark(now, remaining);
        if throttled {
            self.throttled(now, self.pace);
            self.pace = (self.pace * BETA).max(self.at_least).max(MIN_PACE);
        } else if !rejected {
            let bound = self.bound(&mark);
            self.at_least = self.at_least.max(bound);
            let full = remaining + 1.0 >= limit;
            if full && busy && self.last_throttle.is_none() {
                // Found full while calls waited, before any 429: the refill outran the pace
                // (slow start). Twice the best bound at most, so a run of such answers cannot
                // run away with it.
                let cap = 2.0 * self.at_least.max(MIN_PACE);
                self.pace = (self.pace * 2.0).min(cap).max(self.at_least);
            } else if self.pace == OPEN_PACE || self.pace < self.at_least {
                self.pace = self.at_least.max(MIN_PACE);
            }
        }
        self.remember(mark);
    }

    /// The best lower bound on the rate that `mark` and the kept marks give.
    fn bound(&self, mark: &Mark) -> f64 {
        self.marks
            .iter()
            .filter(|m| mark.at > m.at)
            .map(|m| {
                let took = (mark.successes - m.successes) as f64;
                (mark.remaining - m.remaining - 1.0 + took) / ((mark.at - m.at) / 1000.0)
            })
            .fold(0.0, f64::max)
    }

    fn remember(&mut self, mark: Mark) {
        if self.marks.len() == MARKS {
            // Keep the oldest (the longest window) and the newest: drop the second.
            self.marks.remove(1);
        }
        self.marks.push_back(mark);
    }

    fn blind(&mut self, now: Millis, rejected: bool, throttled: bool) {
        if rejected && !throttled {
            return;
        }
        match (self.phase, throttled) {
            (Phase::Opening, false) => {
                self.phase = Phase::SlowStart { since: now };
                self.pace = START_PACE;
            }
            // The counts stopped coming: go on from the pace they led to.
            (Phase::Counted, false) => self.phase = Phase::Probing { step: MIN_STEP },
            (Phase::Probing { step }, false) => {
                // Empty at each 429 kept, holding at least nothing now: the same bound.
                self.at_least = self.bound(&self.mark(now, 0.0)).max(self.at_least);
                self.pace *= 1.0 + step;
            }
            (phase, true) => {
                let mark = self.mark(now, 0.0);
                let pace = self.rate(now).per_second();
                self.throttled(now, pace);
                self.at_least = self.bound(&mark).max(self.at_least);
                self.remember(mark);
                let (pace, step) = match phase {
                    Phase::Probing { step } => (pace * BETA, (step / 2.0).max(MIN_STEP)),
                    // Slow start overshot by at most its last doubling.
                    Phase::SlowStart { .. } => (pace / 2.0, FIRST_STEP),
                    _ => (START_PACE, FIRST_STEP),
                };
                self.pace = pace.max(self.at_least).max(MIN_PACE);
                self.phase = Phase::Probing { step };
            }
            _ => {}
        }
    }

    /// This answer, to bound the rate from: `remaining` left after it (0: empty at a 429).
    fn mark(&self, now: Millis, remaining: f64) -> Mark {
        Mark {
            at: now,
            remaining,
            successes: self.successes,
        }
    }

    /// A 429 came at `now`, the pace being `pace`. Throttled at the bound itself, the
    /// allowance changed or someone else spends the key: the bounds start again from here.
    fn throttled(&mut self, now: Millis, pace: f64) {
        self.last_throttle = Some(now);
        if pace <= self.at_least {
            self.marks.clear();
            self.at_least = 0.0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server bucket of `burst` at `per_second`, full at 0, that our requests alone spend.
    struct Server {
        tokens: f64,
        last: Millis,
        burst: f64,
        per_second: f64,
    }

    impl Server {
        fn new(burst: f64, per_second: f64) -> Server {
            Server {
                tokens: burst,
                last: 0.0,
                burst,
                per_second,
            }
        }

        /// Takes a token at `now`: the status and what is left.
        fn take(&mut self, now: Millis) -> (u16, u64) {
            self.tokens =
                (self.tokens + (now - self.last) / 1000.0 * self.per_second).min(self.burst);
            self.last = now;
            if self.tokens >= 1.0 {
                self.tokens -= 1.0;
                (200, self.tokens.floor() as u64)
            } else {
                (429, 0)
            }
        }
    }

    #[test]
    fn the_bound_never_passes_the_true_rate() {
        // Requests at uneven times, some bunched, some after the bucket filled again.
        for (burst, per_second) in [(5.0, 10.0), (2.0, 2.0), (20.0, 5.0), (1.0, 0.5)] {
            let mut server = Server::new(burst, per_second);
            let mut learner = Learner::new(None);
            let mut now = 0.0;
            for i in 0..500u32 {
                now += f64::from((i * 7919) % 613);
                let (status, left) = server.take(now);
                let counts = Some((burst as u64, left));
                learner.observe(now, now, status, counts, 0, true);
                let bound = learner.estimate(now).at_least;
                assert!(bound <= per_second, "{bound} > {per_second} at {now}");
            }
        }
    }

    #[test]
    fn under_demand_the_bound_closes_on_the_true_rate() {
        for (burst, per_second) in [(5.0, 10.0), (2.0, 2.0), (20.0, 5.0)] {
            let mut server = Server::new(burst, per_second);
            let mut learner = Learner::new(None);
            // A request every token interval for 30 s: the bucket never fills again.
            let step = 1000.0 / per_second;
            let mut now = 0.0;
            while now < 30_000.0 {
                let (status, left) = server.take(now);
                learner.observe(now, now, status, Some((burst as u64, left)), 0, true);
                now += step;
            }
            let bound = learner.estimate(now).at_least;
            assert!(bound > 0.95 * per_second && bound <= per_second, "{bound}");
        }
    }

    #[test]
    fn the_counts_give_the_burst_and_the_tokens_there_now() {
        let mut learner = Learner::new(None);
        assert!(learner.opening());
        let lesson = learner.observe(10.0, 0.0, 200, Some((5, 4)), 1, false);
        assert!(!learner.opening());
        assert_eq!(lesson.rate.burst(), 5.0);
        // Four left when it answered, one sent since: three are ours now.
        assert_eq!(lesson.tokens, Some(Count::Exactly(3.0)));
        assert_eq!(lesson.rate.per_second(), MIN_PACE);
    }

    #[test]
    fn a_ceiling_holds_whatever_is_learned() {
        let ceiling = Rate::new(3.0, 1.0).unwrap();
        let mut learner = Learner::new(Some(ceiling));
        let mut now = 0.0;
        for remaining in [49, 48, 49, 49, 49] {
            now += 100.0;
            let lesson = learner.observe(now, now, 200, Some((50, remaining)), 0, true);
            assert_eq!(lesson.rate.burst(), 3.0);
            assert!(lesson.rate.per_second() <= 1.0);
            // The server's count may lower the gate's, never raise it past the ceiling's pace.
            assert!(matches!(lesson.tokens, Some(Count::AtMost(_))));
        }
        assert!(
            learner.estimate(now).at_least > 1.0,
            "the bound itself is not capped"
        );
    }

    #[test]
    fn without_the_counts_slow_start_doubles_until_a_429_then_halves() {
        let mut learner = Learner::new(None);
        learner.observe(0.0, 0.0, 200, None, 0, true);
        assert_eq!(learner.rate(0.0).per_second(), START_PACE);
        assert_eq!(learner.rate(3_500.0).per_second(), 8.0 * START_PACE);
        assert_eq!(learner.rate(3_500.0).burst(), 1.0);
        learner.observe(3_500.0, 3_400.0, 429, None, 0, true);
        assert_eq!(learner.rate(3_500.0).per_second(), 4.0 * START_PACE);
        // Later, it no longer doubles with time: each success adds a step.
        assert_eq!(learner.rate(9_000.0).per_second(), 4.0 * START_PACE);
        learner.observe(9_000.0, 9_000.0, 200, None, 0, true);
        assert_eq!(learner.rate(9_000.0).per_second(), 4.0 * (1.0 + FIRST_STEP));
    }

    #[test]
    fn one_overshoot_is_cut_once() {
        let mut learner = Learner::new(None);
        learner.observe(0.0, 0.0, 200, None, 0, true);
        learner.observe(2_000.0, 2_000.0, 429, None, 0, true);
        let pace = learner.rate(2_000.0).per_second();
        // Sent before the first 429 came back: the same overshoot.
        learner.observe(2_010.0, 1_990.0, 429, None, 0, true);
        assert_eq!(learner.rate(2_010.0).per_second(), pace);
        learner.observe(2_500.0, 2_400.0, 429, None, 0, true);
        assert_eq!(learner.rate(2_500.0).per_second(), pace * BETA);
        assert_eq!(learner.estimate(2_500.0).last_throttle, Some(2_500.0));
    }

    #[test]
    fn when_the_counts_stop_the_pace_they_led_to_stays() {
        let mut learner = Learner::new(None);
        let mut now = 0.0;
        for remaining in [4, 3, 2, 1, 0, 0, 0] {
            now += 300.0;
            learner.observe(now, now, 200, Some((5, remaining)), 0, false);
        }
        let pace = learner.rate(now).per_second();
        learner.observe(now + 300.0, now + 300.0, 200, None, 0, true);
        assert!(learner.rate(now + 300.0).per_second() >= pace);
        assert!(!learner.opening());
    }
}

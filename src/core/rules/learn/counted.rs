//! Learning from trusted counts (`X-RateLimit-Limit` and `-Remaining`): a token-taking answer
//! sets the burst and bounds the rate, a 429 cuts the pace, and a 429 while the counts claimed
//! room is a contradiction that, repeated, distrusts them for good.

use super::answer::Sample;
use super::phase::Phase;
use super::{Learner, BETA, HORIZON_MS, MIN_PACE, START_PACE};
use crate::core::Millis;

/// With counts, until they show a refill, the pace is at least the burst over this many
/// seconds, up to [`MAX_GUESS`] a second (a claim of thousands sets no pace).
const REFILL_GUESS_S: f64 = 10.0;
const MAX_GUESS: f64 = 10.0;
/// Contradictions between the counts and 429s before the counts are distrusted.
pub(crate) const DOUBTS: u32 = 2;
/// A 429 while the count claims this many tokens or more distrusts the counts at once: not a
/// token someone else took meanwhile, but a count of something else (a monthly quota's).
const FAR_OFF: f64 = 10.0;

impl Learner {
    /// A token-taking answer with trusted counts.
    pub(super) fn counted(&mut self, now: Millis, limit: f64, remaining: f64, s: &Sample) {
        let opening = matches!(self.phase, Phase::Opening | Phase::Window { .. });
        // Until the counts prove their bucket refills, a count is a claim (the first answer's
        // may be a monthly quota's 9,999): it releases a window of requests, one more per
        // success, not the whole queue.
        self.unconfirmed = match (self.unconfirmed, opening) {
            (None, true) => Some(2.0),
            (Some(size), _) => Some(size + 1.0),
            (None, false) => None,
        };
        self.pace = match self.unconfirmed {
            // Until a refill is seen, look for one soon: a bucket that holds many tokens seldom
            // takes minutes to refill them, and a burst of 50 spent at once, then a second at
            // the start's pace before the next request shows the refill, costs a second.
            Some(_) => self
                .pace_at(now)
                .max((limit / REFILL_GUESS_S).min(MAX_GUESS)),
            None => self.pace_at(now),
        };
        self.phase = Phase::Counted;
        self.burst = Some(limit.max(1.0));
        self.claim = Some((remaining, s.seq));
        let mark = self.mark(now, remaining, s);
        self.remember(mark);
        self.at_least = self.proven();
        if self.at_least > 0.0 {
            self.unconfirmed = None;
        }
        // Found full (with a bucket of one, every answer that took a token looks so).
        let full = remaining >= 1.0 && remaining + 1.0 >= limit;
        let calm = self.last_throttle.is_none_or(|at| now - at > HORIZON_MS);
        // Full after the key's spenders (by the requests numbered since) left the bucket alone
        // long enough for the pace to fill it (a spent quota's spell, a rest): no news of the
        // refill. A first count has nothing to compare with and is taken as it comes.
        let rested = self.counted_sent.is_some_and(|(at, seq)| {
            let spent = s.seq - seq;
            (s.sent - at) / 1_000.0 * self.pace - spent >= limit
        });
        if self.counted_sent.is_none_or(|(_, seq)| s.seq > seq) {
            self.counted_sent = Some((s.sent, s.seq));
        }
        if full && s.backlogged && calm && !opening && !rested {
            // Found full while calls waited: the refill outran the pace. Twice the best bound
            // at most, so a run of such answers cannot run away with it (and never lower: a
            // pace taken from another process may be above this gate's own bound).
            let cap = 2.0 * self.at_least.max(START_PACE);
            self.pace = (self.pace * 2.0).min(cap).max(self.pace);
        } else {
            self.pace = self.pace.max(self.at_least).max(MIN_PACE);
        }
    }

    /// A 429 while the counts are trusted.
    pub(super) fn counted_throttle(&mut self, now: Millis, s: &Sample, fresh: bool) {
        let mark = self.mark(now, 0.0, s);
        self.remember(mark);
        if fresh {
            self.throttled(now, self.pace);
            self.at_least = self.proven();
            self.pace = (self.pace * BETA).max(self.at_least).max(MIN_PACE);
        }
    }

    /// A 429 came while the latest count claimed room: a contradiction; enough of them and the
    /// counts are distrusted (their bounds go with them).
    pub(super) fn contradicted(&mut self, now: Millis, seq: f64) {
        let Some((remaining, at)) = self.claim else {
            return;
        };
        let claimed = remaining - (seq - at - 1.0).max(0.0);
        if claimed < 1.0 {
            return;
        }
        // One 429 against a claim this far off is enough.
        self.doubts += if claimed >= FAR_OFF { DOUBTS } else { 1 };
        if self.doubts >= DOUBTS && !self.distrusted {
            self.distrusted = true;
            self.claim = None;
            self.marks.clear();
            self.at_least = 0.0;
            self.burst = None;
            // Learning starts again as without counts, from a 429: slow start.
            self.phase = Phase::SlowStart { count: 0.0 };
            self.pace = START_PACE;
            self.last_throttle = Some(now);
        }
    }
}

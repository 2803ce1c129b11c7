//! The bound on the refill rate the kept marks prove: each answer's mark, the best bound over
//! the marks, how many are kept and for how long, and the fresh start a 429 at the bound makes.

use super::answer::Sample;
use super::marks::Mark;
use super::phase::Phase;
use super::{Learner, HORIZON_MS};
use crate::core::Millis;

/// Marks kept to bound the rate from (the windows' starts).
const MARKS: usize = 32;
/// Without counts, marks (all 429s) hold this long: a confirmed pace holds for [`HOLD`]
/// successes, and the 429s on either side of it bound the rate best. A 429 at the proven bound
/// itself (the allowance dropped, or someone else spends the key) clears them sooner.
///
/// [`HOLD`]: super::phase::HOLD
const BLIND_HORIZON_MS: Millis = 600_000.0;

impl Learner {
    /// This answer at `now`, to bound the rate from: `remaining` left after it (0: empty at a
    /// 429).
    pub(super) fn mark(&self, now: Millis, remaining: f64, s: &Sample) -> Mark {
        Mark {
            sent: s.sent,
            at: now,
            remaining,
            seq: s.seq,
            ahead: s.ahead,
            heard: s.heard.max(s.seq),
            untaken: self.untaken,
        }
    }

    /// The lower bound on the rate that `mark` and the kept marks give.
    pub(super) fn bound(&self, mark: &Mark) -> f64 {
        self.marks
            .iter()
            .filter_map(|m| m.bound_to(mark, &self.untaken_seqs))
            .fold(0.0, f64::max)
    }

    /// The bound the answers prove now: the marks' best once two are kept; until then, the
    /// bound held (a resumed gate's, from its memo: 0 otherwise).
    pub(super) fn proven(&self) -> f64 {
        match self.marks.len() {
            0 | 1 => self.at_least,
            _ => self.best_bound(),
        }
    }

    /// The best lower bound the kept marks give, each against those before it.
    pub(super) fn best_bound(&self) -> f64 {
        let mut best: f64 = 0.0;
        for (i, mark) in self.marks.iter().enumerate() {
            for m in self.marks.iter().take(i) {
                best = best.max(m.bound_to(mark, &self.untaken_seqs).unwrap_or(0.0));
            }
        }
        best
    }

    // Never inlined: one copy for its three callers (1 KB of wasm).
    #[inline(never)]
    pub(super) fn remember(&mut self, mark: Mark) {
        if self.marks.capacity() == 0 {
            // Room for one: a gate that made one call keeps one mark, not the four a first
            // push would make room for.
            self.marks.reserve_exact(1);
        }
        if self.marks.len() == MARKS {
            // Keep the oldest (the longest window) and the newest: drop the second.
            self.marks.remove(1);
        }
        self.marks.push_back(mark);
    }

    /// Bounds older than the horizon no longer hold.
    pub(super) fn expire(&mut self, now: Millis) {
        let before = self.marks.len();
        let horizon = match self.phase {
            Phase::Climbing { .. } | Phase::Settled { .. } => BLIND_HORIZON_MS,
            _ => HORIZON_MS,
        };
        while self.marks.front().is_some_and(|m| now - m.at > horizon) {
            self.marks.pop_front();
        }
        if self.marks.len() != before {
            self.at_least = self.best_bound();
        }
    }

    /// A 429 came at `now`, the pace being `pace`. Throttled at the bound itself, the
    /// allowance changed or someone else spends the key: the bounds start again from here.
    pub(super) fn throttled(&mut self, now: Millis, pace: f64) {
        self.last_throttle = Some(now);
        if pace <= self.at_least * 1.05 {
            self.marks.clear();
            self.at_least = 0.0;
        }
    }
}

//! A token bucket with fractional refill: the shape of the allowance both the provider and the
//! gate enforce.
//!
//! Two refinements for the live gate, both of which only ever make it slower than the server:
//! - *Anchored refill.* A server's bucket starts refilling when the first request of a burst
//!   *arrives*, which is later than when we admitted it. So a take from a full bucket can pause
//!   refilling until that request's response comes back (the latest moment it can have
//!   arrived); the pause ends by itself after `MAX_PAUSE_MS` so a lost response costs little.
//! - *Slow mode.* Refill at half the rate while the server says the key is nearly spent.

use crate::core::base::protocol;
use crate::core::rules::allowance::Rate;
use crate::core::Millis;

/// Float slack, in tokens: a wake-up computed for the exact refill instant must neither miss it
/// by a rounding error nor be rounded up a whole millisecond past it.
const SLACK: f64 = protocol::SLACK;
const WHOLE_TOKEN: f64 = 1.0 - SLACK;

/// The longest an anchored refill waits for its response.
pub(crate) const MAX_PAUSE_MS: Millis = 1_000.0;

/// What the server's count says of the tokens a learning gate holds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Count {
    /// This many are there.
    Exactly(f64),
    /// At most this many (under a configured ceiling, the gate's own count rules below it).
    AtMost(f64),
}

/// Tokens refill continuously; one token is one request.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenBucket {
    rate: Rate,
    tokens: f64,
    last: Millis,
    paused_at: Option<Millis>,
    slow: bool,
}

impl TokenBucket {
    /// A full bucket whose clock starts at `now`.
    pub fn new(rate: Rate, now: Millis) -> Self {
        TokenBucket {
            rate,
            tokens: rate.burst(),
            last: now,
            paused_at: None,
            slow: false,
        }
    }

    /// The state as numbers (tokens, last refill, pause start or -inf, slow as 0/1), for an
    /// authority whose state lives outside this value: a slot shared by threads.
    pub(crate) fn save(&self) -> [f64; 4] {
        let paused = self.paused_at.unwrap_or(f64::NEG_INFINITY);
        [
            self.tokens,
            self.last,
            paused,
            f64::from(u8::from(self.slow)),
        ]
    }

    /// The bucket [`save`](Self::save) wrote, enforcing `rate`.
    pub(crate) fn load(rate: Rate, words: [f64; 4]) -> Self {
        let [tokens, last, paused, slow] = words;
        TokenBucket {
            rate,
            tokens,
            last,
            paused_at: paused.is_finite().then_some(paused),
            slow: slow != 0.0,
        }
    }

    /// The allowance this bucket enforces.
    pub(crate) fn rate(&self) -> Rate {
        self.rate
    }

    /// Tokens available at `now` (fractional).
    pub fn tokens(&mut self, now: Millis) -> f64 {
        self.refill(now);
        self.tokens
    }

    /// Milliseconds per token at the current pace.
    fn interval(&self) -> Millis {
        self.rate.ms_per_token() * if self.slow { 2.0 } else { 1.0 }
    }

    fn refill(&mut self, now: Millis) {
        if let Some(at) = self.paused_at {
            if now < at + MAX_PAUSE_MS {
                return;
            }
            self.resume(at + MAX_PAUSE_MS);
        }
        // A clock that seems to step back (two readers racing) adds nothing rather than
        // draining tokens.
        if now > self.last {
            let added = (now - self.last) / self.interval();
            self.tokens = (self.tokens + added).min(self.rate.burst());
            self.last = now;
        }
    }

    /// Whether a whole token was there by `at` (at most `now`), nobody having taken one since:
    /// what is there now less what can have refilled since (less still, if the refill was
    /// paused meanwhile).
    pub(crate) fn had_token_by(&mut self, now: Millis, at: Millis) -> bool {
        self.refill(now);
        self.tokens - (now - at).max(0.0) / self.interval() >= WHOLE_TOKEN
    }

    /// Spends one token if a whole one is there.
    pub fn take(&mut self, now: Millis) -> bool {
        self.refill(now);
        if self.tokens < WHOLE_TOKEN {
            return false;
        }
        self.tokens -= 1.0;
        true
    }

    /// Spends one token if a whole one is there, as [`take`](Self::take). When the bucket was
    /// full, refilling pauses until [`resume`](Self::resume) and the answer is `Some(true)`.
    pub(crate) fn take_anchored(&mut self, now: Millis) -> Option<bool> {
        self.refill(now);
        let full = self.tokens >= self.rate.burst() - SLACK;
        if !self.take(now) {
            return None;
        }
        if full {
            self.paused_at = Some(now);
        }
        Some(full)
    }

    /// Restarts a paused refill from `now` (the response came back).
    pub(crate) fn resume(&mut self, now: Millis) {
        if let Some(at) = self.paused_at.take() {
            // Not `clamp`: its NaN assertion would bring float formatting into the wasm module.
            self.last = now.max(at).min(at + MAX_PAUSE_MS);
        }
    }

    /// Never believe in more tokens than the server says are left (it is approximate, so this
    /// only ever lowers the count).
    pub(crate) fn at_most(&mut self, now: Millis, tokens: f64) {
        self.refill(now);
        self.tokens = self.tokens.min(tokens);
    }

    /// Follows a learned allowance from `now`: the refill so far at the old rate, then `rate`.
    /// With `count` (what the server says it holds for us), the count becomes that, or at
    /// most that, and a paused refill restarts: the server's own count has taken the pause's
    /// place.
    pub(crate) fn retune(&mut self, now: Millis, rate: Rate, count: Option<Count>) {
        self.refill(now);
        self.rate = rate;
        if let Some(count) = count {
            self.paused_at = None;
            self.last = self.last.max(now);
            self.tokens = match count {
                Count::Exactly(tokens) => tokens,
                Count::AtMost(tokens) => self.tokens.min(tokens),
            };
        }
        self.tokens = self.tokens.min(rate.burst());
    }

    /// Halves the refill rate (`true`) or restores it.
    pub(crate) fn set_slow(&mut self, now: Millis, slow: bool) {
        self.refill(now);
        self.slow = slow;
    }

    /// Whether the refill waits for an anchored admission's response.
    pub(crate) fn is_paused(&self) -> bool {
        self.paused_at.is_some()
    }

    /// Whether the bucket refills at half rate.
    pub(crate) fn is_slow(&self) -> bool {
        self.slow
    }

    /// The earliest time at which `take` will succeed, without spending anything. Rounded up
    /// to a whole millisecond, as timers are.
    /// While paused this is a lower bound: refilling restarts no earlier than `now`.
    pub fn ready_at(&mut self, now: Millis) -> Millis {
        self.nth_ready_at(now, 0)
    }

    /// When the waiter with `n` others ahead of it could be admitted, if nothing else changed:
    /// the time `n + 1` whole tokens will have been there.
    // Never inlined: one copy for its callers (smaller gzipped).
    #[inline(never)]
    pub(crate) fn nth_ready_at(&mut self, now: Millis, n: usize) -> Millis {
        now + self.nth_wait(now, n)
    }

    /// How long until `n + 1` whole tokens, in whole milliseconds (0 when they are there).
    pub(crate) fn nth_wait(&mut self, now: Millis, n: usize) -> Millis {
        self.refill(now);
        let missing = n as f64 + 1.0 - self.tokens;
        if missing <= SLACK {
            0.0
        } else {
            // Half the slack, so the wake-up still finds a whole token.
            (missing * self.interval() - SLACK / 2.0 * self.interval()).ceil()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn article_bucket() -> TokenBucket {
        TokenBucket::new(Rate::new(2.0, 2.0).unwrap(), 0.0)
    }

    #[test]
    fn starts_full_and_spends_the_burst() {
        let mut b = article_bucket();
        assert!(b.take(0.0));
        assert!(b.take(0.0));
        assert!(!b.take(0.0));
    }

    #[test]
    fn refills_fractionally() {
        let mut b = article_bucket();
        b.take(0.0);
        b.take(0.0);
        assert!(!b.take(250.0));
        assert_eq!(b.tokens(250.0), 0.5);
        assert!(b.take(500.0));
    }

    #[test]
    fn never_holds_more_than_the_burst() {
        let mut b = article_bucket();
        assert_eq!(b.tokens(1_000_000.0), 2.0);
    }

    #[test]
    fn ready_at_is_the_first_instant_take_succeeds() {
        let mut b = TokenBucket::new(Rate::new(1.0, 3.0).unwrap(), 10.25);
        assert!(b.take(10.25));
        let at = b.ready_at(10.25);
        assert_eq!(at, 10.25 + 334.0);
        assert!(b.take(at));
    }

    #[test]
    fn an_anchored_take_from_full_pauses_refill_until_the_response() {
        let mut b = article_bucket();
        assert_eq!(b.take_anchored(0.0), Some(true));
        assert_eq!(b.take_anchored(0.0), Some(false));
        assert_eq!(b.take_anchored(0.0), None);
        // The burst's response comes back at 3 ms: the refill clock starts there.
        b.resume(3.0);
        assert!(!b.take(502.0));
        assert_eq!(b.ready_at(502.0), 503.0);
        assert!(b.take(503.0));
    }

    #[test]
    fn a_lost_response_pauses_refill_for_at_most_max_pause() {
        let mut b = article_bucket();
        b.take_anchored(0.0);
        b.take_anchored(0.0);
        assert_eq!(b.tokens(MAX_PAUSE_MS - 1.0), 0.0);
        assert_eq!(b.tokens(MAX_PAUSE_MS + 500.0), 1.0);
    }

    #[test]
    fn slow_mode_halves_the_refill_rate() {
        let mut b = article_bucket();
        b.take(0.0);
        b.take(0.0);
        b.set_slow(0.0, true);
        assert_eq!(b.ready_at(0.0), 1000.0);
        b.set_slow(500.0, false);
        assert_eq!(b.tokens(500.0), 0.5);
        assert_eq!(b.ready_at(500.0), 750.0);
    }

    #[test]
    fn the_servers_remaining_only_lowers_the_count() {
        let mut b = article_bucket();
        b.at_most(0.0, 0.0);
        assert_eq!(b.tokens(0.0), 0.0);
        b.at_most(250.0, 5.0);
        assert_eq!(b.tokens(250.0), 0.5);
    }

    #[test]
    fn nth_ready_at_counts_the_waiters_ahead() {
        let mut b = article_bucket();
        assert_eq!(b.nth_ready_at(0.0, 1), 0.0);
        assert_eq!(b.nth_ready_at(0.0, 2), 500.0);
        assert_eq!(b.nth_ready_at(0.0, 5), 2000.0);
    }

    #[test]
    fn a_clock_stepping_back_adds_nothing() {
        let mut b = article_bucket();
        b.take(100.0);
        b.take(100.0);
        assert_eq!(b.tokens(50.0), 0.0);
    }
}

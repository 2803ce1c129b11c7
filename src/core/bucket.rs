//! A token bucket with fractional refill: the shape of the allowance both the provider and the
//! gate enforce.

use super::config::Rate;
use super::Millis;

/// Float slack, in tokens: a wake-up computed for the exact refill instant must neither miss it
/// by a rounding error nor be rounded up a whole millisecond past it.
const SLACK: f64 = 1e-9;
const WHOLE_TOKEN: f64 = 1.0 - SLACK;

/// Tokens refill continuously; one token is one request.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenBucket {
    rate: Rate,
    tokens: f64,
    last: Millis,
}

impl TokenBucket {
    /// A full bucket whose clock starts at `now`.
    pub fn new(rate: Rate, now: Millis) -> Self {
        TokenBucket {
            rate,
            tokens: rate.burst(),
            last: now,
        }
    }

    /// The allowance this bucket enforces.
    pub fn rate(&self) -> Rate {
        self.rate
    }

    /// Tokens available at `now` (fractional).
    pub fn tokens(&mut self, now: Millis) -> f64 {
        self.refill(now);
        self.tokens
    }

    fn refill(&mut self, now: Millis) {
        // A clock that seems to step back (two readers racing) adds nothing rather than
        // draining tokens.
        if now > self.last {
            let added = (now - self.last) / self.rate.ms_per_token();
            self.tokens = (self.tokens + added).min(self.rate.burst());
            self.last = now;
        }
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

    /// The earliest time at which `take` will succeed, without spending anything. Rounded up
    /// to a whole millisecond, as timers are.
    pub fn ready_at(&mut self, now: Millis) -> Millis {
        self.refill(now);
        if self.tokens >= WHOLE_TOKEN {
            now
        } else {
            let wait = (1.0 - self.tokens) * self.rate.ms_per_token();
            // Half the slack, so the wake-up still finds a whole token.
            now + (wait - SLACK / 2.0 * self.rate.ms_per_token()).ceil()
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
    fn a_clock_stepping_back_adds_nothing() {
        let mut b = article_bucket();
        b.take(100.0);
        b.take(100.0);
        assert_eq!(b.tokens(50.0), 0.0);
    }
}

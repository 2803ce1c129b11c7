//! The article's `Gate` (`new Gate(rate)` of `simulate()`'s module): the production memory
//! authority driven by hand on a virtual clock, as the article's checks drive theirs.

use crate::core::authority::memory::MemoryAuthority;
use crate::core::authority::{AdmissionId, Answer, Op, Transitions};
use crate::core::rules::allowance::{at_least, ConfigError, Rate};
use crate::core::Millis;

/// The article's `Gate`: `admitAt(now)` and `defer(now, delayMs)` on a virtual clock. It is the
/// production [`MemoryAuthority`], each admission's response taken to come back at once.
#[derive(Debug, Clone)]
pub struct ArticleGate {
    authority: MemoryAuthority,
    next: AdmissionId,
}

impl ArticleGate {
    /// `new Gate(rate)` as given, with its `learn`: the article's gate enforces its rate.
    pub fn given(rate: Rate, learn: bool) -> Result<ArticleGate, ConfigError> {
        match learn {
            true => Err(ConfigError::Shape(
                "`rate.learn` is for createFetch's `rate` only",
            )),
            false => Ok(ArticleGate::new(rate)),
        }
    }

    /// A gate with a full bucket at time 0.
    pub fn new(rate: Rate) -> ArticleGate {
        ArticleGate {
            authority: MemoryAuthority::new(rate, None, 0.0),
            next: 0,
        }
    }

    /// Admits at `now` (spending a token) and returns `now`, or returns the earliest time worth
    /// coming back, spending nothing. The cooldown is checked first, so after a cooldown only
    /// the burst goes at once and the rest wait for tokens.
    pub fn admit_at(&mut self, now: Millis) -> Millis {
        let id = self.next;
        self.next += 1;
        let admit = Op::Admit {
            id,
            want: 1,
            seen: None,
            account: false,
            head: None,
            credits: None,
        };
        match self.authority.apply(now, &admit) {
            Answer::Admitted { .. } => {
                self.authority.apply(now, &Op::Resume { id });
                now
            }
            Answer::Wait(ms) | Answer::Exhausted(ms) => now + ms,
            _ => now,
        }
    }

    /// Holds every admission until `now + delay_ms`; a later, shorter delay never moves the
    /// end earlier.
    pub fn defer(&mut self, now: Millis, delay_ms: Millis) -> Result<(), ConfigError> {
        let delay_ms = at_least("delayMs", delay_ms, 0.0, "a finite number >= 0")?;
        let op = Op::Feedback {
            cooldown_ms: Some(delay_ms),
            remaining: None,
        };
        self.authority.apply(now, &op);
        Ok(())
    }

    /// No admission before this time.
    pub fn blocked_until(&self) -> Millis {
        self.authority.cooldown_until()
    }
}

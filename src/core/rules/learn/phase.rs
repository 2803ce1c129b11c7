//! How far learning has come ([`Phase`]): the opening, the window, slow start, the climb and the
//! settled pace without counts, or the counts. The constants of the search without counts live
//! here too: the phases are made with them, and the learning without counts steps by them.

use crate::core::Millis;

/// Without counts, while the rate is unconfirmed each success raises the pace by a step: this
/// much after slow start, halved by each 429 down to [`MIN_STEP`]. After a 429 the pace first
/// holds for [`SEARCH_HOLD`] successes, so the bucket it just emptied has a moment to gain.
pub(super) const FIRST_STEP: f64 = 0.01;
pub(super) const MIN_STEP: f64 = 0.004;
pub(super) const SEARCH_HOLD: u32 = 8;
/// Successes at a confirmed pace before it tries above it, and between trials: a trial that
/// finds the limit costs a 429, so about one attempt in this many is one once learning has
/// settled.
pub(super) const HOLD: u32 = 100;
/// ... and at least this long: a fast key's trials cost it a `Retry-After` each.
pub(super) const HOLD_MS: Millis = 20_000.0;
/// A trial's first step above the confirmed pace; each trial that finds no limit doubles it, up
/// to [`MAX_TRIAL`], so an allowance that grew is found in a few trials.
pub(super) const FIRST_TRIAL: f64 = 0.02;
pub(super) const MAX_TRIAL: f64 = 0.5;

/// Which kind of feedback the API gives this key, and how far learning has come.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Phase {
    /// No answer yet: one request at a time.
    Opening,
    /// No counts, no 429 yet: as many requests in flight as `size`, one more per success.
    Window { size: f64 },
    /// No counts, after the first 429: the pace doubles each time a second's worth of it
    /// (`count` successes so far) has gone out without a 429, so a pace held back by a
    /// cooldown or by want of calls does not double blind.
    SlowStart { count: f64 },
    /// No counts, the rate not pinned yet: after `wait` more successes, each success raises the
    /// pace by `step`; each 429 cuts it.
    Climbing { step: f64, wait: u32 },
    /// No counts, the rate pinned between the bound the 429s prove and the pace of the last 429:
    /// the pace holds for `hold` more successes and until `until`, then tries `trial` above
    /// it; `held` is the pace that last held a whole hold (0: none yet), which a trial's 429
    /// goes back to.
    Settled {
        trial: f64,
        hold: u32,
        until: Millis,
        held: f64,
    },
    /// Answers carry trusted `X-RateLimit-Limit` and `-Remaining`.
    Counted,
}

impl Phase {
    /// Settled at `now` at a confirmed pace, or one taken from elsewhere.
    pub(super) fn settled(now: Millis) -> Phase {
        Phase::Settled {
            trial: FIRST_TRIAL,
            hold: HOLD,
            until: now + HOLD_MS,
            held: 0.0,
        }
    }

    /// Searching from a 429, by `step` a success once the pace has held a little.
    pub(super) fn climbing(step: f64) -> Phase {
        Phase::Climbing {
            step,
            wait: SEARCH_HOLD,
        }
    }
}

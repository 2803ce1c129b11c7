//! The spread's state where an authority shares it (#37): one [`CreditBucket`] per key for
//! every thread or process that admits its calls, and when its next `/usage` reading is due.
//! An admission asks for its call's credits with its token ([`Op::Admit`]'s `credits`); the
//! first to find a reading due claims it, so exactly one reads; its answer corrects the bucket
//! for everyone ([`Op::Read`]), and teaches it what calls of no stated cost cost
//! (`CostScale`). `gate.lua` encodes the same rule for Redis.
//!
//! [`Op::Admit`]: super::Op::Admit
//! [`Op::Read`]: super::Op::Read

use crate::core::base::protocol;
use crate::core::rules::credits::{CreditBucket, Spread};
use crate::core::rules::quota::Usage;
use crate::core::rules::scale::CostScale;
use crate::core::Millis;

/// How soon a call waiting for the key's first reading, claimed by another, asks again.
const FIRST_READ_RECHECK_MS: Millis = protocol::FIRST_READ_RECHECK_MS;

/// How soon after the first reading an early one is due (see [`SharedCredits::due`]).
const EARLY_READING_MS: Millis = protocol::EARLY_READING_MS;

/// A call's credits, asked with its admission.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spend {
    /// What the call costs: as stated, or 1 (taken times the learned scale).
    pub cost: f64,
    /// The cost is stated (`quota.costs`): exact, not scaled.
    pub stated: bool,
    /// It draws on the reserve when the spread has not its credits (`lane({ reserve: true })`).
    pub reserve: bool,
    /// The spread's settings (the gate's: the state keeps none).
    pub spread: Spread,
}

/// A `/usage` reading's answer as its reader tells it: the end of the period as milliseconds
/// from the reader's now, so no process compares its clock with another's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reading {
    /// `api_credits_used`.
    pub used: f64,
    /// `api_credits_limit`.
    pub limit: f64,
    /// Milliseconds until the period ends.
    pub end_ms: Millis,
}

/// What a store tells a gate of the shared spread with an answer that touched it (an
/// admission with credits, a reading): the bucket's figures, and when a call like the one
/// asked could next have its credits. Times are from the store's now, so no process compares
/// its clock with another's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CreditView {
    /// The key's `used` as the shared bucket counts it.
    pub used: f64,
    /// The period's limit.
    pub limit: f64,
    /// The refill, in credits per millisecond.
    pub per_ms: f64,
    /// Milliseconds until the period ends.
    pub end_ms: Millis,
    /// Milliseconds until another call of the cost asked could have its credits (0: now),
    /// the next reading at the latest; `None` when no call was asked about (a reading).
    pub next_ms: Option<Millis>,
    /// What a credit asked at no stated cost costs (see `CostScale`).
    pub scale: f64,
}

/// What an admission's credits say.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Credit {
    /// The call has them.
    Go,
    /// A reading is due and the asker has claimed it: it reads before anyone is paced.
    Read,
    /// Not yet: ask again in this many milliseconds (at least 1).
    Wait(Millis),
}

/// Where the bucket's numbers start in [`SharedCredits::save`]'s: after the flags, the next
/// reading and the scale's.
const BUCKET_AT: usize = 3 + CostScale::WORDS;

/// The shared spread: the bucket once a reading made one, what calls cost, and the readings'
/// schedule.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SharedCredits {
    bucket: Option<CreditBucket>,
    /// Counts what calls took while there is a bucket, and learns from its readings.
    scale: CostScale,
    /// A reading has answered, usefully or not: calls no longer wait for the first.
    read: bool,
    /// No reading is claimed before this.
    next_reading: Millis,
    /// The early reading of this bucket (see [`due`](Self::due)) was claimed: one a bucket.
    early_claimed: bool,
    /// Kept by one process on its own (its store down): its readings count everyone's calls
    /// but its own, so they teach the scale nothing.
    alone: bool,
}

impl Default for SharedCredits {
    fn default() -> Self {
        SharedCredits {
            bucket: None,
            scale: CostScale::default(),
            read: false,
            next_reading: Millis::NEG_INFINITY,
            early_claimed: false,
            alone: false,
        }
    }
}

impl SharedCredits {
    /// Numbers [`save`](Self::save) writes.
    pub(crate) const WORDS: usize = BUCKET_AT + CreditBucket::WORDS;

    /// The state as numbers, for a slot shared by threads: whether a reading answered (2: and
    /// the bucket's early reading was claimed), the next reading's time (minus infinity: due),
    /// whether there is a bucket, the scale's numbers, and the bucket's.
    pub(crate) fn save(&self) -> [f64; Self::WORDS] {
        let mut words = [0.0; Self::WORDS];
        words[0] = f64::from(u8::from(self.read) + u8::from(self.read && self.early_claimed));
        words[1] = self.next_reading;
        words[3..BUCKET_AT].copy_from_slice(&self.scale.save());
        if let Some(bucket) = &self.bucket {
            words[2] = 1.0;
            words[BUCKET_AT..].copy_from_slice(&bucket.save());
        }
        words
    }

    /// The state [`save`](Self::save) wrote (all zeros: a reading due at any time from 0).
    pub(crate) fn load(words: [f64; Self::WORDS]) -> SharedCredits {
        let mut bucket = [0.0; CreditBucket::WORDS];
        bucket.copy_from_slice(&words[BUCKET_AT..]);
        SharedCredits {
            bucket: (words[2] == 1.0).then(|| CreditBucket::load(bucket)),
            scale: CostScale::load(std::array::from_fn(|i| words[3 + i])),
            read: words[0] >= 1.0,
            next_reading: words[1],
            early_claimed: words[0] == 2.0,
            alone: false,
        }
    }

    /// Takes in another thread's state kept apart for a while: the bucket that was read
    /// last, with the scale that counted since its reading, and the later of the next
    /// readings.
    pub(crate) fn absorb(&mut self, other: &SharedCredits) {
        let read_at = |c: &SharedCredits| c.bucket.map_or(Millis::NEG_INFINITY, |b| b.read_at());
        if read_at(other) > read_at(self) {
            self.bucket = other.bucket;
            self.scale = other.scale;
        }
        self.read |= other.read;
        self.early_claimed |= other.early_claimed;
        self.next_reading = self.next_reading.max(other.next_reading);
    }

    /// Whether a call costing `spend` may go at `now`: a reading due is claimed first (the
    /// asker reads; what is taken from now on is not in its answer); before the first answer
    /// calls wait for it; with no bucket after it, they go unpaced.
    pub(crate) fn ask(&mut self, now: Millis, spend: Spend) -> Credit {
        if now >= self.due() {
            self.early_claimed |= now < self.next_reading;
            self.next_reading = now + protocol::READING_LEASE_MS.min(spend.spread.refresh_ms);
            if let Some(bucket) = &mut self.bucket {
                bucket.sent();
            }
            return Credit::Read;
        }
        let cost = self.cost(spend);
        let ready = match (&mut self.bucket, self.read) {
            (Some(bucket), _) if spend.reserve => bucket.ready_reserved(now, cost),
            (Some(bucket), _) => bucket.ready(now, cost),
            (None, false) => Err(now + FIRST_READ_RECHECK_MS),
            (None, true) => Ok(()),
        };
        match ready {
            Ok(()) => Credit::Go,
            Err(at) => Credit::Wait((at.min(self.due()) - now).max(1.0)),
        }
    }

    /// When the next reading may be claimed: as scheduled; or, once for a bucket, while only
    /// its first reading has come and `MIN_ASKED` credits were asked at no stated cost since,
    /// a second after it (a route dearer than a credit is measured before it overspends, as a
    /// gate alone measures an unknown route early).
    fn due(&self) -> Millis {
        match &self.bucket {
            Some(b)
                if !self.early_claimed
                    && !b.measured()
                    && self.scale.asked() >= protocol::MIN_ASKED =>
            {
                self.next_reading.min(b.read_at() + EARLY_READING_MS)
            }
            _ => self.next_reading,
        }
    }

    /// The call [`ask`](Self::ask) let go at this same `now` takes its credits, and counts
    /// for the scale.
    pub(crate) fn take(&mut self, now: Millis, spend: Spend) {
        let cost = self.cost(spend);
        if let Some(bucket) = &mut self.bucket {
            // Asked at this same `now`, it has them.
            let _ = match spend.reserve {
                true => bucket.take_reserved(now, cost),
                false => bucket.take(now, cost),
            };
            self.scale.taken(spend.cost, spend.stated);
        }
    }

    /// The claimed reading's answer at `now` (`None`: no usable answer): the first usable one
    /// makes the bucket, later ones correct it and teach the scale (the counts go on through
    /// a reading with no answer); the next reading is due a refresh later.
    pub(crate) fn read(&mut self, now: Millis, spread: Spread, reading: Option<Reading>) {
        self.read = true;
        let period = self.bucket.map(|b| b.period_end());
        if let Some(r) = reading {
            let usage = Usage {
                used: r.used,
                limit: r.limit,
                period_end: Some(now + r.end_ms),
            };
            // Alone, what the key spent is mostly others': the scale stays as the fleet's.
            let mut kept = CostScale::load([self.scale.scale(), 0.0, 0.0]);
            let scale = if self.alone {
                &mut kept
            } else {
                &mut self.scale
            };
            match &mut self.bucket {
                Some(bucket) => bucket.read_shared(now, usage, scale),
                None => self.bucket = CreditBucket::start(spread, now, usage),
            }
        }
        // A new bucket (the first, or a new period's) may have its early reading.
        if self.bucket.map(|b| b.period_end()) != period {
            self.early_claimed = false;
        }
        let refresh = spread.refresh_ms;
        self.next_reading =
            (self.bucket.as_ref()).map_or(now + refresh, |b| b.next_reading(now, refresh));
    }

    /// `credits` a process spent on its own (its store down) are counted at `now` as used,
    /// out of what the bucket gathered meanwhile; the scale starts counting again, so the
    /// next reading (whose delta holds what the fleet spent alone, told or not yet) teaches it
    /// nothing unless enough calls asked after this.
    pub(crate) fn spent(&mut self, now: Millis, credits: f64) {
        if let Some(bucket) = &mut self.bucket {
            bucket.spent(now, credits);
            self.scale.learn(None);
        }
    }

    /// The bucket's figures at `now`, and when a call like `spend` could next have its
    /// credits (see [`CreditView`]); `None` before a reading made a bucket.
    pub fn view(&mut self, now: Millis, spend: Option<Spend>) -> Option<CreditView> {
        let next_reading = self.due();
        let cost = spend.map(|s| self.cost(s));
        let bucket = self.bucket.as_mut()?;
        let next_ms = cost.map(|cost| {
            let at = bucket.predict(now, 0.0, cost);
            (at.min(next_reading) - now).max(0.0)
        });
        Some(CreditView {
            used: bucket.used(),
            limit: bucket.limit(),
            per_ms: bucket.per_ms(),
            end_ms: bucket.period_end() - now,
            next_ms,
            scale: self.scale.scale(),
        })
    }

    /// A process on its own (its store down) takes `share` of the spread's pace from `now`
    /// and leaves the rest to the others, as it does with the allowance; `seed`, when given,
    /// is the store's bucket it goes on from, with its scale (heard so many ms before `now`;
    /// the process reads again a refresh later). A bucket made now (from the seed, or by the
    /// reading just taken in when `had` says there was none) holds that share of its opening.
    pub(crate) fn alone(
        &mut self,
        now: Millis,
        (spread, share): (Spread, f64),
        seed: Option<(CreditView, Millis)>,
        had: bool,
    ) {
        self.alone = true;
        if let Some((v, ago)) = seed {
            self.scale = CostScale::load([v.scale, 0.0, 0.0]);
            let usage = Usage {
                used: v.used,
                limit: v.limit,
                period_end: Some(now + v.end_ms - ago),
            };
            self.bucket = CreditBucket::start(spread, now, usage);
            self.read = true;
            self.next_reading = (self.bucket.as_ref()).map_or(now + spread.refresh_ms, |b| {
                b.next_reading(now, spread.refresh_ms)
            });
        }
        if let Some(bucket) = &mut self.bucket {
            // Its share of a new bucket's opening credit too: the members open one between them.
            bucket.share(now, share, seed.is_some() || !had);
        }
    }

    /// What a call asking `spend` takes: its stated cost, or its cost times the scale.
    pub(crate) fn cost(&self, spend: Spend) -> f64 {
        self.scale.credits(spend.cost, spend.stated)
    }

    /// Whether a reading made the bucket.
    pub(crate) fn has_bucket(&self) -> bool {
        self.bucket.is_some()
    }

    /// What one credit asked at no stated cost is taken to cost.
    pub fn scale(&self) -> f64 {
        self.scale.scale()
    }

    /// The key's `used`, limit and refill per millisecond as the bucket knows them (zeros
    /// before a reading made one).
    pub(crate) fn figures(&self) -> (f64, f64, f64) {
        self.bucket
            .map_or((0.0, 0.0, 0.0), |b| (b.used(), b.limit(), b.per_ms()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: Millis = 3_600_000.0;

    fn spend(cost: f64, stated: bool) -> Spend {
        Spend {
            cost,
            stated,
            reserve: false,
            spread: Spread::DEFAULT,
        }
    }

    /// A reading at `now` of a period that ends at 700 hours.
    fn reading(now: Millis, used: f64) -> Option<Reading> {
        Some(Reading {
            used,
            limit: 100_000.0,
            end_ms: 700.0 * HOUR - now,
        })
    }

    /// Asks, and takes when it may go: whether it went.
    fn call(c: &mut SharedCredits, now: Millis, s: Spend) -> bool {
        let go = c.ask(now, s) == Credit::Go;
        if go {
            c.take(now, s);
        }
        go
    }

    #[test]
    fn calls_of_no_stated_cost_take_what_the_readings_teach_and_stated_ones_their_cost() {
        let mut c = SharedCredits::default();
        assert_eq!(c.ask(0.0, spend(1.0, false)), Credit::Read);
        c.read(1.0, Spread::DEFAULT, reading(1.0, 0.0));
        for i in 0..10 {
            assert!(call(&mut c, 2.0 + f64::from(i), spend(1.0, false)));
        }
        assert!(call(&mut c, 20.0, spend(3.0, true)));
        assert_eq!(c.figures().0, 13.0, "1 a call until a reading says more");
        let due = 1.0 + Spread::DEFAULT.refresh_ms;
        assert_eq!(c.ask(due, spend(1.0, false)), Credit::Read);
        // The server counted 53: the stated 3, and 50 for the 10 credits asked.
        c.read(due + 1.0, Spread::DEFAULT, reading(due + 1.0, 53.0));
        assert_eq!(c.scale(), 5.0);
        let back = SharedCredits::load(c.save());
        assert_eq!(back, c, "the scale is in the slot's words");
        assert!(call(&mut c, due + 2.0, spend(1.0, false)));
        assert!(call(&mut c, due + 3.0, spend(2.0, true)));
        assert_eq!(c.figures().0, 53.0 + 5.0 + 2.0);
    }
}

//! A gate's spread (#37) as the gate keeps it: the settings and costs it was given, its
//! [`CreditBucket`] once a `/usage` reading made one, and when the next reading is due. The
//! gate sends the readings and asks [`Spending::ready`] before each admission; this decides
//! what a reading's answer (or its absence) means.

use crate::core::rules::credits::{Costs, CreditBucket, Spread};
use crate::core::rules::quota::Usage;
use crate::core::Millis;

/// What a call whose route is unknown is counted as, for the costs learned.
const NO_ROUTE: &str = "";

const HOUR_MS: Millis = 3_600_000.0;

/// Calls of routes whose cost is neither stated nor learned after which a reading is due at
/// once (a second after the last at the soonest): what they cost is measured before it can
/// overspend. A route costing 5 taken for 1 spends 25 credits before its reading, not a
/// refresh's worth five times over.
const EARLY_READING_CALLS: u32 = 5;

/// The soonest an early reading follows the last (`quota.refreshMs`'s floor).
const EARLY_READING_MS: Millis = crate::core::rules::credits::MIN_REFRESH_MS;

/// The spread's figures: the key's credits as the gate knows them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CreditFigures {
    /// The server's `used` as this process knows it (0 before a reading).
    pub used: f64,
    /// The period's limit (0 before a reading).
    pub limit: f64,
    /// The credit bucket's refill, per hour.
    pub per_hour: f64,
    /// Calls in queue while its head waits for credit.
    pub waiting_for_credit: usize,
    /// Calls admitted with no bucket to pace them: no reading had a usable answer yet.
    pub unpaced: u64,
    /// When the limit would be reached at the key's pace between the last two readings
    /// (`None`: not before the period's end, or no pace known yet).
    pub projected_end: Option<Millis>,
    /// The billing period's end, as the last reading said (`None`: before a reading).
    pub period_end: Option<Millis>,
}

/// A gate's spread: its bucket once read, and the readings' schedule.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Spending {
    spread: Spread,
    costs: Costs,
    bucket: Option<CreditBucket>,
    /// A reading has answered, usefully or not: calls no longer wait for the first.
    first_read: bool,
    /// When the last reading answered, usefully or not.
    last_read: Millis,
    /// No reading starts before this.
    next_reading: Millis,
    unpaced: u64,
}

impl Spending {
    /// A spread (validated by the caller) not read yet: the first call's reading is due.
    pub(crate) fn new(spread: Spread, costs: Costs) -> Spending {
        Spending {
            spread,
            costs,
            bucket: None,
            first_read: false,
            last_read: Millis::NEG_INFINITY,
            next_reading: Millis::NEG_INFINITY,
            unpaced: 0,
        }
    }

    /// Whether a reading is due at `now` (the gate starts one when a call waits).
    pub(crate) fn reading_due(&self, now: Millis) -> bool {
        now >= self.next_reading()
    }

    /// When the next reading is due: a refresh after the last, or soon after it when calls of
    /// routes whose cost is not known yet were sent (see [`EARLY_READING_CALLS`]) and the
    /// last reading answered (a `/usage` that fails is not asked again sooner).
    pub(crate) fn next_reading(&self) -> Millis {
        let answered = self.bucket.is_some_and(|b| b.read_at() >= self.last_read);
        match answered && self.costs.unlearned_calls() >= EARLY_READING_CALLS {
            true => self.next_reading.min(self.last_read + EARLY_READING_MS),
            false => self.next_reading,
        }
    }

    /// A reading goes now: what is taken from now on is not in its answer.
    pub(crate) fn sent(&mut self) {
        if let Some(bucket) = &mut self.bucket {
            bucket.sent();
        }
    }

    /// A reading's answer at `now` (`None`: no usable answer). The first usable one makes the
    /// bucket; later ones correct it; none leaves it as it is. The next reading is due a
    /// refresh later, or as the period ends (see [`CreditBucket::next_reading`]), and calls
    /// wait for no other.
    pub(crate) fn read(&mut self, now: Millis, usage: Option<Usage>) {
        self.first_read = true;
        self.last_read = now;
        if let Some(usage) = usage {
            match &mut self.bucket {
                Some(bucket) => bucket.read(now, usage, &mut self.costs),
                None => self.bucket = CreditBucket::start(self.spread, now, usage),
            }
        }
        let refresh = self.spread.refresh_ms;
        self.next_reading =
            (self.bucket.as_ref()).map_or(now + refresh, |b| b.next_reading(now, refresh));
    }

    /// What a call of `route` costs: as stated or learned, 1 when nothing is known.
    pub(crate) fn cost(&self, route: Option<&str>) -> f64 {
        self.costs.cost(route.unwrap_or(NO_ROUTE))
    }

    /// Whether what a call of `route` costs is stated (`quota.costs`), not learned.
    pub(crate) fn is_stated(&self, route: Option<&str>) -> bool {
        self.costs.is_stated(route.unwrap_or(NO_ROUTE))
    }

    /// Whether a call of `route` has its credits at `now`, or when it will (infinite: not
    /// before a reading, the first included); one that draws on the `reserve` (its lane's
    /// `reserve: true`) has them from the reserve when the spread has not. With no bucket
    /// after the first reading, the call goes unpaced.
    pub(crate) fn ready(
        &mut self,
        now: Millis,
        route: Option<&str>,
        reserve: bool,
    ) -> Result<(), Millis> {
        let cost = self.cost(route);
        match (&mut self.bucket, self.first_read) {
            (Some(bucket), _) if reserve => bucket.ready_reserved(now, cost),
            (Some(bucket), _) => bucket.ready(now, cost),
            (None, false) => Err(Millis::INFINITY),
            (None, true) => Ok(()),
        }
    }

    /// When a call of `route` joining behind `ahead` others could have its credits, taking
    /// each of them to cost what it does: `now` for one that draws on the `reserve` while the
    /// reserve has them; the next reading, at the earliest, when the bucket has not them before
    /// it (a new period's may). Before the first reading nothing is known, and nothing is
    /// predicted: `now`.
    pub(crate) fn predict(
        &mut self,
        now: Millis,
        ahead: usize,
        route: Option<&str>,
        reserve: bool,
    ) -> Millis {
        let cost = self.cost(route);
        let Some(bucket) = &mut self.bucket else {
            return now;
        };
        match reserve && bucket.ready_reserved(now, cost).is_ok() {
            true => now,
            false => match bucket.predict(now, ahead as f64 * cost, cost) {
                Millis::INFINITY => self.next_reading.max(now),
                at => at,
            },
        }
    }

    /// A call of `route` is admitted at `now` (it was [`ready`](Self::ready)): its credits
    /// are taken (from the reserve, for one that draws on the `reserve`, when the spread has
    /// not them), and it counts for the costs learned from the next reading's delta (an
    /// unpaced call has no reading before it to count from).
    pub(crate) fn take(&mut self, now: Millis, route: Option<&str>, reserve: bool) {
        let route = route.unwrap_or(NO_ROUTE);
        let cost = self.costs.cost(route);
        match &mut self.bucket {
            Some(bucket) => {
                self.costs.called(route);
                // Asked at this same `now`, it has them.
                let _ = match reserve {
                    true => bucket.take_reserved(now, cost),
                    false => bucket.take(now, cost),
                };
            }
            None => self.unpaced += 1,
        }
    }

    /// The settings it spreads with.
    pub(crate) fn spread(&self) -> Spread {
        self.spread
    }

    /// The costs stated, pattern and credits, in order.
    pub(crate) fn stated(&self) -> &[(String, f64)] {
        self.costs.stated()
    }

    /// The figures at `now`, with `waiting` calls in queue behind a head that waits for credit.
    pub(crate) fn figures(&self, now: Millis, waiting: usize) -> CreditFigures {
        let (used, limit, per_hour) = self.bucket.map_or((0.0, 0.0, 0.0), |b| {
            (b.used(), b.limit(), b.per_ms() * HOUR_MS)
        });
        CreditFigures {
            used,
            limit,
            per_hour,
            waiting_for_credit: waiting,
            unpaced: self.unpaced,
            projected_end: self.bucket.and_then(|b| b.projected_end(now)),
            period_end: self.bucket.map(|b| b.period_end()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(used: f64) -> Usage {
        Usage {
            used,
            limit: 1000.0,
            period_end: Some(950.0 * HOUR_MS),
        }
    }

    #[test]
    fn calls_wait_for_the_first_reading_and_go_unpaced_when_it_fails() {
        let mut s = Spending::new(Spread::DEFAULT, Costs::default());
        assert!(s.reading_due(0.0));
        assert_eq!(s.ready(0.0, None, false), Err(Millis::INFINITY));
        assert_eq!(s.predict(0.0, 5, None, false), 0.0, "nothing known");
        s.read(10.0, None);
        assert_eq!(s.ready(10.0, None, false), Ok(()));
        s.take(10.0, None, false);
        assert_eq!(s.figures(0.0, 0).unpaced, 1);
        assert!(!s.reading_due(10.0 + Spread::DEFAULT.refresh_ms - 1.0));
        // The next reading with an answer paces from then on.
        s.read(10.0 + Spread::DEFAULT.refresh_ms, Some(usage(0.0)));
        assert!(s.figures(0.0, 0).per_hour > 0.9);
    }

    #[test]
    fn a_later_reading_without_an_answer_leaves_the_bucket_as_it_is() {
        let mut s = Spending::new(Spread::DEFAULT, Costs::default());
        s.read(0.0, Some(usage(100.0)));
        let before = s.figures(0.0, 0);
        s.sent();
        s.read(HOUR_MS, None);
        assert_eq!(s.figures(0.0, 0), before);
        assert_eq!(s.next_reading(), HOUR_MS + Spread::DEFAULT.refresh_ms);
    }

    #[test]
    fn five_calls_of_an_unmeasured_route_make_a_reading_due_a_second_after_an_answered_one() {
        let mut s = Spending::new(Spread::DEFAULT, Costs::default());
        s.read(0.0, Some(usage(0.0)));
        for _ in 0..4 {
            s.take(10.0, Some("GET /x"), false);
        }
        assert_eq!(
            s.next_reading(),
            Spread::DEFAULT.refresh_ms,
            "four: not yet"
        );
        s.take(10.0, Some("GET /x"), false);
        assert_eq!(
            s.next_reading(),
            EARLY_READING_MS,
            "a second after the last"
        );
        // The early reading fails: the next is a refresh on, not a second.
        s.read(2_000.0, None);
        assert_eq!(s.next_reading(), 2_000.0 + Spread::DEFAULT.refresh_ms);
        // Answered, the route is measured: no early reading for it again.
        s.read(3_000.0, Some(usage(5.0)));
        for _ in 0..5 {
            s.take(3_010.0, Some("GET /x"), false);
        }
        assert_eq!(s.next_reading(), 3_000.0 + Spread::DEFAULT.refresh_ms);
    }

    #[test]
    fn a_prediction_counts_the_calls_ahead() {
        let mut s = Spending::new(Spread::DEFAULT, Costs::default());
        s.read(0.0, Some(usage(0.0)));
        // One credit an hour, one held at the start: the first call's credit now, an hour
        // later behind one other.
        for (ahead, hours) in [(0, 0.0), (1, 1.0)] {
            let at = s.predict(0.0, ahead, Some("GET /x"), false);
            assert!((at - hours * HOUR_MS).abs() <= 1.0, "{at}");
        }
        s.read(HOUR_MS, Some(usage(0.0)));
        assert_eq!(s.predict(HOUR_MS, 0, None, false), HOUR_MS, "a credit held");
    }
}

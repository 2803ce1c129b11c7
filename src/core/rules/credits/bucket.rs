//! The bucket that paces a key's credits to the end of its period ([`CreditBucket`]): its
//! refill, what it holds and when a call's credits come, and how each `/usage` reading corrects
//! it. It stands on the settings and hands the readings to the [`Costs`].

use super::costs::Costs;
use super::settings::Spread;
use crate::core::base::protocol;
use crate::core::rules::quota::Usage;
use crate::core::rules::scale::CostScale;
use crate::core::Millis;

/// Float slack, in credits: a wake-up computed for the exact refill instant must find the
/// credits there despite rounding.
const SLACK: f64 = protocol::SLACK;

/// The most of the credits left for the period the bucket ever holds.
const MOST_OF_LEFT: f64 = protocol::MOST_OF_LEFT;

/// A period end later than the bucket's by more than this is a new period: readings of the
/// same end made on clocks a few milliseconds apart (processes, a store) are one period.
const NEW_PERIOD_MS: Millis = protocol::NEW_PERIOD_MS;

/// What a new bucket holds at least (when it can hold that much): a credit, what a call
/// costs when nothing else is known.
const OPENING: f64 = protocol::OPENING_CREDITS;

/// A reading that finds its period's end already past is read again this much later.
const PAST_END_REREAD_MS: Millis = protocol::PAST_END_REREAD_MS;

/// A key's credits paced to the end of its period. Plain numbers, `Copy`: an authority can keep
/// it wherever a gate's state lives.
///
/// Counting: the bucket keeps its own view of the server's `used`: the
/// last reading plus what this process took since. A reading counts the calls the server had
/// when it answered, so the credits taken after the reading was sent ([`sent`](Self::sent))
/// are counted once, by this process: they are added to the reading's `used`, as not in it yet.
/// A call that overtakes the reading is counted twice until the next reading, which errs on the
/// side of spending less and never accumulates.
///
/// Others: what the server counted beyond this process's own count between two readings is
/// another process's spending; the bucket assumes it goes on at the same pace and leaves it
/// out of its own refill, so the key's total, not this process's part, follows the spread.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CreditBucket {
    spread: Spread,
    limit: f64,
    /// The period's end on the gate's clock.
    period_end: Millis,
    /// Credits per millisecond, set at each reading.
    rate: f64,
    /// Others' credits per millisecond, seen between the last two readings.
    others: f64,
    /// Credits held; below 0 after a call that costs more than the bucket holds (a debt).
    tokens: f64,
    /// The time the tokens were counted at.
    last: Millis,
    /// The server's `used` as this process knows it (see the type's docs).
    used: f64,
    /// Credits this process drew from the reserve this period.
    reserve_used: f64,
    /// Credits this process took since the reading in flight was sent.
    taken_since_sent: f64,
    /// When the last reading came.
    read_at: Millis,
    /// `used` as the last reading left it.
    read_used: f64,
    /// Credits the key spent per millisecond (everyone's) between the last two readings.
    pace: f64,
}

impl CreditBucket {
    /// The bucket a first reading at `now` makes; `None` when the reading has no period end
    /// (there is nothing to pace to). It opens with one refresh's refill, and at least one
    /// credit (what a call costs when nothing else is known), never more than it holds full
    /// (`burstMs` of the pace): a small plan's first call goes at once while the month has
    /// credit, as do a new period's first calls, while what is spent before the next reading
    /// corrects the bucket stays one interval's worth, even for a process restarting often.
    pub fn start(spread: Spread, now: Millis, usage: Usage) -> Option<CreditBucket> {
        let mut bucket = CreditBucket {
            spread,
            limit: usage.limit,
            period_end: usage.period_end?,
            rate: 0.0,
            others: 0.0,
            tokens: 0.0,
            last: now,
            used: usage.used,
            reserve_used: 0.0,
            taken_since_sent: 0.0,
            read_at: now,
            read_used: usage.used,
            pace: 0.0,
        };
        bucket.repace(now);
        bucket.tokens = bucket
            .cap()
            .min((bucket.rate * spread.refresh_ms).max(OPENING));
        Some(bucket)
    }

    /// When the reading after one at `now` is due: `refresh_ms` later, or at the period's end
    /// when that comes first (a new period's credit is read as it begins). When the end is
    /// already past (the server has not turned its period yet), as long again as it is past,
    /// from [`PAST_END_REREAD_MS`] up to `refresh_ms`: a second after, then 2, 4, 8 s... so
    /// calls resume within about a second of a late turn, and a server that never turns is
    /// read no more often than it would be doubling.
    pub(crate) fn next_reading(&self, now: Millis, refresh_ms: Millis) -> Millis {
        if self.period_end > now {
            (now + refresh_ms).min(self.period_end)
        } else {
            now + (now - self.period_end)
                .max(PAST_END_REREAD_MS)
                .min(refresh_ms)
        }
    }

    /// Numbers [`save`](Self::save) writes.
    pub(crate) const WORDS: usize = 15;

    /// The bucket as numbers, its settings first, for a slot shared by threads.
    pub(crate) fn save(&self) -> [f64; Self::WORDS] {
        let s = self.spread;
        [
            s.reserve,
            s.burst_ms,
            s.refresh_ms,
            self.limit,
            self.period_end,
            self.rate,
            self.others,
            self.tokens,
            self.last,
            self.used,
            self.reserve_used,
            self.taken_since_sent,
            self.read_at,
            self.read_used,
            self.pace,
        ]
    }

    /// The bucket [`save`](Self::save) wrote.
    pub(crate) fn load(words: [f64; Self::WORDS]) -> CreditBucket {
        let [reserve, burst_ms, refresh_ms, limit, period_end, rate, others, tokens, last, used, reserve_used, taken_since_sent, read_at, read_used, pace] =
            words;
        CreditBucket {
            spread: Spread {
                reserve,
                burst_ms,
                refresh_ms,
            },
            limit,
            period_end,
            rate,
            others,
            tokens,
            last,
            used,
            reserve_used,
            taken_since_sent,
            read_at,
            read_used,
            pace,
        }
    }

    /// A reading is being sent: what is taken from now on is not in its `used`.
    pub fn sent(&mut self) {
        self.taken_since_sent = 0.0;
    }

    /// A reading came at `now`: the bucket follows the server's `used` (plus what this process
    /// took since the reading was sent) and repaces; `costs` learn from what the server
    /// counted since the last reading, and say what this process's calls cost of it (by what
    /// they learned, or as taken when more: a user that counts no calls has only that). A new
    /// period (a later end) starts over.
    pub fn read(&mut self, now: Millis, usage: Usage, costs: &mut Costs) {
        self.correct(now, usage, |delta| costs.learn(delta));
    }

    /// A reading came at `now`, to a bucket every caller of the key takes from (an
    /// authority's, shared by threads or a fleet): `scale` learns from its delta what the
    /// callers' calls cost, and says what they cost of it (at least what was taken); the rest
    /// is others'.
    pub(crate) fn read_shared(&mut self, now: Millis, usage: Usage, scale: &mut CostScale) {
        self.correct(now, usage, |delta| scale.learn(delta));
    }

    /// [`read`](Self::read)'s rule; `ours` says what the callers' calls cost of a delta by
    /// what is learned (`None`: a period's turn; at least what was taken counts).
    fn correct(&mut self, now: Millis, usage: Usage, ours: impl FnOnce(Option<f64>) -> f64) {
        let used = usage.used + self.taken_since_sent;
        if usage
            .period_end
            .is_some_and(|end| end > self.period_end + NEW_PERIOD_MS)
        {
            ours(None);
            if let Some(fresh) = CreditBucket::start(self.spread, now, Usage { used, ..usage }) {
                *self = fresh;
            }
            return;
        }
        let delta = used - self.read_used;
        let taken = self.used - self.read_used;
        let ours = ours(Some(delta)).max(taken);
        self.refill(now);
        // What the callers' calls cost beyond what was taken for them (a cost learned only
        // now) is paid from the bucket: a debt, not spent again.
        self.tokens -= ours - taken;
        let seen = now - self.read_at;
        if seen > 0.0 {
            self.others = (delta - ours).max(0.0) / seen;
            self.pace = delta.max(0.0) / seen;
        }
        self.limit = usage.limit;
        self.used = used;
        self.read_used = used;
        self.read_at = now;
        self.taken_since_sent = 0.0;
        self.repace(now);
    }

    /// `cost` credits spent up to `now` outside the bucket (by processes on their own, at
    /// their share of the pace): counted as used, and paid from what the bucket gathered
    /// meanwhile, down to empty and no further (it was spent at the pace: no debt).
    pub(crate) fn spent(&mut self, now: Millis, cost: f64) {
        self.refill(now);
        self.tokens = self.tokens.min((self.tokens - cost).max(0.0));
        self.spend(cost);
    }

    /// Takes `share` of what the spread can pay from `now` and leaves the rest to others
    /// (counted as their pace until a reading measures theirs higher), and that share of
    /// what it holds when `held` says so: a process spreading on its own while the state it
    /// shares is out of reach.
    pub(crate) fn share(&mut self, now: Millis, share: f64, held: bool) {
        let time_left = self.period_end - now;
        if time_left > 0.0 {
            let whole = self.spread_left().max(0.0) / time_left;
            self.others = self.others.max(whole * (1.0 - share));
        }
        if held {
            self.tokens *= share;
        }
        self.repace(now);
    }

    /// Spends `cost` credits of the spread at `now`, or says when they will be there (a whole
    /// millisecond, never earlier). `Err(INFINITY)`: not before the next reading (the spread
    /// for the period is spent, or the period is over).
    pub fn take(&mut self, now: Millis, cost: f64) -> Result<(), Millis> {
        self.ready(now, cost)?;
        self.tokens -= cost;
        self.spend(cost);
        Ok(())
    }

    /// What [`take`](Self::take) would answer at `now`, spending nothing: a gate asks before
    /// the allowance's token, and takes once both are there.
    pub(crate) fn ready(&mut self, now: Millis, cost: f64) -> Result<(), Millis> {
        match self.predict(now, 0.0, cost) {
            at if at <= now => Ok(()),
            at => Err(at),
        }
    }

    /// When a call costing `cost` gets its credits (at most `now`, or a whole millisecond
    /// later) behind calls costing `before` in all, each taken as its credits come;
    /// infinite when the spread has not that many left (not before a reading). A call that
    /// costs more than the bucket can hold goes when the bucket is full, and leaves it in debt.
    pub(crate) fn predict(&mut self, now: Millis, before: f64, cost: f64) -> Millis {
        self.refill(now);
        let all = before + cost;
        if all > self.spread_left() + SLACK || self.used + all > self.limit + SLACK {
            return Millis::INFINITY;
        }
        let missing = before + cost.min(self.cap()) - self.tokens;
        if missing > SLACK {
            self.wait(now, missing)
        } else {
            now
        }
    }

    /// As [`take`](Self::take), for a lane with `reserve: true`: when the spread has not the
    /// credits now, they come from the reserve at once, never past the limit.
    pub fn take_reserved(&mut self, now: Millis, cost: f64) -> Result<(), Millis> {
        let spread = self.take(now, cost);
        if spread.is_err() && self.reserve_holds(cost) {
            self.reserve_used += cost;
            self.spend(cost);
            return Ok(());
        }
        spread
    }

    /// What [`take_reserved`](Self::take_reserved) would answer at `now`, spending nothing.
    pub(crate) fn ready_reserved(&mut self, now: Millis, cost: f64) -> Result<(), Millis> {
        match self.ready(now, cost) {
            Err(_) if self.reserve_holds(cost) => Ok(()),
            spread => spread,
        }
    }

    /// Whether `cost` more credits stay within the limit: what is left of it past the spread's
    /// share is the reserve.
    fn reserve_holds(&self, cost: f64) -> bool {
        self.used + cost <= self.limit + SLACK
    }

    /// When the last reading came.
    pub(crate) fn read_at(&self) -> Millis {
        self.read_at
    }

    /// Whether a reading after the first measured the key's spending (none yet, or nothing
    /// was spent between them).
    pub(crate) fn measured(&self) -> bool {
        self.pace > 0.0
    }

    /// The server's `used` as this process knows it.
    pub(crate) fn used(&self) -> f64 {
        self.used
    }

    /// The period's end, as the last reading said.
    pub(crate) fn period_end(&self) -> Millis {
        self.period_end
    }

    /// The period's limit.
    pub(crate) fn limit(&self) -> f64 {
        self.limit
    }

    /// The refill, in credits per millisecond.
    pub(crate) fn per_ms(&self) -> f64 {
        self.rate
    }

    /// When the limit would be reached at the pace the key spent between the last two
    /// readings, from `now`; `None` before two readings, with no spending, or when that comes
    /// after the period's end (the quota lasts the period).
    pub(crate) fn projected_end(&self, now: Millis) -> Option<Millis> {
        if self.pace <= 0.0 {
            return None;
        }
        let at = now + (self.limit - self.used).max(0.0) / self.pace;
        (at <= self.period_end).then_some(at)
    }

    /// Credits left of the spread: its share of the limit less what was spent outside the
    /// reserve.
    fn spread_left(&self) -> f64 {
        self.limit * (1.0 - self.spread.reserve) - (self.used - self.reserve_used)
    }

    /// The most the bucket holds now.
    fn cap(&self) -> f64 {
        (self.rate * self.spread.burst_ms).min(MOST_OF_LEFT * self.spread_left().max(0.0))
    }

    /// How long until `missing` credits refill, as a whole millisecond; infinite when the
    /// refill stops (no rate, or the period ends) before.
    fn wait(&self, now: Millis, missing: f64) -> Millis {
        if self.rate <= 0.0 {
            return Millis::INFINITY;
        }
        // Half the slack off, so a whole quotient is not rounded up a millisecond past it.
        let at = now + ((missing - SLACK / 2.0) / self.rate).ceil();
        if at > self.period_end {
            Millis::INFINITY
        } else {
            at
        }
    }

    /// Counts a spend in this process's view of `used`.
    fn spend(&mut self, cost: f64) {
        self.used += cost;
        self.taken_since_sent += cost;
    }

    fn refill(&mut self, now: Millis) {
        let until = now.min(self.period_end);
        if until > self.last {
            self.tokens = (self.tokens + (until - self.last) * self.rate).min(self.cap());
            self.last = until;
        }
    }

    /// The refill from `now`: what is left of the spread over what is left of the period, less
    /// others' pace; never negative.
    fn repace(&mut self, now: Millis) {
        let time_left = self.period_end - now;
        self.rate = if time_left > 0.0 {
            (self.spread_left() / time_left - self.others).max(0.0)
        } else {
            0.0
        };
        self.last = self.last.max(now.min(self.period_end));
        self.tokens = self.tokens.min(self.cap());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: Millis = 3_600_000.0;

    fn usage(used: f64, limit: f64, end: Millis) -> Usage {
        Usage {
            used,
            limit,
            period_end: Some(end),
        }
    }

    /// Read every hour.
    const HOURLY: Spread = Spread {
        refresh_ms: HOUR,
        ..Spread::DEFAULT
    };

    /// 1000 credits, 50 kept, 950 over 950 hours: one credit an hour, an hour's burst, starting
    /// full.
    fn hourly() -> CreditBucket {
        CreditBucket::start(HOURLY, 0.0, usage(0.0, 1000.0, 950.0 * HOUR)).unwrap()
    }

    #[test]
    fn projects_the_end_at_the_pace_between_the_last_two_readings() {
        let mut b = hourly();
        assert_eq!(b.projected_end(0.0), None, "one reading: no pace yet");
        b.sent();
        // 100 credits in 10 hours: 10 an hour, 900 left, 90 hours more.
        b.read(
            10.0 * HOUR,
            usage(100.0, 1000.0, 950.0 * HOUR),
            &mut Costs::default(),
        );
        assert_eq!(b.projected_end(10.0 * HOUR), Some(100.0 * HOUR));
        b.sent();
        // One credit in the next 10 hours: the limit comes after the period's end.
        b.read(
            20.0 * HOUR,
            usage(101.0, 1000.0, 950.0 * HOUR),
            &mut Costs::default(),
        );
        assert_eq!(b.projected_end(20.0 * HOUR), None);
    }

    #[test]
    fn no_period_end_nothing_to_pace() {
        let reading = Usage {
            period_end: None,
            ..usage(0.0, 10.0, 0.0)
        };
        assert_eq!(CreditBucket::start(Spread::DEFAULT, 0.0, reading), None);
    }

    #[test]
    fn opens_with_a_credit_so_a_small_plans_first_call_goes_at_once() {
        // 1000 credits, 5 % kept, over 950 hours: a credit an hour; a quarter of an hour's
        // refill is less than a credit, so it opens with one.
        let mut b = CreditBucket::start(Spread::DEFAULT, 0.0, usage(0.0, 1000.0, 950.0 * HOUR));
        let b = b.as_mut().unwrap();
        assert_eq!(b.take(0.0, 1.0), Ok(()), "the first call at once");
        assert_eq!(b.take(0.0, 1.0), Err(HOUR), "then the due pace");
        // The small plan: 1000 credits, 25 days left, a fresh process: 950 over 600
        // hours, 1.58 an hour; the first call at once, then one every 38 minutes.
        let mut b = CreditBucket::start(Spread::DEFAULT, 0.0, usage(0.0, 1000.0, 600.0 * HOUR));
        let b = b.as_mut().unwrap();
        assert_eq!(b.take(0.0, 1.0), Ok(()));
        let second = b.take(0.0, 1.0).unwrap_err();
        assert!((second - HOUR * 600.0 / 950.0).abs() < 2.0, "{second}");
        assert_eq!(b.take(second, 1.0), Ok(()));
        let third = b.take(second, 1.0).unwrap_err();
        assert!((third - 2.0 * second).abs() < 2.0, "{third}");
        // A call costing more than the bucket holds goes when it is full: 0.58 credits later.
        let mut b = CreditBucket::start(Spread::DEFAULT, 0.0, usage(0.0, 1000.0, 600.0 * HOUR));
        let at = b.as_mut().unwrap().take(0.0, 5.0).unwrap_err();
        assert!((at - 0.583 / 1.583 * HOUR).abs() < 2_000.0, "{at}");
        // A large plan opens with one refresh's refill: 100 credits an hour, 25 held.
        let mut b = CreditBucket::start(Spread::DEFAULT, 0.0, usage(0.0, 1e5, 950.0 * HOUR));
        let b = b.as_mut().unwrap();
        assert_eq!(b.take(0.0, 25.0), Ok(()));
        assert!(b.take(0.0, 1.0).is_err());
    }

    #[test]
    fn the_next_reading_is_due_by_the_periods_end() {
        let b = CreditBucket::start(Spread::DEFAULT, 0.0, usage(0.0, 1000.0, 10.0 * HOUR));
        let b = b.unwrap();
        let refresh = Spread::DEFAULT.refresh_ms;
        assert_eq!(b.next_reading(0.0, refresh), refresh, "a refresh later");
        let near = 10.0 * HOUR - 5_000.0;
        assert_eq!(b.next_reading(near, refresh), 10.0 * HOUR, "at the end");
        // The server has not turned yet: soon again, then less often.
        let end = 10.0 * HOUR;
        for (past, gap) in [(3.0, 1_000.0), (4_000.0, 4_000.0), (HOUR, refresh)] {
            assert_eq!(b.next_reading(end + past, refresh), end + past + gap);
        }
    }

    #[test]
    fn waits_exactly_for_the_refill() {
        let mut b = hourly();
        assert!((b.per_ms() * HOUR - 1.0).abs() < 1e-12);
        assert_eq!(b.take(0.0, 1.0), Ok(()), "an hour's refill, full");
        let at = b.take(0.0, 1.0).unwrap_err();
        assert_eq!(at, HOUR);
        assert_eq!(b.take(at - 1.0, 1.0), Err(at), "not a millisecond early");
        assert_eq!(b.take(at, 1.0), Ok(()));
    }

    #[test]
    fn holds_at_most_five_percent_of_what_is_left() {
        // 100 credits left over 10 hours: 10 an hour, but at most 5 held.
        let mut b = CreditBucket::start(
            Spread {
                reserve: 0.0,
                ..HOURLY
            },
            0.0,
            usage(0.0, 100.0, 10.0 * HOUR),
        )
        .unwrap();
        assert_eq!(b.take(0.0, 5.0), Ok(()));
        assert!(b.take(0.0, 0.5).is_err());
    }

    #[test]
    fn a_call_dearer_than_the_bucket_goes_when_it_is_full_and_leaves_a_debt() {
        let mut b = hourly();
        assert_eq!(b.take(0.0, 3.0), Ok(()));
        // A debt of 2: full again after 3 hours.
        assert_eq!(b.take(0.0, 1.0), Err(3.0 * HOUR));
        assert_eq!(b.take(3.0 * HOUR, 3.0), Ok(()));
    }

    #[test]
    fn the_spread_once_spent_waits_for_a_reading_and_the_reserve_for_lanes_that_ask() {
        let end = 950.0 * HOUR;
        let mut b = hourly();
        b.sent();
        b.read(HOUR, usage(950.0, 1000.0, end), &mut Costs::default());
        assert_eq!(b.per_ms(), 0.0);
        assert_eq!(b.take(HOUR, 1.0), Err(Millis::INFINITY));
        assert_eq!(b.ready_reserved(HOUR, 49.0), Ok(()));
        assert_eq!(b.take_reserved(HOUR, 49.0), Ok(()));
        assert_eq!(b.take_reserved(HOUR, 1.0), Ok(()));
        assert_eq!(
            b.take_reserved(HOUR, 0.5),
            Err(Millis::INFINITY),
            "never past the limit"
        );
        assert_eq!(b.ready_reserved(HOUR, 0.5), Err(Millis::INFINITY));
        assert_eq!(b.used(), 1000.0);
    }

    #[test]
    fn the_reserve_drawn_leaves_the_spread_as_it_was() {
        let mut b = hourly();
        b.take(0.0, 1.0).unwrap();
        assert_eq!(b.take_reserved(0.0, 10.0), Ok(()));
        b.sent();
        b.read(
            HOUR,
            usage(11.0, 1000.0, 950.0 * HOUR),
            &mut Costs::default(),
        );
        assert!(
            (b.per_ms() * HOUR - 1.0).abs() < 1e-12,
            "{}",
            b.per_ms() * HOUR
        );
    }

    #[test]
    fn credits_taken_while_a_reading_is_out_are_counted_once() {
        let mut b = hourly();
        b.take(0.0, 1.0).unwrap();
        b.sent();
        b.take(HOUR, 1.0).unwrap();
        // The server counted the first call, not the second.
        b.read(
            HOUR + 5.0,
            usage(1.0, 1000.0, 950.0 * HOUR),
            &mut Costs::default(),
        );
        assert_eq!(b.used(), 2.0);
        let alone = (950.0 - 2.0) / (949.0 * HOUR - 5.0);
        assert!((b.per_ms() - alone).abs() < 1e-15, "nobody else spent");
    }

    #[test]
    fn what_others_spend_comes_off_the_refill() {
        let mut b = hourly();
        b.take(0.0, 1.0).unwrap();
        b.sent();
        // The server counted 5 more than this process took in 10 hours: half a credit an hour
        // elsewhere.
        let reading = usage(6.0, 1000.0, 950.0 * HOUR);
        b.read(10.0 * HOUR, reading, &mut Costs::default());
        let alone = (950.0 - 6.0) / 940.0;
        let per_hour = b.per_ms() * HOUR;
        assert!((per_hour - (alone - 0.5)).abs() < 1e-9, "{per_hour}");
    }

    #[test]
    fn a_learned_cost_is_no_one_elses_spending() {
        let mut b = hourly();
        let mut costs = Costs::default();
        b.take(0.0, costs.cost("GET /*/history")).unwrap();
        costs.called("GET /*/history");
        b.sent();
        // The call cost 5: this process's, by what was learned.
        b.read(HOUR, usage(5.0, 1000.0, 950.0 * HOUR), &mut costs);
        assert_eq!(costs.cost("GET /*/history"), 5.0);
        let alone = (950.0 - 5.0) / 949.0;
        let per_hour = b.per_ms() * HOUR;
        assert!((per_hour - alone).abs() < 1e-9, "{per_hour}");
    }

    #[test]
    fn a_later_period_end_starts_over() {
        let mut b = hourly();
        b.take(0.0, 1.0).unwrap();
        b.sent();
        let next = usage(0.0, 2000.0, 1900.0 * HOUR);
        b.read(950.0 * HOUR, next, &mut Costs::default());
        assert_eq!((b.used(), b.limit()), (0.0, 2000.0));
        assert_eq!(b.take(950.0 * HOUR, 1.0), Ok(()));
    }
}

//! The spread (#37): a key's quota paced to the end of its billing period, so a busy key spends
//! its month evenly instead of running dry on day 10. A [`CreditBucket`] refills at what is left
//! of the spread over what is left of the period, and every `/usage` reading recomputes it from
//! the server's `used` (what others spent counts). [`Costs`] says what a call costs in credits:
//! stated per route (`quota.costs`), or learned from the readings' deltas.

use crate::core::rules::allowance::{positive, ConfigError};
use crate::core::rules::classify::valid_method;
use crate::core::rules::quota::Usage;
use crate::core::rules::routes::MAX_ROUTES;
use crate::core::rules::scale::CostScale;
use crate::core::Millis;

/// Float slack, in credits: a wake-up computed for the exact refill instant must find the
/// credits there despite rounding.
const SLACK: f64 = 1e-9;

/// The most of the credits left for the period the bucket ever holds.
const MOST_OF_LEFT: f64 = 0.05;

/// A period end later than the bucket's by more than this is a new period: readings of the
/// same end made on clocks a few milliseconds apart (processes, a store) are one period.
const NEW_PERIOD_MS: Millis = 1_000.0;

/// The settings of the spread, read as `quota`.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize),
    serde(rename_all = "camelCase")
)]
pub struct Spread {
    /// The share of the limit kept for lanes with `reserve: true`, in [0, 1).
    pub reserve: f64,
    /// The most the bucket holds, as milliseconds of its refill.
    pub burst_ms: f64,
    /// How often `/usage` is read.
    pub refresh_ms: f64,
}

impl Default for Spread {
    fn default() -> Self {
        Spread::DEFAULT
    }
}

/// `quota: { spread, reserve, burstMs, refreshMs, costs }` as given (`None`: left out);
/// `costs` as read (`C`: the bindings first take it as it is, then read it with
/// [`costs`](Self::costs)).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SpreadGiven<C = Vec<(String, f64)>> {
    /// Pace the credits to the period's end.
    pub spread: Option<bool>,
    /// [`Spread::reserve`].
    pub reserve: Option<f64>,
    /// [`Spread::burst_ms`].
    pub burst_ms: Option<f64>,
    /// [`Spread::refresh_ms`].
    pub refresh_ms: Option<f64>,
    /// Route patterns and what a call of each costs.
    pub costs: C,
}

impl<C> SpreadGiven<C> {
    /// The same, its `costs` read by `read`.
    pub fn costs<D, E>(self, read: impl FnOnce(C) -> Result<D, E>) -> Result<SpreadGiven<D>, E> {
        Ok(SpreadGiven {
            spread: self.spread,
            reserve: self.reserve,
            burst_ms: self.burst_ms,
            refresh_ms: self.refresh_ms,
            costs: read(self.costs)?,
        })
    }
}

impl SpreadGiven {
    /// What was given, checked (see `Spread::given`).
    pub fn spread(self) -> Result<Option<(Spread, Costs)>, ConfigError> {
        let settings = [self.reserve, self.burst_ms, self.refresh_ms];
        Spread::given(self.spread, settings, self.costs)
    }
}

impl Spread {
    /// 5 % kept in reserve, an hour's refill at most, a reading every 15 minutes.
    pub const DEFAULT: Spread = Spread {
        reserve: 0.05,
        burst_ms: 3_600_000.0,
        refresh_ms: 900_000.0,
    };

    /// `quota: { spread, reserve, burstMs, refreshMs, costs }` as given (`None`: left out),
    /// the defaults filling in, every value checked: the spread and its costs when `spread` is
    /// true; nothing when it is false or left out (the quota is then guarded as before).
    pub(crate) fn given(
        spread: Option<bool>,
        [reserve, burst_ms, refresh_ms]: [Option<f64>; 3],
        costs: Vec<(String, f64)>,
    ) -> Result<Option<(Spread, Costs)>, ConfigError> {
        let d = Spread::DEFAULT;
        let settings = Spread {
            reserve: reserve.unwrap_or(d.reserve),
            burst_ms: burst_ms.unwrap_or(d.burst_ms),
            refresh_ms: refresh_ms.unwrap_or(d.refresh_ms),
        }
        .validate()?;
        let costs = Costs::new(costs)?;
        Ok(spread.unwrap_or(false).then_some((settings, costs)))
    }

    /// Checks `reserve` is in [0, 1) and the times are finite and above 0.
    pub fn validate(self) -> Result<Self, ConfigError> {
        if !(self.reserve >= 0.0 && self.reserve < 1.0) {
            return Err(ConfigError::OutOfRange {
                field: "quota.reserve",
                expected: "a number from 0 up to (not including) 1",
                got: self.reserve,
            });
        }
        positive("quota.burstMs", self.burst_ms)?;
        positive("quota.refreshMs", self.refresh_ms)?;
        Ok(self)
    }
}

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
    /// (there is nothing to pace to). It starts holding one refresh's refill (at most full):
    /// light demand's first calls (after a start, a new period) go at once, while what is
    /// spent before the next reading corrects the bucket stays one interval's worth, even for
    /// calls whose cost is not learned yet, or a process restarting often.
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
        bucket.tokens = bucket.cap().min(bucket.rate * spread.refresh_ms);
        Some(bucket)
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
        let ours = ours(Some(delta)).max(self.used - self.read_used);
        self.refill(now);
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

    /// The server's `used` as this process knows it.
    pub(crate) fn used(&self) -> f64 {
        self.used
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

/// What a call costs in credits, by route: stated (`quota.costs`, a route pattern to credits),
/// or learned from the readings, or 1 (what the API says most calls cost).
///
/// A pattern matches the end of a route's path segment by segment, `*` standing for any one
/// segment, after an optional method (`GET /events/*/odds/history` matches
/// `GET /*/events/*/odds/history`); the pattern with the most segments wins, the first of
/// those in order.
///
/// Learning: the rule's user counts the calls it sends per route ([`called`](Self::called)) and
/// hands the costs to each reading ([`CreditBucket::read`]), which has them learn from what the
/// server counted since the last one (its delta). What the stated routes cost comes off the
/// delta; what is left is the other routes'. One route called in the interval: its cost
/// is what is left over its calls. Several: their costs are all scaled by what is left over
/// what they were thought to cost, so their sum is right but not their ratio, until an interval
/// calls one of them alone. Another process spending the same key reads as a higher cost here
/// (the fleet's count of calls, not this process's, removes that).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Costs {
    stated: Vec<(String, f64)>,
    /// What each unstated route was learned to cost. This and `calls` are vectors searched in
    /// order: a credential has a handful of routes (at most [`MAX_ROUTES`]), and each hashed
    /// table was another copy of its code in the module.
    learned: Vec<(String, f64)>,
    /// Calls per route since the last delta, in the order of their routes' first calls.
    calls: Vec<(String, u32)>,
}

/// The value kept for `route` in `pairs`.
fn value_of<'a, T>(pairs: &'a mut [(String, T)], route: &str) -> Option<&'a mut T> {
    let (_, value) = pairs.iter_mut().find(|(r, _)| r == route)?;
    Some(value)
}

impl Costs {
    /// Costs with these stated: each a route pattern (see the type's docs) and a finite
    /// number >= 0, at most as many as the routes a credential's calls are told apart by.
    pub fn new(stated: Vec<(String, f64)>) -> Result<Costs, ConfigError> {
        if stated.len() > MAX_ROUTES {
            return Err(ConfigError::OutOfRange {
                field: "quota.costs",
                expected:
                    "at most 256 route patterns (the routes a credential's calls are told apart by)",
                got: stated.len() as f64,
            });
        }
        for (pattern, credits) in &stated {
            if !is_pattern(pattern) {
                return Err(ConfigError::Unsupported {
                    field: "quota.costs",
                    with: "takes route patterns as keys: a path, `*` for any one segment, \
                           after an optional method (`GET /events/*/odds/history`)",
                });
            }
            if !(credits.is_finite() && *credits >= 0.0) {
                return Err(ConfigError::OutOfRange {
                    field: "quota.costs",
                    expected: "credits, a finite number >= 0",
                    got: *credits,
                });
            }
        }
        Ok(Costs {
            stated,
            ..Costs::default()
        })
    }

    /// The costs stated, pattern and credits, in order.
    pub(crate) fn stated(&self) -> &[(String, f64)] {
        &self.stated
    }

    /// What a call of `route` costs.
    // Never inlined: one copy for its callers (smaller gzipped).
    #[inline(never)]
    pub fn cost(&self, route: &str) -> f64 {
        self.stated_cost(route)
            .or_else(|| {
                self.learned
                    .iter()
                    .find(|(r, _)| r == route)
                    .map(|&(_, c)| c)
            })
            .unwrap_or(1.0)
    }

    /// Whether what a call of `route` costs is stated.
    pub(crate) fn is_stated(&self, route: &str) -> bool {
        self.stated_cost(route).is_some()
    }

    /// A call of `route` was sent.
    pub fn called(&mut self, route: &str) {
        if let Some(n) = value_of(&mut self.calls, route) {
            *n += 1;
        } else if self.calls.len() < MAX_ROUTES {
            self.calls.push((route.to_owned(), 1));
        }
    }

    /// Learns from a reading's delta (`None` forgets the calls counted, as across a period's
    /// turn) over the calls counted since the last one. Returns what those calls cost, by
    /// what is known now.
    fn learn(&mut self, delta: Option<f64>) -> f64 {
        let calls = std::mem::take(&mut self.calls);
        let Some(delta) = delta else {
            return 0.0;
        };
        let mut left = delta;
        let (mut thought, mut unknown) = (0.0, 0.0);
        for (route, n) in &calls {
            let n = *n;
            match self.stated_cost(route) {
                Some(credits) => left -= credits * f64::from(n),
                None => {
                    thought += self.cost(route) * f64::from(n);
                    unknown += f64::from(n);
                }
            }
        }
        let left = left.max(0.0);
        for (route, _) in &calls {
            if self.stated_cost(route).is_some() {
                continue;
            }
            let cost = if thought > 0.0 {
                self.cost(route) * left / thought
            } else {
                left / unknown
            };
            if let Some(kept) = value_of(&mut self.learned, route) {
                *kept = cost;
            } else if self.learned.len() < MAX_ROUTES {
                self.learned.push((route.clone(), cost));
            }
        }
        calls
            .iter()
            .map(|(route, n)| self.cost(route) * f64::from(*n))
            .sum()
    }

    fn stated_cost(&self, route: &str) -> Option<f64> {
        let (method, path) = route.split_once(' ').unwrap_or(("", route));
        let mut best: Option<(usize, f64)> = None;
        for (pattern, credits) in &self.stated {
            let (want, pattern) = match pattern.split_once(' ') {
                Some((want, rest)) => (Some(want), rest),
                None => (None, pattern.as_str()),
            };
            let segments = pattern.trim_matches('/').split('/');
            let mut route_segments = path.trim_matches('/').split('/').rev();
            let n = segments.clone().count();
            let matches = want.is_none_or(|m| m.eq_ignore_ascii_case(method))
                && segments
                    .rev()
                    .all(|s| route_segments.next().is_some_and(|r| s == "*" || s == r));
            if matches && best.is_none_or(|(most, _)| n > most) {
                best = Some((n, *credits));
            }
        }
        best.map(|(_, credits)| credits)
    }
}

/// Whether `pattern` is a route pattern: a path (a segment at least, no spaces) after an
/// optional method.
fn is_pattern(pattern: &str) -> bool {
    let (method, path) = pattern.split_once(' ').unwrap_or(("GET", pattern));
    valid_method(method)
        && !path.trim_matches('/').is_empty()
        && path.bytes().all(|b| b > b' ' && b != 0x7f)
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
    fn refuses_settings_out_of_range_naming_the_option() {
        for (spread, field) in [
            (
                Spread {
                    reserve: 1.0,
                    ..Spread::DEFAULT
                },
                "quota.reserve",
            ),
            (
                Spread {
                    reserve: -0.1,
                    ..Spread::DEFAULT
                },
                "quota.reserve",
            ),
            (
                Spread {
                    reserve: f64::NAN,
                    ..Spread::DEFAULT
                },
                "quota.reserve",
            ),
            (
                Spread {
                    burst_ms: 0.0,
                    ..Spread::DEFAULT
                },
                "quota.burstMs",
            ),
            (
                Spread {
                    refresh_ms: f64::INFINITY,
                    ..Spread::DEFAULT
                },
                "quota.refreshMs",
            ),
        ] {
            let message = spread.validate().unwrap_err().to_string();
            assert!(
                message.starts_with(&format!("`{field}` must be")),
                "{message}"
            );
        }
        assert!(Spread {
            reserve: 0.0,
            ..Spread::DEFAULT
        }
        .validate()
        .is_ok());
        let costs = Costs::new(vec![("/events".into(), -1.0)]).unwrap_err();
        assert!(costs.to_string().contains("quota.costs"));
    }

    #[test]
    fn reads_the_options_with_their_defaults_and_checks_them_even_when_off() {
        let none = [None; 3];
        assert_eq!(Spread::given(None, none, vec![]), Ok(None));
        assert_eq!(Spread::given(Some(false), none, vec![]), Ok(None));
        let (spread, costs) = Spread::given(Some(true), none, vec![]).unwrap().unwrap();
        assert_eq!(spread, Spread::DEFAULT);
        assert_eq!(costs.cost("GET /v1/events"), 1.0);
        let given = [Some(0.0), Some(1000.0), Some(500.0)];
        let route = ("GET /events/*/odds/history".to_owned(), 5.0);
        let (spread, costs) = Spread::given(Some(true), given, vec![route])
            .unwrap()
            .unwrap();
        assert_eq!(
            (spread.reserve, spread.burst_ms, spread.refresh_ms),
            (0.0, 1000.0, 500.0)
        );
        assert_eq!(costs.cost("GET /v1/events/*/odds/history"), 5.0);
        let off_but_wrong = Spread::given(Some(false), [Some(2.0), None, None], vec![]);
        assert!(off_but_wrong
            .unwrap_err()
            .to_string()
            .contains("quota.reserve"));
        for pattern in ["", "/", "GET ", "G T /events", "/events /odds", "(GET) /x"] {
            let refused = Costs::new(vec![(pattern.into(), 1.0)])
                .unwrap_err()
                .to_string();
            assert!(
                refused.starts_with("`quota.costs` takes route patterns"),
                "{refused}"
            );
        }
        let many = (0..=MAX_ROUTES).map(|i| (format!("/r{i}"), 1.0)).collect();
        assert!(Costs::new(many)
            .unwrap_err()
            .to_string()
            .contains("at most 256"));
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
    fn starts_with_one_refreshs_refill() {
        let mut b = CreditBucket::start(Spread::DEFAULT, 0.0, usage(0.0, 1000.0, 950.0 * HOUR));
        let b = b.as_mut().unwrap();
        assert_eq!(b.take(0.0, 0.25), Ok(()), "a quarter of an hour's refill");
        assert_eq!(b.take(0.0, 0.25), Err(HOUR / 4.0));
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

    #[test]
    fn stated_costs_match_the_end_of_the_route_and_come_first() {
        let mut costs = Costs::new(vec![
            ("/odds/history".into(), 3.0),
            ("GET /events/*/odds/history".into(), 5.0),
            ("POST /bets".into(), 2.0),
        ])
        .unwrap();
        assert_eq!(
            costs.cost("GET /*/events/*/odds/history"),
            5.0,
            "the longest"
        );
        assert_eq!(costs.cost("GET /*/sports/*/odds/history"), 3.0);
        assert_eq!(costs.cost("GET /*/bets"), 1.0, "another method");
        assert_eq!(costs.cost("POST /*/bets"), 2.0);
        costs.called("GET /*/events/*/odds/history");
        assert_eq!(
            costs.learn(Some(40.0)),
            5.0,
            "the call costs what is stated"
        );
        assert_eq!(
            costs.cost("GET /*/events/*/odds/history"),
            5.0,
            "stated, not learned"
        );
    }

    #[test]
    fn learns_a_route_called_alone_and_scales_several() {
        let mut costs = Costs::new(vec![("/usage".into(), 0.0)]).unwrap();
        let (a, b) = ("GET /*/a", "GET /*/b");
        for _ in 0..4 {
            costs.called(a);
        }
        costs.called("GET /*/usage");
        assert_eq!(costs.learn(Some(20.0)), 20.0);
        assert_eq!(costs.cost(a), 5.0);
        // Two routes: thought to cost 5 + 1, the server counted 12: both doubled.
        costs.called(a);
        costs.called(b);
        assert_eq!(costs.learn(Some(12.0)), 12.0);
        assert_eq!((costs.cost(a), costs.cost(b)), (10.0, 2.0));
        costs.called(b);
        costs.learn(None);
        assert_eq!(costs.learn(Some(7.0)), 0.0, "no calls counted");
        assert_eq!(
            costs.cost(b),
            2.0,
            "a period's turn forgets the calls counted"
        );
    }
}

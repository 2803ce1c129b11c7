//! `simulate({ quota })` (#37): the key's monthly credits on the virtual clock. The server
//! charges each answered call its credits (`quota.costs`, else 1), refuses with the API's
//! quota answer once they are spent, and answers `/usage` with its count; the run ends with
//! the period, and [`MonthReport`] says how the credits went, slice by slice.

use std::cell::RefCell;
use std::rc::Rc;

use super::server::{Allowances, Arrival, Reply, Server};
use super::world::World;
use crate::core::gate::action::End;
use crate::core::rules::allowance::{at_least, positive, ConfigError};
use crate::core::rules::credits::{Costs, Spread};
use crate::core::rules::quota::Usage;
use crate::core::rules::routes::route_of;
use crate::core::Millis;

/// A day, in ms.
pub const DAY_MS: Millis = 86_400_000.0;

/// A call admitted this long after it started was held (for credit, at a month's pace).
const HELD_MS: Millis = 1_000.0;

/// The most periods one run may hold.
const MOST_PERIODS: f64 = 12.0;

/// `quota: { limit, periodMs | days, used, periods, spread, reserve, burstMs, refreshMs, costs }` as
/// given (`None`: left out); `costs` as read (`C`: the bindings first take it as it is, then
/// read it with [`costs`](Self::costs)).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SimQuotaGiven {
    /// Credits in the period.
    pub limit: Option<f64>,
    /// The period's length, in ms.
    pub period_ms: Option<f64>,
    /// The period's length, in days.
    pub days: Option<f64>,
    /// Credits already used when the run starts.
    pub used: Option<f64>,
    /// Periods the run holds, one after another (each starts with nothing used).
    pub periods: Option<f64>,
    /// The gates spread the credits to the period's end.
    pub spread: Option<bool>,
    /// `quota.reserve`, as `createFetch` takes it.
    pub reserve: Option<f64>,
    /// `quota.burstMs`.
    pub burst_ms: Option<f64>,
    /// `quota.refreshMs`.
    pub refresh_ms: Option<f64>,
    /// Route patterns and what a call of each costs: the server charges it, the gates are
    /// told it.
    pub costs: Vec<(String, f64)>,
}

/// The month asked for, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct SimQuota {
    /// Credits in the period.
    pub limit: f64,
    /// The period's length: it starts used by [`used`](Self::used) at 0 and ends here.
    pub period_ms: Millis,
    /// Credits used at 0.
    pub used: f64,
    /// Periods one after another: the run ends with the last; the server's count starts
    /// over at each turn.
    pub periods: u32,
    /// What calls cost, by route.
    pub costs: Costs,
    /// The gates' spread, when they spread.
    pub spread: Option<(Spread, Costs)>,
}

impl SimQuotaGiven {
    /// The month asked for: 30 days, nothing used, no spread where left out; `createFetch`'s
    /// spread defaults. Errors name the field (`quota.limit`).
    pub fn quota(self) -> Result<SimQuota, ConfigError> {
        let limit = self.limit.ok_or(ConfigError::Missing {
            field: "quota.limit",
        })?;
        let period_ms = match (self.period_ms, self.days) {
            (Some(_), Some(_)) => {
                return Err(ConfigError::Shape(
                    "Choose one of `quota.periodMs` and `quota.days`",
                ))
            }
            (Some(ms), None) => positive("quota.periodMs", ms)?,
            (None, Some(days)) => positive("quota.days", days)? * DAY_MS,
            (None, None) => 30.0 * DAY_MS,
        };
        let used = self.used.unwrap_or(0.0);
        let periods = self.periods.unwrap_or(1.0);
        if !(periods.fract() == 0.0 && (1.0..=MOST_PERIODS).contains(&periods)) {
            return Err(ConfigError::OutOfRange {
                field: "quota.periods",
                expected: "a whole number from 1 to 12",
                got: periods,
            });
        }
        let settings = [self.reserve, self.burst_ms, self.refresh_ms];
        Ok(SimQuota {
            limit: positive("quota.limit", limit)?,
            period_ms,
            used: at_least("quota.used", used, 0.0, "a finite number >= 0")?,
            periods: periods as u32,
            costs: Costs::new(self.costs.clone())?,
            spread: Spread::given(self.spread, settings, self.costs)?,
        })
    }
}

impl SimQuota {
    /// How long the run is: every period, one after another.
    pub fn run_ms(&self) -> Millis {
        self.period_ms * f64::from(self.periods)
    }

    /// How long a slice of the report is: a day when the period holds two or more, else a
    /// tenth of the period.
    fn slice_ms(&self) -> Millis {
        match self.period_ms >= 2.0 * DAY_MS {
            true => DAY_MS,
            false => self.period_ms / 10.0,
        }
    }

    /// What an even spend puts in each whole slice of the first period: the credits left at 0
    /// (less the reserve when the gates spread) over the period.
    fn even(&self) -> f64 {
        let kept = self.spread.as_ref().map_or(0.0, |(s, _)| s.reserve);
        let left = (self.limit * (1.0 - kept) - self.used).max(0.0);
        left * self.slice_ms() / self.period_ms
    }
}

/// What the server counted.
#[derive(Debug)]
pub struct Meter {
    quota: SimQuota,
    /// The period counted now (0 first).
    period: u32,
    used: f64,
    /// Credits spent in each slice.
    spent: Vec<f64>,
    /// When the server first refused a call for the spent quota.
    exhausted_at: Option<Millis>,
}

/// [`Allowances`] that charge credits: a call the allowance answers with a 200 is charged its
/// cost; one the credits left cannot pay for gets the quota's 429.
pub(crate) struct Metered {
    /// The allowance behind the meter.
    pub inner: Allowances,
    /// What it counted, shared with the report.
    pub meter: Rc<RefCell<Meter>>,
}

impl Metered {
    /// `inner`, charging as `quota` says.
    pub fn new(inner: Allowances, quota: &SimQuota) -> Metered {
        let slices = (quota.run_ms() / quota.slice_ms() - 1e-9).ceil().max(1.0) as usize;
        let meter = Meter {
            quota: quota.clone(),
            period: 0,
            used: quota.used,
            spent: vec![0.0; slices],
            exhausted_at: None,
        };
        Metered {
            inner,
            meter: Rc::new(RefCell::new(meter)),
        }
    }
}

impl Meter {
    /// Turns to the period `now` is in: the count starts over (the last period runs on past
    /// its end, as a server late to turn does).
    fn turn(&mut self, now: Millis) {
        let period = ((now / self.quota.period_ms) as u32).min(self.quota.periods - 1);
        if period > self.period {
            self.period = period;
            self.used = 0.0;
        }
    }
}

impl Server for Metered {
    fn reply(&mut self, now: Millis, attempt: &Arrival) -> Reply {
        let mut m = self.meter.borrow_mut();
        m.turn(now);
        let cost = m.quota.costs.cost(&route_of(attempt.method, attempt.url));
        if m.used + cost > m.quota.limit {
            m.exhausted_at.get_or_insert(now);
            let spent = Reply::status(429, &[]).after(self.inner.latency_ms);
            return spent.saying("quota_exceeded", "Monthly API credits exhausted");
        }
        let reply = self.inner.reply(now, attempt);
        if let Reply::Read { status: 200, .. } | Reply::Status { status: 200, .. } = reply {
            m.used += cost;
            let slice = (now / m.quota.slice_ms()) as usize;
            let last = m.spent.len() - 1;
            m.spent[slice.min(last)] += cost;
        }
        reply
    }

    fn usage(&mut self, now: Millis) -> Option<Usage> {
        let mut m = self.meter.borrow_mut();
        m.turn(now);
        Some(Usage {
            used: m.used,
            limit: m.quota.limit,
            period_end: Some(m.quota.period_ms * f64::from(m.period + 1)),
        })
    }
}

/// How a month's credits went (`simulate({ quota })`'s `quota`).
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize),
    serde(rename_all = "camelCase")
)]
pub struct MonthReport {
    /// Credits in the period.
    pub limit: f64,
    /// Credits the server counted at the (last) period's end.
    pub used: f64,
    /// Whether the gates spread the credits.
    pub spread: bool,
    /// The period's length, in ms.
    pub period_ms: Millis,
    /// Periods the run held.
    pub periods: u32,
    /// Calls made.
    pub wanted: usize,
    /// Calls sent (their first attempt went out).
    pub sent: usize,
    /// When the first call went out (`null`: none did).
    pub first_sent_ms: Option<Millis>,
    /// For each period after the first, how long its first call sent waited in it: from the
    /// period's start, or from the call's own start if later (`null`: none went).
    pub resumed_ms: Vec<Option<Millis>>,
    /// A slice's length: a day, or a tenth of a short period.
    pub slice_ms: Millis,
    /// Credits spent in each slice.
    pub spent: Vec<f64>,
    /// What an even spend of the credits left (less the reserve, when spreading) puts in a
    /// whole slice.
    pub even: f64,
    /// When the server first refused a call for the spent quota (`null`: it never did).
    pub exhausted_at_ms: Option<Millis>,
    /// `/usage` readings the gates made.
    pub readings: usize,
    /// Calls refused for the spent quota: the server's answer, or the gate's at once.
    pub refused: usize,
    /// Calls admitted a second or more after they started: held for credit (or tokens).
    pub held: usize,
    /// Calls still waiting when the period ended.
    pub waiting: usize,
}

impl MonthReport {
    /// The month `world` ran, counted by `meter`.
    pub fn of(world: &World, meter: &Meter) -> MonthReport {
        let log = &world.log;
        let refused = (log.settled.iter())
            .filter(|(i, (_, end))| match end {
                End::Exhausted { .. } => true,
                End::Deliver => log.outcomes.get(i).and_then(|o| *o.last()?) == Some(429),
                _ => false,
            })
            .count();
        let mut first = crate::core::base::indexed::Indexed::default();
        for s in log.sent.iter().filter(|s| !s.probe) {
            first.entry(s.index, || s.at);
        }
        let q = &meter.quota;
        let calls = || log.sent.iter().filter(|s| !s.probe);
        let first_after = |from: Millis| calls().find(|s| s.at >= from);
        // How long the first call sent in a period waited in it: from the period's start, or
        // from its own if later (a call made then that went at once waited nothing).
        let resumed_ms = (1..q.periods)
            .map(|k| {
                let start = q.period_ms * f64::from(k);
                let s = first_after(start)?;
                let made = log.started.get(&s.index).copied().unwrap_or(start);
                Some(s.at - made.max(start))
            })
            .collect();
        let held = (log.started.iter())
            .filter(|(i, &at)| {
                first
                    .get(i)
                    .is_some_and(|&sent: &Millis| sent - at >= HELD_MS)
            })
            .count();
        let waiting = (log.started.iter())
            .filter(|(i, _)| !world.ended(*i))
            .count();
        MonthReport {
            limit: q.limit,
            used: meter.used,
            spread: q.spread.is_some(),
            period_ms: q.period_ms,
            periods: q.periods,
            wanted: log.started.len(),
            sent: first.len(),
            first_sent_ms: first_after(0.0).map(|s| s.at),
            resumed_ms,
            slice_ms: q.slice_ms(),
            spent: meter.spent.clone(),
            even: q.even(),
            exhausted_at_ms: meter.exhausted_at,
            readings: log.sent.iter().filter(|s| s.probe).count(),
            refused,
            held,
            waiting,
        }
    }
}

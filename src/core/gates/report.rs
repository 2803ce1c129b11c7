//! What `stats()`, the metrics and `describe()` report of the gates, gathered here in the shapes
//! JavaScript sees (camelCase, fields in the order `index.d.ts` gives them; the bindings only
//! serialise them). The many records (the gates' own figures, and the lanes' calls waiting on
//! each gate) are written to a `Wire` rather than serialised. A time shown as a date is a `D`,
//! what the caller makes of a time on the gates' clock (the bindings: a `Date`, or `null`), so
//! the core knows nothing of JavaScript.

use std::borrow::Cow;

use super::ids::{GateId, WrapperId};
use super::profile::Keeping;
use super::view::Limits;
use super::Gates;
use crate::core::base::map::Set;
use crate::core::base::wire::Wire;
use crate::core::gate::figures::Figures;
use crate::core::rules::allowance::{Allowance, Rate};
use crate::core::rules::budget::RefillingConfig;
use crate::core::rules::cache::{CacheConfig, CacheFigures};
use crate::core::rules::credits::Spread;
use crate::core::rules::fair::LaneId;
use crate::core::rules::learn::Estimate;
use crate::core::rules::policy::{Reason, RetryPolicy};
use crate::core::rules::quota::QuotaState;
use crate::core::Millis;

/// `stats()` but its gates: totals over a wrapper's gates (those since forgotten included), its
/// lane, and a batch's time and retries left. Each live gate in full is a [`Listed`].
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Stats<'a> {
    admitted: u64,
    waiting: usize,
    throttled: u64,
    retries: u64,
    abandoned: u64,
    gates: Apart,
    lane: LaneStats<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    batch: Option<BatchStats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache: Option<CacheStats>,
}

/// The place of records written apart among a report's keys (`gates`, the metrics' `lanes`):
/// `null`, which the bindings replace with what [`Listed`] writes.
#[derive(serde::Serialize)]
struct Apart;

/// Live gates, to be written one by one in `stats().gates[i]`'s shape: 10,000 gates' figures are
/// never all held at once (wasm memory, once grown, is never given back). For the metrics, the
/// lanes too: each one's calls waiting on each gate.
pub struct Listed<'g, 'a> {
    gates: &'g mut Gates,
    ids: Vec<GateId>,
    lanes: Vec<(LaneId, &'a str)>,
    now: Millis,
    wall: fn(Option<Millis>) -> Option<Millis>,
}

impl Listed<'_, '_> {
    /// Writes each lane's calls waiting on each gate still known as a record of `wire`
    /// (`scope`, `lane`, `waiting`): none for `stats()`, one per gate and lane for the metrics,
    /// 10,000s at 10,000 gates, which serialised one by one would cost tens of ms.
    pub fn write_lanes(&self, wire: &mut Wire) {
        let gates = &*self.gates;
        for (gate, scope) in self.ids.iter().filter_map(|&g| Some((g, gates.scope(g)?))) {
            for &(lane, name) in &self.lanes {
                wire.text("scope", Some(scope.as_str()));
                wire.text("lane", Some(name));
                wire.count("waiting", gates.waiting_in(gate, lane) as u64);
                wire.end();
            }
        }
    }

    /// Writes each gate still known as a record of `wire`, its times as `wall` makes them
    /// (Unix milliseconds, for dates).
    pub fn write(self, wire: &mut Wire) {
        for &gate in &self.ids {
            if self.gates.write_gate(self.now, gate, self.wall, wire) {
                wire.end();
            }
        }
    }
}

/// `stats().cache`, for a wrapper with a cache.
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct CacheStats {
    entries: usize,
    bytes: f64,
    hits: u64,
    coalesced: u64,
    stale: u64,
    evictions: u64,
    requests_saved: u64,
}

impl From<CacheFigures> for CacheStats {
    fn from(f: CacheFigures) -> Self {
        CacheStats {
            entries: f.entries,
            bytes: f.bytes,
            hits: f.hits,
            coalesced: f.coalesced,
            stale: f.stale,
            evictions: f.evictions,
            requests_saved: f.requests_saved(),
        }
    }
}

/// `stats().lane`: the wrapper's lane and its calls' admissions.
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct LaneStats<'a> {
    name: &'a str,
    weight: f64,
    waiting: usize,
    admitted: u64,
    waited_ms: Millis,
}

/// `stats().batch`, for a wrapper from `batch()`.
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct BatchStats {
    remaining_ms: Millis,
    retries_left: Option<u32>,
}

/// What a learning gate has learned, its last 429 a date (`stats()`, `describe()` and the
/// `learned` event).
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Learned<D> {
    burst: Option<f64>,
    per_second: f64,
    at_least: f64,
    confidence: f64,
    last_throttle: D,
}

impl<D> Learned<D> {
    /// `estimate`, its last 429 made a date by `date`.
    pub fn new(estimate: Estimate, date: fn(Option<Millis>) -> D) -> Self {
        Learned {
            burst: estimate.burst,
            per_second: estimate.per_second,
            at_least: estimate.at_least,
            confidence: estimate.confidence,
            last_throttle: date(estimate.last_throttle),
        }
    }
}

/// What the metrics observe but the gates and the lanes' calls waiting on each (a [`Listed`]
/// writes both): the wrapper's cache.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Observed {
    gates: Apart,
    lanes: Apart,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache: Option<CacheStats>,
}

/// What `describe()` is worded from: the wrapper's profile, what its gates learned, and what
/// the bindings know of where it runs (its store `S`, the shared memory's size).
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Facts<'a, D, S> {
    /// The allowance enforced, or learning's ceiling.
    rate: Option<Rate>,
    learn: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    store: Option<S>,
    /// In memory, whether the process's threads share it.
    threads: bool,
    /// The memory the threads share, when they do.
    #[serde(skip_serializing_if = "Option::is_none")]
    shared_memory: Option<SharedMemoryFacts>,
    #[serde(skip_serializing_if = "Option::is_none")]
    retry: Option<RetryPolicy>,
    waiting: Waiting,
    #[serde(skip_serializing_if = "Option::is_none")]
    budget: Option<RefillingConfig>,
    metrics: bool,
    /// A lane's name and weight (none for a wrapper's own calls, lane 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    lane: Option<LaneFacts<'a>>,
    /// What each learning gate of the wrapper has learned so far.
    learned: Vec<LearnedFacts<D>>,
    /// The core's own numbers the sentences name.
    limits: Limits,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache: Option<CacheConfig>,
    /// The spread, when the wrapper spreads its quota.
    #[serde(skip_serializing_if = "Option::is_none")]
    spread: Option<SpreadFacts>,
}

/// `quota.spread`'s settings and stated costs, for `describe()`.
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct SpreadFacts {
    #[serde(flatten)]
    settings: Spread,
    /// Each stated cost as `[pattern, credits]`.
    costs: Vec<(String, f64)>,
}

/// What the bindings tell [`Gates::facts`] of where a wrapper runs.
pub struct Setting<'a, S> {
    /// Its store, as `describe()` shows it.
    pub store: Option<S>,
    /// Its `threads` option.
    pub threads: bool,
    /// The shared memory's slots now and the most it grows to, when the process has one.
    pub shared_memory: Option<(u32, u32)>,
    /// Whether it has a `meter`.
    pub metrics: bool,
    /// Its lane's name.
    pub lane_name: &'a str,
    /// Its cache's settings, if it caches.
    pub cache: Option<CacheConfig>,
}

/// A lane, for `describe()`.
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct LaneFacts<'a> {
    name: &'a str,
    weight: f64,
    /// Its calls draw on the spread's reserve.
    reserve: bool,
}

/// The table in the memory the threads share, for `describe()`.
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct SharedMemoryFacts {
    /// Its slots now, and the most it grows to: one per key.
    slots: u32,
    most: u32,
    /// The wrapper's keys it had no room for, kept in this thread's memory.
    alone: usize,
}

/// One gate's estimate, for `describe()`.
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct LearnedFacts<D> {
    scope: String,
    learned: Learned<D>,
}

/// A wrapper's limits on waiting, for `describe()`.
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Waiting {
    max_wait_ms: Option<Millis>,
    max_waiting: Option<usize>,
}

/// `stats().gates[i].quota`: `open`, `probing` or `exhausted`, and until when; for a gate that
/// spreads its quota, the spread's figures too (keys left out otherwise).
fn write_quota(f: &Figures, wall: fn(Option<Millis>) -> Option<Millis>, w: &mut Wire) {
    let (state, until) = match f.quota {
        Some(QuotaState::Probing) => ("probing", None),
        Some(QuotaState::Exhausted { until }) => ("exhausted", until),
        _ => ("open", None),
    };
    let spread = f.credits.as_ref();
    // A spent quota's end, else the period's end the spread's readings said.
    let until = until.or(spread.and_then(|c| c.period_end));
    w.open("quota");
    w.text("state", Some(state));
    w.maybe("periodEnd", wall(until));
    w.open_if("spread", spread.is_some());
    w.maybe("used", spread.map(|c| c.used));
    w.maybe("limit", spread.map(|c| c.limit));
    w.maybe("spreadPerHour", spread.map(|c| c.per_hour));
    w.maybe(
        "waitingForCredit",
        spread.map(|c| c.waiting_for_credit as f64),
    );
    w.maybe("unpaced", spread.map(|c| c.unpaced as f64));
    w.maybe("projectedEnd", wall(spread.and_then(|c| c.projected_end)));
    w.close();
    w.close();
}

impl Gates {
    /// `stats()` of `wrapper`, whose calls wait in the lane called `lane`, at `now`: totals
    /// over its gates (and over those since forgotten), then each live gate in full, most
    /// recently used first; for a batch, its time (ms) and retries left; its cache's figures.
    /// `wall` makes a time on the gates' clock the Unix milliseconds a date is made of.
    pub fn stats<'a>(
        &mut self,
        now: Millis,
        wrapper: WrapperId,
        lane: &'a str,
        (batch, cache): (Option<(Millis, Option<u32>)>, Option<CacheFigures>),
        wall: fn(Option<Millis>) -> Option<Millis>,
    ) -> (Stats<'a>, Listed<'_, 'a>) {
        let mut totals = self.retired(wrapper);
        let mut waiting = 0;
        let ids = self.gates_of(wrapper);
        for (figures, calls) in ids.iter().filter_map(|&gate| self.counts(gate)) {
            totals.absorb(figures);
            waiting += calls;
        }
        let (line, figures, lane_waiting) = self.lane_of(wrapper).unwrap_or_default();
        let stats = Stats {
            admitted: totals.admitted,
            waiting,
            throttled: totals.troubles().throttled,
            retries: totals.troubles().retries.total(),
            abandoned: totals.troubles().abandoned.iter().sum(),
            lane: LaneStats {
                name: lane,
                weight: line.weight,
                waiting: lane_waiting,
                admitted: figures.admitted,
                waited_ms: figures.waited_ms,
            },
            batch: batch.map(|(remaining_ms, retries_left)| BatchStats {
                remaining_ms,
                retries_left,
            }),
            cache: cache.map(CacheStats::from),
            gates: Apart,
        };
        (stats, self.listed(now, ids, Vec::new(), wall))
    }

    /// What the meter observes for the wrappers sharing its instruments (`measured`: a wrapper
    /// made with a `meter` and its lanes, with their lanes' names): each gate any of them used,
    /// once, in full, each of their lanes' calls waiting on it, and their `cache`'s figures.
    pub fn observed<'a>(
        &mut self,
        now: Millis,
        measured: impl IntoIterator<Item = (WrapperId, &'a str)>,
        cache: Option<CacheFigures>,
        wall: fn(Option<Millis>) -> Option<Millis>,
    ) -> (Observed, Listed<'_, 'a>) {
        let mut ids: Vec<GateId> = Vec::new();
        let mut seen: Set<GateId> = Set::default();
        let mut lanes: Vec<(LaneId, &str)> = Vec::new();
        for (wrapper, name) in measured {
            let new = self.gates_of(wrapper).into_iter();
            ids.extend(new.filter(|&gate| seen.insert(gate)));
            let lane = self.lane_of(wrapper).map(|(lane, ..)| lane.id);
            if let Some(lane) = lane.filter(|&id| !lanes.iter().any(|l| l.0 == id)) {
                lanes.push((lane, name));
            }
        }
        let observed = Observed {
            gates: Apart,
            lanes: Apart,
            cache: cache.map(CacheStats::from),
        };
        (observed, self.listed(now, ids, lanes, wall))
    }

    /// The gates of `ids` still known, to be written in `stats().gates`'s shape as of `now`,
    /// and `lanes`' calls waiting on each.
    fn listed<'a>(
        &mut self,
        now: Millis,
        ids: Vec<GateId>,
        lanes: Vec<(LaneId, &'a str)>,
        wall: fn(Option<Millis>) -> Option<Millis>,
    ) -> Listed<'_, 'a> {
        Listed {
            gates: self,
            ids,
            lanes,
            now,
            wall,
        }
    }

    /// Writes a gate in `stats().gates[i]`'s shape (keys in `index.d.ts`'s order), if it is
    /// still known.
    fn write_gate(
        &mut self,
        now: Millis,
        gate: GateId,
        wall: fn(Option<Millis>) -> Option<Millis>,
        w: &mut Wire,
    ) -> bool {
        let kind = match self.keeping(gate) {
            Some((Keeping::Store(store), ..)) => {
                Cow::Owned(self.store_identity(store).unwrap_or_default().to_owned())
            }
            _ => Cow::Borrowed("memory"),
        };
        let Some(view) = self.view(now, gate) else {
            return false;
        };
        let f = &view.figures;
        w.text("scope", Some(view.scope.as_str()));
        w.count("requests", f.requests);
        w.count("admitted", f.admitted);
        w.count("waiting", f.waiting as u64);
        w.count("peakWaiting", f.peak_waiting as u64);
        w.count("cancelled", f.cancelled);
        w.count("abandonedInQueue", f.abandoned_in_queue);
        w.count("throttled", f.throttled);
        w.count("wakeups", f.wakeups);
        w.flag("timerArmed", view.timer_armed);
        w.number("cooldownUntil", f.cooldown_until);
        w.number("cooldownRemainingMs", (f.cooldown_until - now).max(0.0));
        w.flag("slow", f.slow);
        w.open("retries");
        w.count("throttled", f.retries.throttled);
        w.count("serverError", f.retries.server_error);
        w.count("network", f.retries.network);
        w.count("timeout", f.retries.timeout);
        w.close();
        w.open("abandoned");
        for (reason, &count) in Reason::ALL.iter().zip(&f.abandoned) {
            w.count(reason.as_str(), count);
        }
        w.close();
        w.count("quotaRejected", f.quota_rejected);
        write_quota(f, wall, w);
        w.maybe("retryBudget", f.retry_budget);
        w.open("rate");
        w.number("burst", view.rate.burst());
        w.number("perSecond", view.rate.per_second());
        w.close();
        let learned = view.learned.as_ref();
        w.open_if("learned", learned.is_some());
        w.maybe("burst", learned.and_then(|l| l.burst));
        w.maybe("perSecond", learned.map(|l| l.per_second));
        w.maybe("atLeast", learned.map(|l| l.at_least));
        w.maybe("confidence", learned.map(|l| l.confidence));
        w.maybe("lastThrottle", wall(learned.and_then(|l| l.last_throttle)));
        w.close();
        // `threads` in memory; a store's answers with a store (each key left out otherwise).
        w.open("store");
        w.text("kind", Some(&kind));
        let threads = matches!(view.keeping, Keeping::Memory { .. }).then_some(view.threads);
        w.maybe("threads", threads.map(|t| f64::from(u8::from(t))));
        let counts = view.store;
        w.maybe("calls", counts.map(|c| c.0 as f64));
        w.maybe("failures", counts.map(|c| c.1 as f64));
        w.maybe("up", counts.map(|c| f64::from(u8::from(c.2))));
        w.close();
        f.admission_wait.write("admissionWaitMs", w);
        f.backoff.write("backoffMs", w);
        let feedback = f.last_feedback.as_deref();
        w.open_if("lastFeedback", feedback.is_some());
        w.maybe("retryAfterMs", feedback.and_then(|b| b.retry_after_ms));
        w.maybe("limit", feedback.and_then(|b| b.limit).map(|n| n as f64));
        w.maybe(
            "remaining",
            feedback.and_then(|b| b.remaining).map(|n| n as f64),
        );
        w.maybe("resetMs", feedback.and_then(|b| b.reset_ms));
        w.text("limiter", feedback.and_then(|b| b.limiter.as_deref()));
        w.close();
        true
    }

    /// What `describe()` of `wrapper` is worded from, at `now`; `None` once it is released.
    pub fn facts<'a, D, S>(
        &mut self,
        now: Millis,
        wrapper: WrapperId,
        setting: Setting<'a, S>,
        date: fn(Option<Millis>) -> D,
    ) -> Option<Facts<'a, D, S>> {
        let profile = self.profile(wrapper)?.clone();
        let mut learned = Vec::new();
        let mut alone = 0;
        for gate in self.gates_of(wrapper) {
            let Some(view) = self.view(now, gate) else {
                continue;
            };
            alone +=
                usize::from(view.keeping == Keeping::Memory { threads: true } && !view.threads);
            if let Some(estimate) = view.learned {
                learned.push(LearnedFacts {
                    scope: view.scope.as_str().to_owned(),
                    learned: Learned::new(estimate, date),
                });
            }
        }
        let threads = setting.threads && self.shares_memory();
        let shared_memory = setting
            .shared_memory
            .filter(|_| threads)
            .map(|(slots, most)| SharedMemoryFacts { slots, most, alone });
        let lane = self.lane_of(wrapper).map(|(lane, ..)| lane);
        Some(Facts {
            learned,
            rate: match profile.allowance {
                Allowance::Fixed(rate) | Allowance::Learned(Some(rate)) => Some(rate),
                Allowance::Learned(None) => None,
            },
            learn: profile.learns(),
            store: setting.store,
            threads,
            shared_memory,
            retry: profile.policy.as_deref().cloned(),
            waiting: Waiting {
                max_wait_ms: profile.max_wait_ms,
                max_waiting: profile.max_waiting,
            },
            budget: profile.budget,
            metrics: setting.metrics,
            lane: lane.filter(|lane| lane.id != 0).map(|lane| LaneFacts {
                name: setting.lane_name,
                weight: lane.weight,
                reserve: lane.reserve,
            }),
            limits: Limits::default(),
            cache: setting.cache,
            spread: profile.spread.map(|(settings, costs)| SpreadFacts {
                settings,
                costs: costs.stated().to_vec(),
            }),
        })
    }
}

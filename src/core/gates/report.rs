//! What `stats()`, the metrics and `describe()` report of the gates, gathered here in the shapes
//! JavaScript sees (camelCase, fields in the order `index.d.ts` gives them; the bindings only
//! serialise them). A time shown as a date is a `D`, what the caller makes of a time on the
//! gates' clock (the bindings: a `Date`, or `null`), so the core knows nothing of JavaScript.

use std::borrow::Cow;
use std::cell::RefCell;

use super::ids::{GateId, WrapperId};
use super::profile::Keeping;
use super::view::Limits;
use super::Gates;
use crate::core::base::histogram::Histogram;
use crate::core::base::map::Set;
use crate::core::gate::figures::RetryCounts;
use crate::core::parse::feedback::Feedback;
use crate::core::rules::allowance::{Allowance, Rate};
use crate::core::rules::budget::RefillingConfig;
use crate::core::rules::cache::{CacheConfig, CacheFigures};
use crate::core::rules::credits::Spread;
use crate::core::rules::fair::LaneId;
use crate::core::rules::learn::Estimate;
use crate::core::rules::policy::{Reason, RetryPolicy};
use crate::core::rules::quota::QuotaState;
use crate::core::rules::spending::CreditFigures;
use crate::core::Millis;

/// `stats()`: totals over a wrapper's gates (those since forgotten included), each live gate in
/// full, its lane, and a batch's time and retries left.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Stats<'a, 'g, D> {
    admitted: u64,
    waiting: usize,
    throttled: u64,
    retries: u64,
    abandoned: u64,
    gates: Listed<'g, D>,
    lane: LaneStats<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    batch: Option<BatchStats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache: Option<CacheStats>,
}

/// Live gates, each gathered in `stats().gates[i]`'s shape as it is written: 10,000 gates'
/// figures are never all held at once (wasm memory, once grown, is never given back).
pub struct Listed<'g, D> {
    gates: RefCell<&'g mut Gates>,
    ids: Vec<GateId>,
    now: Millis,
    date: fn(Option<Millis>) -> D,
}

impl<D: serde::Serialize> serde::Serialize for Listed<'_, D> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut gates = self.gates.borrow_mut();
        let mut list = s.serialize_seq(Some(self.ids.len()))?;
        for &gate in &self.ids {
            if let Some(entry) = gates.gate_stats(self.now, gate, self.date) {
                list.serialize_element(&entry)?;
            }
        }
        list.end()
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

/// One gate in `stats().gates`.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct GateStats<'s, D> {
    scope: &'s str,
    requests: u64,
    admitted: u64,
    waiting: usize,
    peak_waiting: usize,
    cancelled: u64,
    abandoned_in_queue: u64,
    throttled: u64,
    wakeups: u64,
    timer_armed: bool,
    cooldown_until: Millis,
    cooldown_remaining_ms: Millis,
    slow: bool,
    retries: RetryCounts,
    /// Calls abandoned, by reason, in the order of [`Reason::ALL`].
    #[serde(serialize_with = "by_reason")]
    abandoned: [u64; Reason::ALL.len()],
    quota_rejected: u64,
    quota: QuotaStats<D>,
    retry_budget: Option<f64>,
    rate: Rate,
    learned: Option<Learned<D>>,
    store: StoreStats,
    admission_wait_ms: Histogram,
    backoff_ms: Histogram,
    last_feedback: Option<Box<Feedback>>,
}

/// `stats().gates[i].quota`: `open`, `probing` or `exhausted`, and until when; for a gate that
/// spreads its quota, the spread's figures too.
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct QuotaStats<D> {
    state: &'static str,
    period_end: D,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    spread: Option<SpreadStats<D>>,
}

/// The spread's part of `stats().gates[i].quota`.
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct SpreadStats<D> {
    used: f64,
    limit: f64,
    spread_per_hour: f64,
    waiting_for_credit: usize,
    unpaced: u64,
    projected_end: D,
}

impl<D> SpreadStats<D> {
    fn new(f: CreditFigures, date: fn(Option<Millis>) -> D) -> Self {
        SpreadStats {
            used: f.used,
            limit: f.limit,
            spread_per_hour: f.per_hour,
            waiting_for_credit: f.waiting_for_credit,
            unpaced: f.unpaced,
            projected_end: date(f.projected_end),
        }
    }
}

/// `stats().gates[i].store`: where the gate's state lives, and how a store answers.
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct StoreStats {
    /// `memory`, or the store's identity.
    kind: Cow<'static, str>,
    /// In memory: whether the process's threads share the gate's state.
    #[serde(skip_serializing_if = "Option::is_none")]
    threads: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    calls: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    failures: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    up: Option<bool>,
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

/// What the metrics observe: gates, lanes' calls waiting on each, and the wrapper's cache.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Observed<'a, 'g, D> {
    gates: Listed<'g, D>,
    lanes: Vec<LaneDepth<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache: Option<CacheStats>,
}

/// A lane's calls waiting on a gate.
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct LaneDepth<'a> {
    scope: String,
    lane: &'a str,
    waiting: usize,
}

/// Calls abandoned, by reason, in the order of [`Reason::ALL`].
fn by_reason<S: serde::Serializer>(
    counts: &[u64; Reason::ALL.len()],
    s: S,
) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut map = s.serialize_map(Some(counts.len()))?;
    for (reason, count) in Reason::ALL.iter().zip(counts) {
        map.serialize_entry(reason.as_str(), count)?;
    }
    map.end()
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

impl Gates {
    /// `stats()` of `wrapper`, whose calls wait in the lane called `lane`, at `now`: totals
    /// over its gates (and over those since forgotten), then each live gate in full, most
    /// recently used first; for a batch, its time (ms) and retries left; its cache's figures.
    pub fn stats<'a, D>(
        &mut self,
        now: Millis,
        wrapper: WrapperId,
        lane: &'a str,
        (batch, cache): (Option<(Millis, Option<u32>)>, Option<CacheFigures>),
        date: fn(Option<Millis>) -> D,
    ) -> Stats<'a, '_, D> {
        let mut totals = self.retired(wrapper);
        let mut waiting = 0;
        let ids = self.gates_of(wrapper);
        for (figures, calls) in ids.iter().filter_map(|&gate| self.counts(gate)) {
            totals.absorb(figures);
            waiting += calls;
        }
        let (line, figures, lane_waiting) = self.lane_of(wrapper).unwrap_or_default();
        Stats {
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
            gates: self.listed(now, ids, date),
        }
    }

    /// What the meter observes for the wrappers sharing its instruments (`measured`: a wrapper
    /// made with a `meter` and its lanes, with their lanes' names): each gate any of them used,
    /// once, in full, each of their lanes' calls waiting on it, and their `cache`'s figures.
    pub fn observed<'a, D>(
        &mut self,
        now: Millis,
        measured: impl IntoIterator<Item = (WrapperId, &'a str)>,
        cache: Option<CacheFigures>,
        date: fn(Option<Millis>) -> D,
    ) -> Observed<'a, '_, D> {
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
        let this = &*self;
        let depths = ids
            .iter()
            .filter_map(|&gate| Some((gate, this.scope(gate)?)));
        let depths = depths.flat_map(|(gate, scope)| {
            lanes.iter().map(move |&(lane, name)| LaneDepth {
                scope: scope.as_str().to_owned(),
                lane: name,
                waiting: this.waiting_in(gate, lane),
            })
        });
        let lanes = depths.collect();
        Observed {
            lanes,
            cache: cache.map(CacheStats::from),
            gates: self.listed(now, ids, date),
        }
    }

    /// The gates of `ids` still known, to be written in `stats().gates`'s shape as of `now`.
    fn listed<D>(
        &mut self,
        now: Millis,
        ids: Vec<GateId>,
        date: fn(Option<Millis>) -> D,
    ) -> Listed<'_, D> {
        Listed {
            gates: RefCell::new(self),
            ids,
            now,
            date,
        }
    }

    /// A gate in `stats().gates`'s shape, if it is still known.
    fn gate_stats<D>(
        &mut self,
        now: Millis,
        gate: GateId,
        date: fn(Option<Millis>) -> D,
    ) -> Option<GateStats<'_, D>> {
        let kind = match self.keeping(gate) {
            Some((Keeping::Store(store), ..)) => {
                Cow::Owned(self.store_identity(store).unwrap_or_default().to_owned())
            }
            _ => Cow::Borrowed("memory"),
        };
        let view = self.view(now, gate)?;
        let threads = matches!(view.keeping, Keeping::Memory { .. }).then_some(view.threads);
        let f = view.figures;
        let (state, until) = match f.quota {
            Some(QuotaState::Probing) => ("probing", None),
            Some(QuotaState::Exhausted { until }) => ("exhausted", until),
            _ => ("open", None),
        };
        let counts = view.store;
        Some(GateStats {
            scope: view.scope.as_str(),
            requests: f.requests,
            admitted: f.admitted,
            waiting: f.waiting,
            peak_waiting: f.peak_waiting,
            cancelled: f.cancelled,
            abandoned_in_queue: f.abandoned_in_queue,
            throttled: f.throttled,
            wakeups: f.wakeups,
            timer_armed: view.timer_armed,
            cooldown_until: f.cooldown_until,
            cooldown_remaining_ms: (f.cooldown_until - now).max(0.0),
            slow: f.slow,
            retries: f.retries,
            abandoned: f.abandoned,
            quota_rejected: f.quota_rejected,
            quota: QuotaStats {
                state,
                period_end: date(until),
                spread: f.credits.map(|c| SpreadStats::new(c, date)),
            },
            retry_budget: f.retry_budget,
            rate: view.rate,
            learned: view.learned.map(|e| Learned::new(e, date)),
            store: StoreStats {
                kind,
                threads,
                calls: counts.map(|c| c.0),
                failures: counts.map(|c| c.1),
                up: counts.map(|c| c.2),
            },
            admission_wait_ms: f.admission_wait,
            backoff_ms: f.backoff,
            last_feedback: f.last_feedback,
        })
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

//! The wrapper's figures (`stats()`) and configuration summary (`describe()`), serialised by
//! serde through serde-wasm-bindgen: the shapes below are what JavaScript sees (`index.d.ts`
//! states the same).

use std::rc::Rc;

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use wasm_bindgen::prelude::*;

use super::clock;
use super::options::Config;
use super::redis::RedisStore;
use super::shapes::{to_js, Date, Learned};
use super::shared_memory;
use crate::core::base::histogram::Histogram;
use crate::core::base::map::Set;
use crate::core::gate::figures::{Figures, RetryCounts};
use crate::core::gates::ids::{GateId, WrapperId};
use crate::core::gates::profile::Keeping;
use crate::core::gates::view::Limits;
use crate::core::gates::Gates;
use crate::core::parse::feedback::Feedback;
use crate::core::rules::allowance::{Allowance, Rate};
use crate::core::rules::budget::RefillingConfig;
use crate::core::rules::fair::LaneId;
use crate::core::rules::policy::{Reason, RetryPolicy};
use crate::core::rules::quota::QuotaState;

/// `stats()`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Stats<'a> {
    admitted: u64,
    waiting: usize,
    throttled: u64,
    retries: u64,
    abandoned: u64,
    gates: Vec<GateStats>,
    lane: LaneStats<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    batch: Option<BatchFigures>,
}

/// `stats().lane`: the wrapper's lane and its calls' admissions.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LaneStats<'a> {
    name: &'a str,
    weight: f64,
    waiting: usize,
    admitted: u64,
    waited_ms: f64,
}

/// `stats().batch`, for a wrapper from `batch()`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct BatchFigures {
    remaining_ms: f64,
    retries_left: Option<u32>,
}

/// One gate in `stats().gates`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GateStats {
    scope: String,
    requests: u64,
    admitted: u64,
    waiting: usize,
    peak_waiting: usize,
    cancelled: u64,
    abandoned_in_queue: u64,
    throttled: u64,
    wakeups: u64,
    timer_armed: bool,
    cooldown_until: f64,
    cooldown_remaining_ms: f64,
    slow: bool,
    retries: RetryCounts,
    #[serde(serialize_with = "by_reason")]
    abandoned: [u64; Reason::ALL.len()],
    quota_rejected: u64,
    quota: Quota,
    retry_budget: Option<f64>,
    rate: Rate,
    learned: Option<Learned>,
    store: Store,
    admission_wait_ms: Histogram,
    backoff_ms: Histogram,
    last_feedback: Option<Feedback>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Quota {
    state: &'static str,
    period_end: Date,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Store {
    kind: String,
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

/// Calls abandoned, by reason, in the order of [`Reason::ALL`].
fn by_reason<S: Serializer>(counts: &[u64; Reason::ALL.len()], s: S) -> Result<S::Ok, S::Error> {
    let mut map = s.serialize_map(Some(counts.len()))?;
    for (reason, count) in Reason::ALL.iter().zip(counts) {
        map.serialize_entry(reason.as_str(), count)?;
    }
    map.end()
}

/// `stats()` of `wrapper`, whose calls wait in the lane called `lane`: totals over its gates
/// (and over those since forgotten), then each live gate in full, most recently used first; for
/// a batch, its time (ms) and retries left.
pub fn stats(
    gates: &mut Gates,
    wrapper: WrapperId,
    lane: &str,
    batch: Option<(f64, Option<u32>)>,
) -> JsValue {
    let mut totals = gates.retired(wrapper);
    let mut waiting = 0;
    let ids = gates.gates_of(wrapper);
    let entries = gate_stats(gates, ids, &mut |figures| {
        totals.absorb(figures);
        waiting += figures.waiting;
    });
    let (line, figures, lane_waiting) = gates.lane_of(wrapper).unwrap_or_default();
    to_js(&Stats {
        admitted: totals.admitted,
        waiting,
        throttled: totals.throttled,
        retries: totals.retries.total(),
        abandoned: totals.abandoned.iter().sum(),
        gates: entries.into_iter().map(|(_, entry)| entry).collect(),
        lane: LaneStats {
            name: lane,
            weight: line.weight,
            waiting: lane_waiting,
            admitted: figures.admitted,
            waited_ms: figures.waited_ms,
        },
        batch: batch.map(|(remaining_ms, retries_left)| BatchFigures {
            remaining_ms,
            retries_left,
        }),
    })
}

/// What the metrics observe.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Observed<'a> {
    gates: Vec<GateStats>,
    lanes: Vec<LaneDepth<'a>>,
}

/// A lane's calls waiting on a gate.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LaneDepth<'a> {
    scope: String,
    lane: &'a str,
    waiting: usize,
}

/// What the meter observes for the wrappers sharing its instruments (`measured`: a wrapper
/// made with a `meter` and its lanes, with their lanes' names): each gate any of them used,
/// once, in full, and each of their lanes' calls waiting on it.
pub fn observed(gates: &mut Gates, measured: &[(WrapperId, Rc<str>)]) -> JsValue {
    let mut ids: Vec<GateId> = Vec::new();
    let mut seen: Set<GateId> = Set::default();
    let mut lanes: Vec<(LaneId, &str)> = Vec::new();
    for (wrapper, name) in measured {
        let new = gates.gates_of(*wrapper).into_iter();
        ids.extend(new.filter(|&gate| seen.insert(gate)));
        let lane = gates.lane_of(*wrapper).map(|(lane, ..)| lane.id);
        if let Some(lane) = lane.filter(|&id| !lanes.iter().any(|l| l.0 == id)) {
            lanes.push((lane, name));
        }
    }
    let entries = gate_stats(gates, ids, &mut |_| {});
    let gates = &*gates;
    let depths = entries.iter().flat_map(|(gate, entry)| {
        lanes.iter().map(move |&(lane, name)| LaneDepth {
            scope: entry.scope.clone(),
            lane: name,
            waiting: gates.waiting_in(*gate, lane),
        })
    });
    let lanes = depths.collect();
    to_js(&Observed {
        gates: entries.into_iter().map(|(_, entry)| entry).collect(),
        lanes,
    })
}

/// The gates of `ids` still known, each in `stats().gates`'s shape, `each` shown its figures.
fn gate_stats(
    gates: &mut Gates,
    ids: Vec<GateId>,
    each: &mut dyn FnMut(&Figures),
) -> Vec<(GateId, GateStats)> {
    let now = clock::now();
    let mut entries = Vec::with_capacity(ids.len());
    for gate in ids {
        let kind = match gates.keeping(gate) {
            Some((Keeping::Store(store), ..)) => gates.store_identity(store).unwrap_or_default(),
            _ => "memory",
        }
        .to_owned();
        let Some(view) = gates.view(now, gate) else {
            continue;
        };
        each(&view.figures);
        let threads = matches!(view.keeping, Keeping::Memory { .. }).then_some(view.threads);
        let f = view.figures;
        let (state, until) = match f.quota {
            Some(QuotaState::Probing) => ("probing", None),
            Some(QuotaState::Exhausted { until }) => ("exhausted", until),
            _ => ("open", None),
        };
        let counts = view.store;
        let entry = GateStats {
            scope: view.scope.as_str().to_owned(),
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
            quota: Quota {
                state,
                period_end: Date(until),
            },
            retry_budget: f.retry_budget,
            rate: view.rate,
            learned: view.learned.map(Learned),
            store: Store {
                kind,
                threads,
                calls: counts.map(|c| c.0),
                failures: counts.map(|c| c.1),
                up: counts.map(|c| c.2),
            },
            admission_wait_ms: f.admission_wait,
            backoff_ms: f.backoff,
            last_feedback: f.last_feedback,
        };
        entries.push((gate, entry));
    }
    entries
}

#[wasm_bindgen(module = "/src/js/summary.js")]
extern "C" {
    fn summary(facts: &JsValue) -> JsValue;
}

/// What `describe()` is worded from.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Facts<'a> {
    /// The allowance enforced, or learning's ceiling.
    rate: Option<Rate>,
    learn: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    store: Option<&'a RedisStore>,
    /// In memory, whether the process's threads share it.
    threads: bool,
    /// The memory the threads share, when they do.
    #[serde(skip_serializing_if = "Option::is_none")]
    shared_memory: Option<SharedMemoryFacts>,
    #[serde(skip_serializing_if = "Option::is_none")]
    retry: Option<&'a RetryPolicy>,
    waiting: Waiting,
    #[serde(skip_serializing_if = "Option::is_none")]
    budget: Option<RefillingConfig>,
    metrics: bool,
    /// A lane's name and weight (none for a wrapper's own calls, lane 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    lane: Option<LaneFacts<'a>>,
    /// What each learning gate of the wrapper has learned so far.
    learned: Vec<LearnedFacts>,
    /// The core's own numbers the sentences name.
    limits: Limits,
}

/// A lane, for `describe()`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LaneFacts<'a> {
    name: &'a str,
    weight: f64,
}

/// The table in the memory the threads share, for `describe()`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SharedMemoryFacts {
    /// Its slots now, and the most it grows to: one per key.
    slots: u32,
    most: u32,
    /// The wrapper's keys it had no room for, kept in this thread's memory.
    alone: usize,
}

/// One gate's estimate, for `describe()`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LearnedFacts {
    scope: String,
    learned: Learned,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Waiting {
    max_wait_ms: Option<f64>,
    max_waiting: Option<usize>,
}

/// The checklist's configuration summary: what the next engineer tunes when the provider
/// changes its limits. The bindings give the facts; `summary.js` words them.
pub fn describe(config: &Config, gates: &mut Gates, wrapper: WrapperId) -> JsValue {
    let Some(profile) = gates.profile(wrapper).cloned() else {
        return JsValue::UNDEFINED;
    };
    let now = clock::now();
    let mut learned = Vec::new();
    let mut alone = 0;
    for gate in gates.gates_of(wrapper) {
        let Some(view) = gates.view(now, gate) else {
            continue;
        };
        alone += usize::from(view.keeping == Keeping::Memory { threads: true } && !view.threads);
        if let Some(estimate) = view.learned {
            learned.push(LearnedFacts {
                scope: view.scope.as_str().to_owned(),
                learned: Learned(estimate),
            });
        }
    }
    let threads = config.threads && gates.shares_memory();
    let shared_memory = shared_memory::size()
        .filter(|_| threads)
        .map(|(slots, most)| SharedMemoryFacts { slots, most, alone });
    let facts = Facts {
        learned,
        rate: match profile.allowance {
            Allowance::Fixed(rate) | Allowance::Learned(Some(rate)) => Some(rate),
            Allowance::Learned(None) => None,
        },
        learn: profile.learns(),
        store: config.store.as_deref(),
        threads,
        shared_memory,
        retry: profile.policy.as_deref(),
        waiting: Waiting {
            max_wait_ms: profile.max_wait_ms,
            max_waiting: profile.max_waiting,
        },
        budget: profile.budget,
        metrics: config.metrics.is_some(),
        lane: gates
            .lane_of(wrapper)
            .map(|(lane, ..)| lane)
            .filter(|lane| lane.id != 0)
            .map(|lane| LaneFacts {
                name: &config.lane_name,
                weight: lane.weight,
            }),
        limits: Limits::default(),
    };
    summary(&to_js(&facts))
}

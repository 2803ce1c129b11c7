//! The article's model for JavaScript: `simulate(options)`, which runs the production call
//! machine on a virtual clock, and the article's `Gate` (the memory authority).

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::de::{self, Given, Kind};
use super::errors::config_error;
use super::readers;
use super::shapes::to_js;
use crate::core::rules::allowance::finite;
use crate::core::sim::{
    self, ArticleGate, HeadersGiven, LaneGiven, LookupsGiven, SimCacheGiven, SimGiven, SimOptions,
    SimQuotaGiven, Split,
};

use Kind::{Boolean as B, Number as N, String as S, Value as V};

/// `simulate(options)`'s fields. `separateGates` is `true`, `false` or a number of processes;
/// `retryBudget` a number or `null` for none; `headers` a flag or `'throttled'` (429s only);
/// `lookups`, `lanes`, `cache` and `quota` are read below.
const FIELDS: [de::Field; 22] = [
    ("shared", B),
    ("separateGates", V),
    ("alwaysReject", B),
    ("maxAttempts", N),
    ("retryBudget", V),
    ("workers", N),
    ("burst", N),
    ("perSecond", N),
    ("retryAfterMs", N),
    ("learn", B),
    ("headers", V),
    ("lookups", V),
    ("processes", N),
    ("threads", N),
    ("storeLatencyMs", N),
    ("snapshots", N),
    ("latencyMs", N),
    ("lanes", V),
    ("polls", N),
    ("pollEveryMs", N),
    ("cache", V),
    ("quota", V),
];

/// Runs the article's virtual-clock model and returns
/// `{ attempts, throttled, completed, abandoned, lastAttemptMs, timeline }` (with `cache`,
/// `hits`, `coalesced` and `requestsSaved` too; with `quota`, `quota`: the month's credits).
#[wasm_bindgen]
pub fn simulate(options: JsValue) -> Result<JsValue, JsValue> {
    let options = match options.is_undefined() {
        true => SimOptions::default(),
        false => given(&options)?.options().map_err(config_error)?,
    };
    let r = sim::simulate(&options).map_err(config_error)?;
    Ok(to_js(&r))
}

/// The options read as given: their types checked, their meaning left to the core.
fn given(options: &JsValue) -> Result<SimGiven, JsValue> {
    let [shared, separate_gates, always_reject, max_attempts, retry_budget, workers, burst, per_second, retry_after_ms, learn, headers, lookups, processes, threads, store_latency_ms, snapshots, latency_ms, lanes_given, polls, poll_every_ms, cache, quota_given] =
        de::object(options, "options", "", &FIELDS)?;
    Ok(SimGiven {
        shared: shared.flag(),
        separate_gates: separate_gates.value().map(split).transpose()?,
        always_reject: always_reject.flag(),
        max_attempts: max_attempts.number(),
        retry_budget: retry_budget.value().map(budget).transpose()?.flatten(),
        workers: workers.number(),
        burst: burst.number(),
        per_second: per_second.number(),
        retry_after_ms: retry_after_ms.number(),
        learn: learn.flag(),
        headers: headers.value().map(where_headers).transpose()?,
        lookups: lookups.value().map(|v| lookups_given(&v)).transpose()?,
        processes: processes.number(),
        threads: threads.number(),
        store_latency_ms: store_latency_ms.number(),
        snapshots: snapshots.number(),
        latency_ms: latency_ms.number(),
        lanes: lanes_given.value().map(|v| lanes(&v)).transpose()?,
        polls: polls.number(),
        poll_every_ms: poll_every_ms.number(),
        cache: de::toggle(cache.value(), "cache", cache_given)?,
        quota: quota_given.value().map(|v| quota(&v)).transpose()?,
    })
}

/// `separateGates`: a flag or a number of processes.
fn split(value: JsValue) -> Result<Split, JsValue> {
    match (value.as_bool(), value.as_f64()) {
        (Some(flag), _) => Ok(Split::Flag(flag)),
        (_, Some(n)) => Ok(Split::Count(n)),
        _ => Err(de::wrong("separateGates", "a boolean or a number", &value)),
    }
}

/// `retryBudget`: a number, or `null` for none (as left out).
fn budget(value: JsValue) -> Result<Option<f64>, JsValue> {
    match value.as_f64() {
        Some(n) => Ok(Some(n)),
        None if value.is_null() => Ok(None),
        None => Err(de::wrong("retryBudget", "a number or null", &value)),
    }
}

/// `headers`: a flag, or `'throttled'` (on 429s only).
fn where_headers(value: JsValue) -> Result<HeadersGiven, JsValue> {
    match value.as_bool() {
        Some(flag) => Ok(HeadersGiven::Flag(flag)),
        None if value.as_string().as_deref() == Some("throttled") => Ok(HeadersGiven::Throttled),
        None => Err(de::wrong("headers", "a boolean or 'throttled'", &value)),
    }
}

/// `lookups: { calls, burst, perSecond }`.
fn lookups_given(value: &JsValue) -> Result<LookupsGiven, JsValue> {
    let fields = [("calls", N), ("burst", N), ("perSecond", N)];
    let [calls, burst, per_second] = de::object(value, "lookups", "lookups.", &fields)?;
    Ok(LookupsGiven {
        calls: calls.number(),
        burst: burst.number(),
        per_second: per_second.number(),
    })
}

/// `cache: { ttlMs, staleForMs }`.
fn cache_given(value: &JsValue) -> Result<SimCacheGiven, JsValue> {
    let fields = [("ttlMs", N), ("staleForMs", N)];
    let [ttl, stale] = de::object(value, "cache", "cache.", &fields)?;
    Ok(SimCacheGiven {
        ttl_ms: ttl.number(),
        stale_for_ms: stale.number(),
    })
}

/// `quota`, read as given (its `costs` by [`readers::costs`]).
fn quota(value: &JsValue) -> Result<SimQuotaGiven, JsValue> {
    let fields = [
        ("limit", N),
        ("periodMs", N),
        ("days", N),
        ("used", N),
        ("periods", N),
        ("spread", B),
        ("reserve", N),
        ("burstMs", N),
        ("refreshMs", N),
        ("costs", V),
    ];
    let [limit, period_ms, days, used, periods, spread, reserve, burst_ms, refresh_ms, costs] =
        de::object(value, "quota", "quota.", &fields)?;
    Ok(SimQuotaGiven {
        limit: limit.number(),
        period_ms: period_ms.number(),
        days: days.number(),
        used: used.number(),
        periods: periods.number(),
        spread: spread.flag(),
        reserve: reserve.number(),
        burst_ms: burst_ms.number(),
        refresh_ms: refresh_ms.number(),
        costs: readers::costs(costs.value())?,
    })
}

/// `lanes`, each `{ name, weight, workers, snapshots, startMs }`, its errors naming the lane
/// (`lanes[1].weight`).
fn lanes(value: &JsValue) -> Result<Vec<LaneGiven>, JsValue> {
    if !js_sys::Array::is_array(value) {
        return Err(de::wrong("lanes", "an array", value));
    }
    let fields = [
        ("name", S),
        ("weight", N),
        ("workers", N),
        ("snapshots", N),
        ("startMs", N),
    ];
    let lane = |(i, lane): (usize, JsValue)| {
        let [name, weight, workers, snapshots, start_ms] = de::object(
            &lane,
            &format!("lanes[{i}]"),
            &format!("lanes[{i}]."),
            &fields,
        )?;
        Ok(LaneGiven {
            name: Given::string(&name),
            weight: weight.number(),
            workers: workers.number(),
            snapshots: snapshots.number(),
            start_ms: start_ms.number(),
        })
    };
    let lanes: &js_sys::Array = value.unchecked_ref();
    lanes.iter().enumerate().map(lane).collect()
}

/// The article's `Gate` on a virtual clock that starts at 0: `admitAt(now)`, `defer(now,
/// delayMs)`, `blockedUntil`.
#[wasm_bindgen(js_name = Gate)]
pub struct ModelGate {
    gate: ArticleGate,
}

#[wasm_bindgen(js_class = Gate)]
impl ModelGate {
    /// `new Gate({ burst, perSecond })`.
    #[wasm_bindgen(constructor)]
    pub fn new(rate: JsValue) -> Result<ModelGate, JsValue> {
        let (rate, learn) = readers::rate(&rate)?;
        let gate = ArticleGate::given(rate, learn).map_err(config_error)?;
        Ok(ModelGate { gate })
    }

    /// Admits at `now` and returns `now`, or returns when to come back (spending nothing).
    #[wasm_bindgen(js_name = admitAt)]
    pub fn admit_at(&mut self, now: f64) -> Result<f64, JsValue> {
        Ok(self
            .gate
            .admit_at(finite("now", now).map_err(config_error)?))
    }

    /// Holds admissions until `now + delayMs`; never shortens an existing cooldown.
    pub fn defer(&mut self, now: f64, delay_ms: f64) -> Result<(), JsValue> {
        self.gate
            .defer(finite("now", now).map_err(config_error)?, delay_ms)
            .map_err(config_error)
    }

    /// No admission before this time.
    #[wasm_bindgen(getter, js_name = blockedUntil)]
    pub fn blocked_until(&self) -> f64 {
        self.gate.blocked_until()
    }
}

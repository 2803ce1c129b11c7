//! The article's model for JavaScript: `simulate(options)`, which runs the production call
//! machine on a virtual clock, and the article's `Gate` (the memory authority).

use serde::Deserialize;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::de;
use super::errors::config_error;
use super::readers;
use super::shapes::to_js;
use super::sim_de;
use crate::core::rules::allowance::finite;
use crate::core::sim::given::number_or_null;
use crate::core::sim::{
    self, ArticleGate, HeadersGiven, LaneGiven, SimGiven, SimOptions, SimQuotaGiven, Split,
};

/// `simulate(options)` as given.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SimulateOptions {
    shared: Option<bool>,
    /// `true`, `false` or a number of processes.
    separate_gates: Option<Split>,
    always_reject: Option<bool>,
    max_attempts: Option<f64>,
    /// A number, or `null` for none.
    #[serde(default, deserialize_with = "number_or_null")]
    retry_budget: Option<f64>,
    workers: Option<f64>,
    burst: Option<f64>,
    per_second: Option<f64>,
    retry_after_ms: Option<f64>,
    learn: Option<bool>,
    /// `true` (every answer), `false` (none) or `'throttled'` (429s only).
    headers: Option<HeadersGiven>,
    /// `{ calls, burst, perSecond }`: event lookups on a limiter of their own.
    #[serde(default, deserialize_with = "sim_de::value")]
    lookups: Option<JsValue>,
    /// Processes sharing a store.
    processes: Option<f64>,
    /// Threads of one process sharing memory.
    threads: Option<f64>,
    store_latency_ms: Option<f64>,
    snapshots: Option<f64>,
    latency_ms: Option<f64>,
    /// `[{ name, weight, workers, snapshots, startMs }]`: lanes of workers on the shared gate.
    #[serde(default, deserialize_with = "sim_de::value")]
    lanes: Option<JsValue>,
    polls: Option<f64>,
    poll_every_ms: Option<f64>,
    /// `true`, `false` or `{ ttlMs }`: the workers' GETs go through the cache.
    #[serde(default, deserialize_with = "sim_de::value")]
    cache: Option<JsValue>,
    /// `{ limit, periodMs | days, used, spread, reserve, burstMs, refreshMs, costs }`: the
    /// key's monthly credits.
    #[serde(default, deserialize_with = "sim_de::value")]
    quota: Option<JsValue>,
}

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
    let o: SimulateOptions = sim_de::object(options, "options", "")?;
    let lookups = o
        .lookups
        .map(|v| sim_de::object(&v, "lookups", "lookups."))
        .transpose()?;
    Ok(SimGiven {
        shared: o.shared,
        separate_gates: o.separate_gates,
        always_reject: o.always_reject,
        max_attempts: o.max_attempts,
        retry_budget: o.retry_budget,
        workers: o.workers,
        burst: o.burst,
        per_second: o.per_second,
        retry_after_ms: o.retry_after_ms,
        learn: o.learn,
        headers: o.headers,
        lookups,
        processes: o.processes,
        threads: o.threads,
        store_latency_ms: o.store_latency_ms,
        snapshots: o.snapshots,
        latency_ms: o.latency_ms,
        lanes: o.lanes.as_ref().map(lanes).transpose()?,
        polls: o.polls,
        poll_every_ms: o.poll_every_ms,
        cache: de::toggle(o.cache, "cache", |v| sim_de::object(v, "cache", "cache."))?,
        quota: o.quota.as_ref().map(quota).transpose()?,
    })
}

/// `quota`, read as given (its `costs` by [`readers::costs`]).
fn quota(value: &JsValue) -> Result<SimQuotaGiven, JsValue> {
    let q: SimQuotaGiven<sim_de::Costs> = sim_de::object(value, "quota", "quota.")?;
    q.costs(|c| readers::costs(c.0))
}

/// `lanes`, each read as given, its errors naming the lane (`lanes[1].weight`).
fn lanes(value: &JsValue) -> Result<Vec<LaneGiven>, JsValue> {
    if !js_sys::Array::is_array(value) {
        return Err(de::wrong("lanes", "an array", value));
    }
    let lanes: &js_sys::Array = value.unchecked_ref();
    let lane = |(i, lane)| sim_de::object(&lane, &format!("lanes[{i}]"), &format!("lanes[{i}]."));
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

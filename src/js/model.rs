//! The article's model for JavaScript: `simulate(options)`, which runs the production call
//! machine on a virtual clock, and the article's `Gate` (the memory authority).

use serde::Deserialize;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::de;
use super::errors::{config_error, range_error, type_error};
use super::options::{integer, RateOptions};
use super::shapes::to_js;
use super::text::number;
use crate::core::rules::allowance::Rate;
use crate::core::rules::ranges::{COUNT, SIM_ATTEMPTS, SIM_CALLS, SIM_SPLIT};
use crate::core::sim::server::Headers;
use crate::core::sim::{self, ArticleGate, Coordination, Lookups, SimLane, SimOptions};

/// `simulate(options)` as given.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SimulateOptions {
    shared: Option<bool>,
    /// `true`, `false` or a number of processes.
    #[serde(default, deserialize_with = "de::value")]
    separate_gates: Option<JsValue>,
    always_reject: Option<bool>,
    max_attempts: Option<f64>,
    /// A number, or `null` for none.
    #[serde(default, deserialize_with = "de::value")]
    retry_budget: Option<JsValue>,
    workers: Option<f64>,
    burst: Option<f64>,
    per_second: Option<f64>,
    retry_after_ms: Option<f64>,
    learn: Option<bool>,
    /// `true` (every answer), `false` (none) or `'throttled'` (429s only).
    #[serde(default, deserialize_with = "de::value")]
    headers: Option<JsValue>,
    /// `{ calls, burst, perSecond }`: event lookups on a limiter of their own.
    #[serde(default, deserialize_with = "de::value")]
    lookups: Option<JsValue>,
    /// Processes sharing a store.
    processes: Option<f64>,
    /// Threads of one process sharing memory.
    threads: Option<f64>,
    store_latency_ms: Option<f64>,
    snapshots: Option<f64>,
    latency_ms: Option<f64>,
    /// `[{ name, weight, workers, snapshots, startMs }]`: lanes of workers on the shared gate.
    #[serde(default, deserialize_with = "de::value")]
    lanes: Option<JsValue>,
}

/// One of `lanes`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct LaneOptions {
    name: Option<String>,
    weight: Option<f64>,
    workers: Option<f64>,
    snapshots: Option<f64>,
    start_ms: Option<f64>,
}

/// `lookups: { calls, burst, perSecond }`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct LookupOptions {
    calls: Option<f64>,
    burst: Option<f64>,
    per_second: Option<f64>,
}

/// Runs the article's virtual-clock model and returns
/// `{ attempts, throttled, completed, abandoned, lastAttemptMs, timeline }`.
#[wasm_bindgen]
pub fn simulate(options: JsValue) -> Result<JsValue, JsValue> {
    let options = sim_options(&options)?;
    let r = sim::simulate(&options).map_err(config_error)?;
    Ok(to_js(&r))
}

fn sim_options(options: &JsValue) -> Result<SimOptions, JsValue> {
    let defaults = SimOptions::default();
    if options.is_undefined() {
        return Ok(defaults);
    }
    let o: SimulateOptions = de::object(options, "options", "")?;
    let snapshots = integer("snapshots", o.snapshots, SIM_CALLS)?.unwrap_or(1);
    let lanes = match &o.lanes {
        Some(lanes) => sim_lanes(lanes, snapshots)?,
        None => Vec::new(),
    };
    let separate = match &o.separate_gates {
        None => None,
        Some(v) => match v.as_bool() {
            Some(true) => Some(2),
            Some(false) => None,
            None => match v.as_f64() {
                Some(n) => integer("separateGates", Some(n), SIM_SPLIT)?,
                None => return Err(de::wrong("separateGates", "a boolean or a number", v)),
            },
        },
    };
    let processes = integer("processes", o.processes, SIM_SPLIT)?;
    let threads = integer("threads", o.threads, SIM_SPLIT)?;
    let coordination = Coordination::asked(
        o.shared,
        [separate, processes, threads],
        !lanes.is_empty(),
        o.lookups.is_some(),
    )
    .map_err(type_error)?;
    let headers = match &o.headers {
        None => Headers::Never,
        Some(v) => match (v.as_bool(), v.as_string().as_deref()) {
            (Some(true), _) => Headers::Always,
            (Some(false), _) => Headers::Never,
            (_, Some("throttled")) => Headers::OnThrottle,
            _ => return Err(de::wrong("headers", "a boolean or 'throttled'", v)),
        },
    };
    let lookups = match &o.lookups {
        None => None,
        Some(v) => {
            let l: LookupOptions = de::object(v, "lookups", "lookups.")?;
            let calls = de::required(l.calls, "lookups.calls")?;
            let calls = integer("lookups.calls", Some(calls), SIM_CALLS.from_zero())?.unwrap_or(0);
            let burst = de::required(l.burst, "lookups.burst")?;
            let per_second = de::required(l.per_second, "lookups.perSecond")?;
            let rate = Rate::named(burst, per_second, ["lookups.burst", "lookups.perSecond"])
                .map_err(config_error)?;
            Some(Lookups { calls, rate })
        }
    };
    let retry_budget = match &o.retry_budget {
        None => None,
        Some(v) if v.is_null() => None,
        Some(v) => match v.as_f64() {
            Some(n) => integer("retryBudget", Some(n), COUNT)?,
            None => return Err(de::wrong("retryBudget", "a number or null", v)),
        },
    };
    let burst = o.burst.unwrap_or(defaults.rate.burst());
    let per_second = o.per_second.unwrap_or(defaults.rate.per_second());
    Ok(SimOptions {
        workers: match lanes.is_empty() {
            true => integer("workers", o.workers, SIM_CALLS)?.unwrap_or(defaults.workers),
            false => integer("workers", o.workers, SIM_CALLS.from_zero())?.unwrap_or(0),
        },
        rate: Rate::named(burst, per_second, ["burst", "perSecond"]).map_err(config_error)?,
        retry_after_ms: o.retry_after_ms.unwrap_or(defaults.retry_after_ms),
        coordination,
        always_reject: o.always_reject.unwrap_or(false),
        max_attempts: integer("maxAttempts", o.max_attempts, SIM_ATTEMPTS)?
            .unwrap_or(defaults.max_attempts),
        retry_budget,
        learn: o.learn.unwrap_or(false),
        headers,
        snapshots,
        latency_ms: o.latency_ms.unwrap_or(0.0),
        lookups,
        store_latency_ms: o.store_latency_ms.unwrap_or(defaults.store_latency_ms),
        lanes,
    })
}

/// `lanes`, each checked, its errors naming the lane's field (`lanes[1].weight`). A lane's
/// weight defaults to 1, its start to 0 ms, its workers' snapshots to the run's `snapshots`.
fn sim_lanes(value: &JsValue, snapshots: u32) -> Result<Vec<SimLane>, JsValue> {
    if !js_sys::Array::is_array(value) {
        return Err(de::wrong("lanes", "an array", value));
    }
    let lanes: js_sys::Array = value.clone().unchecked_into();
    let mut read = Vec::new();
    for (i, lane) in lanes.iter().enumerate() {
        let at = format!("lanes[{i}]");
        let l: LaneOptions = de::object(&lane, &at, &format!("{at}."))?;
        let count = |field: &str, n| integer(&format!("{at}.{field}"), n, SIM_CALLS);
        let workers = count("workers", l.workers)?;
        let lane = SimLane {
            name: l.name,
            weight: l.weight.unwrap_or(1.0),
            workers: de::required(workers, &format!("{at}.workers"))?,
            snapshots: count("snapshots", l.snapshots)?.unwrap_or(snapshots),
            start_ms: l.start_ms.unwrap_or(0.0),
        };
        let within = format!("{at}.");
        lane.validate()
            .map_err(|e| range_error(&e.message_in(&within, number)))?;
        read.push(lane);
    }
    Ok(read)
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
        let rate = RateOptions::read(&rate, "rate")?;
        Ok(ModelGate {
            gate: ArticleGate::new(rate),
        })
    }

    /// Admits at `now` and returns `now`, or returns when to come back (spending nothing).
    #[wasm_bindgen(js_name = admitAt)]
    pub fn admit_at(&mut self, now: f64) -> Result<f64, JsValue> {
        Ok(self.gate.admit_at(finite("now", now)?))
    }

    /// Holds admissions until `now + delayMs`; never shortens an existing cooldown.
    pub fn defer(&mut self, now: f64, delay_ms: f64) -> Result<(), JsValue> {
        self.gate
            .defer(finite("now", now)?, delay_ms)
            .map_err(config_error)
    }

    /// No admission before this time.
    #[wasm_bindgen(getter, js_name = blockedUntil)]
    pub fn blocked_until(&self) -> f64 {
        self.gate.blocked_until()
    }
}

fn finite(field: &str, value: f64) -> Result<f64, JsValue> {
    if value.is_finite() {
        Ok(value)
    } else {
        Err(range_error(&format!(
            "Expected `{field}` to be a finite number, got {}",
            number(value)
        )))
    }
}

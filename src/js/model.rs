//! The article's model for JavaScript: `simulate(options)`, which runs the production call
//! machine on a virtual clock, and the article's `Gate` (the memory authority).

use wasm_bindgen::prelude::*;

use super::errors::{config_error, range_error, type_error};
use super::props::{get, set};
use super::read;
use super::text::number;
use crate::core::config::Rate;
use crate::core::sim::{self, ArticleGate, Coordination, SimOptions, SimReport};

const SIM_OPTIONS: &[&str] = &[
    "shared",
    "separateGates",
    "alwaysReject",
    "maxAttempts",
    "retryBudget",
    "workers",
    "burst",
    "perSecond",
    "retryAfterMs",
];

/// Runs the article's virtual-clock model and returns
/// `{ attempts, rejected, completed, abandoned, lastAttemptMs, timeline }`.
#[wasm_bindgen]
pub fn simulate(options: JsValue) -> Result<JsValue, JsValue> {
    let options = sim_options(&options)?;
    let report = sim::simulate(&options).map_err(config_error)?;
    Ok(report_object(&report))
}

/// The report as a plain object, built field by field (no serializer in the module).
fn report_object(report: &SimReport) -> JsValue {
    let object = js_sys::Object::new();
    set(&object, "attempts", (report.attempts as f64).into());
    set(&object, "rejected", (report.rejected as f64).into());
    set(&object, "completed", (report.completed as f64).into());
    set(&object, "abandoned", (report.abandoned as f64).into());
    set(&object, "lastAttemptMs", report.last_attempt_ms.into());
    let timeline = js_sys::Array::new_with_length(report.timeline.len() as u32);
    for (i, attempt) in report.timeline.iter().enumerate() {
        let entry = js_sys::Object::new();
        set(&entry, "at", attempt.at.into());
        set(&entry, "worker", attempt.worker.into());
        set(&entry, "status", attempt.status.into());
        timeline.set(i as u32, entry.into());
    }
    set(&object, "timeline", timeline.into());
    object.into()
}

fn sim_options(options: &JsValue) -> Result<SimOptions, JsValue> {
    read::object(options, "options", SIM_OPTIONS, true)?;
    let defaults = SimOptions::default();
    if options.is_undefined() {
        return Ok(defaults);
    }
    let shared = read::boolean(options, "shared", "shared")?.unwrap_or(false);
    let separate = match get(options, "separateGates").as_bool() {
        Some(true) => Some(2),
        Some(false) => None,
        // Absent (None) or a count of processes.
        None => read::integer(options, "separateGates", "separateGates", 1.0, 1000.0)?,
    };
    let coordination = match (shared, separate) {
        (true, Some(_)) => {
            return Err(type_error(
                "Choose one of `shared` and `separateGates`: one gate, or one per process",
            ))
        }
        (true, None) => Coordination::Shared,
        (false, Some(n)) => Coordination::Separate(n),
        (false, None) => Coordination::Independent,
    };
    let burst = read::number(options, "burst", "burst")?.unwrap_or(defaults.rate.burst());
    let per_second =
        read::number(options, "perSecond", "perSecond")?.unwrap_or(defaults.rate.per_second());
    let budget = get(options, "retryBudget");
    let retry_budget = if budget.is_null() {
        None
    } else {
        read::integer(options, "retryBudget", "retryBudget", 0.0, 1e9)?
    };
    Ok(SimOptions {
        workers: read::integer(options, "workers", "workers", 1.0, 100_000.0)?
            .unwrap_or(defaults.workers),
        rate: Rate::named(burst, per_second, ["burst", "perSecond"]).map_err(config_error)?,
        retry_after_ms: read::number(options, "retryAfterMs", "retryAfterMs")?
            .unwrap_or(defaults.retry_after_ms),
        coordination,
        always_reject: read::boolean(options, "alwaysReject", "alwaysReject")?.unwrap_or(false),
        max_attempts: read::integer(options, "maxAttempts", "maxAttempts", 1.0, 1000.0)?
            .unwrap_or(defaults.max_attempts),
        retry_budget,
    })
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
        read::object(&rate, "rate", &["burst", "perSecond"], false)?;
        let rate = Rate::new(
            read::required_number(&rate, "burst", "rate.burst")?,
            read::required_number(&rate, "perSecond", "rate.perSecond")?,
        )
        .map_err(config_error)?;
        Ok(ModelGate {
            gate: ArticleGate::new(rate),
        })
    }

    /// Admits at `now` and returns `now`, or returns when to come back (spending nothing).
    #[wasm_bindgen(js_name = admitAt)]
    pub fn admit_at(&mut self, now: f64) -> Result<f64, JsValue> {
        Ok(self.gate.admit_at(finite("now", now)?))
    }

    /// Holds admissions until `now + delayMs`; never shortens an existing hold.
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

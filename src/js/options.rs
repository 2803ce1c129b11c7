//! `createFetch` options and `batch` options, read into the core's types. Every field is
//! type-checked here and range-checked by the core, so errors name the field.

use std::rc::Rc;

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::errors::{config_error, range_error, type_error};
use super::events::Events;
use super::props::get;
use super::read;
use super::redis::{is_store, RedisStore};
use super::text::number;
use crate::core::backoff::Backoff;
use crate::core::budget::RefillingConfig;
use crate::core::classify::{valid_method, RetryRules};
use crate::core::config::{at_least, Rate};
use crate::core::policy::RetryPolicy;
use crate::core::quota::valid_usage_url;
use crate::core::Millis;

const OPTIONS: &[&str] = &[
    "rate",
    "fetch",
    "retry",
    "onEvent",
    "usageUrl",
    "store",
    "maxWaitMs",
    "maxWaiting",
];
const RETRY: &[&str] = &[
    "maxAttempts",
    "timeBudgetMs",
    "attemptTimeoutMs",
    "baseMs",
    "capMs",
    "statuses",
    "methods",
    "budget",
];
const BUDGET: &[&str] = &["capacity", "throttleCost", "transientCost", "successRefill"];
const BATCH: &[&str] = &["deadlineMs", "retryBudget"];

/// A wrapper's configuration.
pub struct Config {
    /// The key's allowance.
    pub rate: Rate,
    /// The inner fetch; the global one when `None`.
    pub fetch: Option<js_sys::Function>,
    /// The retry policy; `None` for `retry: false` (observe and admit only).
    pub retry: Option<Rc<RetryPolicy>>,
    /// Refuse a call whose admission is predicted later than this.
    pub max_wait_ms: Option<Millis>,
    /// Refuse a call when this many already wait.
    pub max_waiting: Option<usize>,
    /// The gate's shared, refilling retry budget.
    pub budget: Option<RefillingConfig>,
    /// The `onEvent` hook.
    pub events: Events,
    /// Where `GET /usage` is, when it cannot be derived from the request URL.
    pub usage_url: Option<String>,
    /// The shared store; `None` keeps the gate in this process's memory.
    pub store: Option<Rc<RedisStore>>,
}

/// Reads `createFetch(options)`.
pub fn config(options: &JsValue) -> Result<Config, JsValue> {
    read::object(options, "options", OPTIONS, false)?;
    let rate_value = get(options, "rate");
    if rate_value.is_undefined() {
        return Err(type_error(
            "`rate` is required: the provider's allowance for this key, e.g. { burst: 2, perSecond: 2 }",
        ));
    }
    read::object(&rate_value, "rate", &["burst", "perSecond"], false)?;
    let rate = Rate::new(
        read::required_number(&rate_value, "burst", "rate.burst")?,
        read::required_number(&rate_value, "perSecond", "rate.perSecond")?,
    )
    .map_err(config_error)?;
    let (retry, budget) = retry(&get(options, "retry"))?;
    let usage_url = get(options, "usageUrl");
    let usage_url = if usage_url.is_undefined() {
        None
    } else {
        Some(usage_url.as_string().ok_or_else(|| {
            type_error(&format!(
                "Expected `usageUrl` to be a string, got {}",
                read::describe(&usage_url)
            ))
        })?)
    };
    if let Some(url) = &usage_url {
        if !valid_usage_url(url) {
            return Err(type_error(
                "Expected `usageUrl` to be an absolute http: or https: URL",
            ));
        }
    }
    let max_wait_ms = read::number(options, "maxWaitMs", "maxWaitMs")?
        .map(|ms| at_least("maxWaitMs", ms, 0.0, "a finite number >= 0"))
        .transpose()
        .map_err(config_error)?;
    let max_waiting =
        read::integer(options, "maxWaiting", "maxWaiting", 0.0, 1e9)?.map(|n| n as usize);
    let events = Events::new(function(options, "onEvent")?);
    let store = get(options, "store");
    let store = if store.is_undefined() {
        None
    } else if is_store(&store) {
        Some(RedisStore::from_descriptor(&store)?)
    } else {
        return Err(type_error(
            "Expected `store` to come from redisStore(client)",
        ));
    };
    Ok(Config {
        store,
        rate,
        fetch: function(options, "fetch")?,
        retry: retry.map(Rc::new),
        max_wait_ms,
        max_waiting,
        budget,
        events,
        usage_url,
    })
}

fn function(options: &JsValue, key: &str) -> Result<Option<js_sys::Function>, JsValue> {
    let value = get(options, key);
    if value.is_undefined() {
        return Ok(None);
    }
    value.dyn_into().map(Some).map_err(|v| {
        type_error(&format!(
            "Expected `{key}` to be a function, got {}",
            read::describe(&v)
        ))
    })
}

fn retry(value: &JsValue) -> Result<(Option<RetryPolicy>, Option<RefillingConfig>), JsValue> {
    if *value == JsValue::FALSE {
        return Ok((None, None));
    }
    if value.is_undefined() || *value == JsValue::TRUE {
        return Ok((Some(RetryPolicy::default()), Some(RefillingConfig::DEFAULT)));
    }
    read::object(value, "retry", RETRY, false)?;
    let d = RetryPolicy::default();
    let number =
        |key, field, default| Ok::<_, JsValue>(read::number(value, key, field)?.unwrap_or(default));
    let backoff = Backoff::new(
        number("baseMs", "retry.baseMs", d.backoff.base_ms())?,
        number("capMs", "retry.capMs", d.backoff.cap_ms())?,
    )
    .map_err(config_error)?;
    let statuses = match list(value, "statuses", "retry.statuses")? {
        None => d.rules.statuses().to_vec(),
        Some(items) => items
            .iter()
            .map(|v| match v.as_f64() {
                Some(n) if n.fract() == 0.0 && (100.0..=599.0).contains(&n) => Ok(n as u16),
                _ => Err(type_error(
                    "Expected `retry.statuses` to hold HTTP status codes",
                )),
            })
            .collect::<Result<_, _>>()?,
    };
    let methods = match list(value, "methods", "retry.methods")? {
        None => d.rules.methods().to_vec(),
        Some(items) => items
            .iter()
            .map(|v| {
                v.as_string().filter(|m| valid_method(m)).ok_or_else(|| {
                    type_error("Expected `retry.methods` to hold HTTP method names (tokens)")
                })
            })
            .collect::<Result<_, _>>()?,
    };
    let policy = RetryPolicy {
        rules: RetryRules::new(statuses, methods).map_err(config_error)?,
        backoff,
        max_attempts: read::integer(value, "maxAttempts", "retry.maxAttempts", 1.0, 100.0)?
            .unwrap_or(d.max_attempts),
        time_budget_ms: number("timeBudgetMs", "retry.timeBudgetMs", d.time_budget_ms)?,
        attempt_timeout_ms: number(
            "attemptTimeoutMs",
            "retry.attemptTimeoutMs",
            d.attempt_timeout_ms,
        )?,
    }
    .validate()
    .map_err(config_error)?;
    Ok((Some(policy), budget(&get(value, "budget"))?))
}

fn budget(value: &JsValue) -> Result<Option<RefillingConfig>, JsValue> {
    if *value == JsValue::FALSE {
        return Ok(None);
    }
    read::object(value, "retry.budget", BUDGET, true)?;
    if value.is_undefined() {
        return Ok(Some(RefillingConfig::DEFAULT));
    }
    let d = RefillingConfig::DEFAULT;
    let number =
        |key, field, default| Ok::<_, JsValue>(read::number(value, key, field)?.unwrap_or(default));
    RefillingConfig {
        capacity: number("capacity", "retry.budget.capacity", d.capacity)?,
        throttle_cost: number("throttleCost", "retry.budget.throttleCost", d.throttle_cost)?,
        transient_cost: number(
            "transientCost",
            "retry.budget.transientCost",
            d.transient_cost,
        )?,
        success_refill: number(
            "successRefill",
            "retry.budget.successRefill",
            d.success_refill,
        )?,
    }
    .validate()
    .map(Some)
    .map_err(config_error)
}

fn list(object: &JsValue, key: &str, field: &str) -> Result<Option<js_sys::Array>, JsValue> {
    let value = get(object, key);
    if value.is_undefined() {
        return Ok(None);
    }
    if !js_sys::Array::is_array(&value) {
        return Err(type_error(&format!(
            "Expected `{field}` to be an array, got {}",
            read::describe(&value)
        )));
    }
    Ok(Some(value.unchecked_into()))
}

/// `batch({ deadlineMs, retryBudget })`: the round's length and its retry allowance.
pub fn batch(options: &JsValue) -> Result<(Millis, Option<u32>), JsValue> {
    read::object(options, "batch options", BATCH, false)?;
    let deadline = read::required_number(options, "deadlineMs", "deadlineMs")?;
    if !(deadline.is_finite() && deadline > 0.0) {
        return Err(range_error(&format!(
            "`deadlineMs` must be a finite number greater than 0, got {}",
            number(deadline)
        )));
    }
    let budget = read::integer(options, "retryBudget", "retryBudget", 0.0, 1e9)?;
    Ok((deadline, budget))
}

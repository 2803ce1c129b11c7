//! `createFetch` options and `lane` options, read into the core's types. `de.rs` checks each
//! field's type by the tables below and refuses unknown keys; the core checks ranges. Either
//! way the error names the field.

use std::cell::RefCell;
use std::rc::Rc;

use wasm_bindgen::prelude::*;

use super::de::{self, Field, Kind};
use super::errors::config_error;
use super::events::Events;
use super::metrics::Metrics;
use super::readers::{self, rate};
use super::redis::{is_store, RedisStore};
use crate::core::gates::lane_name;
use crate::core::gates::scope::RequestKey;
use crate::core::gates::profile::{
    limits, Keeping, LaneAsks, Profile, StoreId, THREADS, TYPED_ERRORS,
};
use crate::core::rules::allowance::{Allowance, ConfigError};
use crate::core::rules::budget::RefillingConfig;
use crate::core::rules::cache::{Cache, CacheConfig, CacheGiven};
use crate::core::rules::cache_flow::CacheFlow;
use crate::core::rules::classify::valid_method;
use crate::core::rules::credits::{Costs, Spread, SpreadGiven};
use crate::core::rules::policy::RetryGiven;
use crate::core::rules::quota::usage_url;
use crate::core::rules::ranges::STATUSES;
use crate::core::rules::toggle::Toggle;

/// `createFetch(options)`'s fields.
const OPTIONS: [Field; 13] = [
    ("rate", Kind::Value),
    ("fetch", Kind::Function),
    ("retry", Kind::Value),
    ("onEvent", Kind::Function),
    ("usageUrl", Kind::String),
    ("store", Kind::Value),
    ("maxWaitMs", Kind::Number),
    ("maxWaiting", Kind::Number),
    ("meter", Kind::Value),
    ("threads", Kind::Boolean),
    ("typedErrors", Kind::Boolean),
    ("cache", Kind::Value),
    ("quota", Kind::Value),
];

/// Reads `rate`: left out, `'auto'` or `{ burst, perSecond, learn? }`.
fn allowance(value: Option<JsValue>) -> Result<Allowance, JsValue> {
    let rate = match value.filter(|v| !v.is_undefined()) {
        None => None,
        Some(value) => match value.as_string() {
            Some(text) if text == "auto" => None,
            None if de::is_object(&value) => Some(rate(&value)?),
            _ => return Err(de::wrong("rate", "'auto' or { burst, perSecond }", &value)),
        },
    };
    Ok(Allowance::given(rate))
}

/// `retry: { ... }`'s fields.
const RETRY: [Field; 8] = [
    ("maxAttempts", Kind::Number),
    ("timeBudgetMs", Kind::Number),
    ("attemptTimeoutMs", Kind::Number),
    ("baseMs", Kind::Number),
    ("capMs", Kind::Number),
    ("statuses", Kind::List {
        what: "HTTP status codes (integers from 100 to 599)",
        holds: |v| v.as_f64().and_then(|n| STATUSES.holds(n)).is_some(),
    }),
    ("methods", Kind::List {
        what: "HTTP method names (tokens)",
        holds: |v| v.as_string().is_some_and(|m| valid_method(&m)),
    }),
    ("budget", Kind::Value),
];

/// `lane({ name, weight, reserve, retry, maxWaitMs, maxWaiting })`'s fields.
const LANE: [Field; 6] = [
    ("name", Kind::String),
    ("weight", Kind::Number),
    ("reserve", Kind::Boolean),
    ("retry", Kind::Value),
    ("maxWaitMs", Kind::Number),
    ("maxWaiting", Kind::Number),
];

/// `quota: { spread, reserve, burstMs, refreshMs, costs }`'s fields.
const QUOTA: [Field; 5] = [
    ("spread", Kind::Boolean),
    ("reserve", Kind::Number),
    ("burstMs", Kind::Number),
    ("refreshMs", Kind::Number),
    ("costs", Kind::Value),
];

/// `cache: { maxBytes, maxEntryBytes, defaultTtlMs, staleForMs }`'s fields.
const CACHE: [Field; 5] = [
    ("maxBytes", Kind::Number),
    ("maxEntryBytes", Kind::Number),
    ("defaultTtlMs", Kind::Number),
    ("staleForMs", Kind::Number),
    ("keyHeaders", Kind::List {
        what: "header names (tokens)",
        holds: |v| v.as_string().is_some_and(|name| valid_method(&name)),
    }),
];

/// `retry.budget: { capacity, throttleCost, transientCost, successRefill }`'s fields.
const BUDGET: [Field; 4] = [
    ("capacity", Kind::Number),
    ("throttleCost", Kind::Number),
    ("transientCost", Kind::Number),
    ("successRefill", Kind::Number),
];

/// A wrapper's cache (the core's machine and index; `cache.js`'s side of it, the bytes, made on first use),
/// shared by its lanes and batches.
pub type SharedCache = Rc<CacheCell>;

/// A wrapper's cache: the core's machine, and `cache.js`'s side of it.
pub type CacheCell = RefCell<(CacheFlow<RequestKey>, JsValue)>;

/// A wrapper's JavaScript side: what the gates never see (they have its [`Profile`]).
#[derive(Clone)]
pub struct Config {
    /// The inner fetch; the global one when `None`.
    pub fetch: Option<js_sys::Function>,
    /// The `onEvent` hook.
    pub events: Events,
    /// Where `GET /usage` is, when it cannot be derived from the request URL.
    pub usage_url: Option<String>,
    /// The shared store; `None` keeps the gate in this process's memory.
    pub store: Option<Rc<RedisStore>>,
    /// The OpenTelemetry instruments, when a `meter` was given.
    pub metrics: Option<Rc<Metrics>>,
    /// Whether a gate kept in memory is shared by the process's threads (`threads: false`
    /// keeps it in the thread that makes it), as `describe()` reports it.
    pub threads: bool,
    /// The name of the lane its calls wait in (`stats().lane.name`, and the metrics'
    /// `odds_gate.lane`): `default` for a wrapper's own calls.
    pub lane_name: Rc<str>,
    /// Its cache, shared with its lanes and batches (`cache` option).
    pub cache: Option<SharedCache>,
}

/// Reads `createFetch(options)`: the wrapper's JavaScript side, and what it asks of the gates,
/// its store (if any) known by the number `number` gives it.
pub fn config(
    options: &JsValue,
    number: impl FnOnce(&Rc<RedisStore>) -> StoreId,
) -> Result<(Config, Profile), JsValue> {
    // `createFetch()` alone learns the allowance with every default.
    let [rate, fetch, retry_given, on_event, usage, store, max_wait_ms, max_waiting, meter, threads, typed_errors, cache, quota_given] =
        de::options(options, "options", "", &OPTIONS)?;
    let allowance = allowance(rate.value())?;
    let (retry, budget) =
        RetryGiven::toggled(retry(retry_given.value(), "retry")?).map_err(config_error)?;
    let usage_url = usage_url(usage.string()).map_err(config_error)?;
    let (max_wait_ms, max_waiting) =
        limits(max_wait_ms.number(), max_waiting.number()).map_err(config_error)?;
    let store = match store.value() {
        None => None,
        Some(store) if is_store(&store) => Some(RedisStore::from_descriptor(&store)?),
        Some(other) => return Err(de::wrong("store", "a store from redisStore(client)", &other)),
    };
    let cache = de::toggle(cache.value(), "cache", cache_given)?;
    let key_headers = match &cache {
        Some(Toggle::Given((_, names))) => names.clone(),
        _ => Vec::new(),
    };
    let cache = cache.map(|given| match given {
        Toggle::Flag(flag) => Toggle::Flag(flag),
        Toggle::Given((given, _)) => Toggle::Given(given),
    });
    let cache = CacheConfig::toggled(cache).map_err(config_error)?;
    let cache = cache.map(|c| {
        let cache = CacheFlow::new(Cache::new(c).with_key_headers(key_headers), false);
        Rc::new(RefCell::new((cache, JsValue::UNDEFINED)))
    });
    let caches = cache.is_some();
    let spread = quota(quota_given.value())?;
    let spreads = spread.is_some();
    let meter = meter.value();
    if let Some(m) = meter.as_ref().filter(|m| !de::is_object(m)) {
        let expected = "an OpenTelemetry Meter (metrics.getMeter(name))";
        return Err(de::wrong("meter", expected, m));
    }
    let metrics = meter.map(|m| Metrics::new(&m, caches, spreads).map(Rc::new));
    let metrics = metrics.transpose()?;
    let threads = threads.flag().unwrap_or(THREADS);
    let profile = Profile {
        allowance,
        budget,
        keeping: match &store {
            Some(store) => Keeping::Store(number(store)),
            None => Keeping::Memory { threads },
        },
        policy: retry.map(Rc::new),
        max_wait_ms,
        max_waiting,
        reports_wait: metrics.is_some(),
        typed_errors: typed_errors.flag().unwrap_or(TYPED_ERRORS),
        spread,
    };
    let config = Config {
        store,
        fetch: fetch.function(),
        events: Events::new(on_event.function()),
        usage_url,
        metrics,
        threads,
        lane_name: lane_name::DEFAULT.into(),
        cache,
    };
    Ok((config, profile))
}

/// `lane(options)`: what the lane asks beside its wrapper's profile (see [`Profile::lane`]), its
/// weight, and its name if given (an unnamed lane's comes from its number, once the gates have
/// made it).
pub fn lane(options: &JsValue) -> Result<(LaneAsks, f64, Option<Rc<str>>), JsValue> {
    let [name, weight, reserve, retry_given, max_wait_ms, max_waiting] =
        de::options(options, "lane options", "lane.", &LANE)?;
    // The core names a field as the options name it; the caller reads it as `lane.weight`.
    let within = |e| config_error(ConfigError::within("lane", e));
    let name = name.string();
    if let Some(name) = &name {
        lane_name::check("name", name).map_err(within)?;
    }
    let weight = LaneAsks::weight(weight.number()).map_err(within)?;
    let mut asks = LaneAsks {
        reserve: reserve.flag().unwrap_or(false),
        ..LaneAsks::default()
    };
    if let Some(value) = retry_given.value() {
        // A key whose value is `undefined` is left out, as everywhere.
        let names_budget = de::is_object(&value)
            && js_sys::Reflect::get(&value, &"budget".into()).is_ok_and(|b| !b.is_undefined());
        LaneAsks::own_retry(names_budget).map_err(within)?;
        let (policy, _) =
            RetryGiven::toggled(retry(Some(value), "lane.retry")?).map_err(within)?;
        asks.policy = Some(policy.map(Rc::new));
    }
    (asks.max_wait_ms, asks.max_waiting) =
        limits(max_wait_ms.number(), max_waiting.number()).map_err(within)?;
    Ok((asks, weight, name.map(Rc::from)))
}

/// `retry` as given: a flag or its fields. `field` names it (`retry`, or a lane's `lane.retry`).
fn retry(value: Option<JsValue>, field: &str) -> Result<Option<Toggle<RetryGiven>>, JsValue> {
    de::toggle(value, field, |value| {
        let [max_attempts, time_budget_ms, attempt_timeout_ms, base_ms, cap_ms, statuses, methods, budget_given] =
            de::object(value, field, &format!("{field}."), &RETRY)?;
        Ok(RetryGiven {
            max_attempts: max_attempts.number(),
            time_budget_ms: time_budget_ms.number(),
            attempt_timeout_ms: attempt_timeout_ms.number(),
            base_ms: base_ms.number(),
            cap_ms: cap_ms.number(),
            // The items were checked: whole numbers from 100 to 599, and method names.
            statuses: statuses.list(|s| s.as_f64().map(|n| n as u16)),
            methods: methods.list(|m| m.as_string()),
            budget: budget_given.value().map(budget).transpose()?,
        })
    })
}

/// `quota`: an object, whose `spread: true` paces the key's credits to its billing period.
fn quota(value: Option<JsValue>) -> Result<Option<(Spread, Costs)>, JsValue> {
    let Some(value) = value else {
        return Ok(None);
    };
    let [spread, reserve, burst_ms, refresh_ms, costs] =
        de::object(&value, "quota", "quota.", &QUOTA)?;
    let given = SpreadGiven {
        spread: spread.flag(),
        reserve: reserve.number(),
        burst_ms: burst_ms.number(),
        refresh_ms: refresh_ms.number(),
        costs: costs.value(),
    };
    given.costs(readers::costs)?.spread().map_err(config_error)
}

/// `retry.budget` as given: `false` (`None`) or its fields.
fn budget(value: JsValue) -> Result<Option<RefillingConfig>, JsValue> {
    if value == JsValue::FALSE {
        return Ok(None);
    }
    if !de::is_object(&value) {
        return Err(de::wrong("retry.budget", "false or an object", &value));
    }
    let fields = de::object(&value, "retry.budget", "retry.budget.", &BUDGET)?;
    Ok(Some(RefillingConfig::given(fields.map(|f| f.number()))))
}

/// `cache: { ... }` as given, and its `keyHeaders` (none when left out).
fn cache_given(value: &JsValue) -> Result<(CacheGiven, Vec<String>), JsValue> {
    let [max_bytes, max_entry_bytes, default_ttl_ms, stale_for_ms, key_headers] =
        de::object(value, "cache", "cache.", &CACHE)?;
    let given = CacheGiven {
        max_bytes: max_bytes.number(),
        max_entry_bytes: max_entry_bytes.number(),
        default_ttl_ms: default_ttl_ms.number(),
        stale_for_ms: stale_for_ms.number(),
    };
    // The items were checked: header names.
    Ok((given, key_headers.list(|n| n.as_string()).unwrap_or_default()))
}

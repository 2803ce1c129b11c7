//! `createFetch` options and `batch` options, read into the core's types. serde (through
//! `de.rs`) checks every field's type and refuses unknown keys; the core checks ranges. Either
//! way the error names the field.

use std::cell::RefCell;
use std::rc::Rc;

use serde::Deserialize;
use wasm_bindgen::prelude::*;

use super::de::{self, Item};
use super::errors::{config_error, type_error};
use super::events::Events;
use super::metrics::Metrics;
use super::readers::{self, rate};
use super::redis::{is_store, RedisStore};
use crate::core::gates::lane_name;
use crate::core::gates::scope::RequestKey;
use crate::core::gates::profile::{
    limits, Keeping, LaneAsks, Profile, StoreId, THREADS, TYPED_ERRORS,
};
use crate::core::rules::allowance::Allowance;
use crate::core::rules::budget::RefillingConfig;
use crate::core::rules::cache::{Cache, CacheConfig};
use crate::core::rules::classify::valid_method;
use crate::core::rules::credits::{Costs, Spread, SpreadGiven};
use crate::core::rules::policy::RetryGiven;
use crate::core::rules::quota::usage_url;
use crate::core::rules::ranges::STATUSES;
use crate::core::rules::toggle::Toggle;

/// `createFetch(options)` as given.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Options {
    #[serde(default, deserialize_with = "de::value")]
    rate: Option<JsValue>,
    #[serde(default, deserialize_with = "de::function")]
    fetch: Option<js_sys::Function>,
    #[serde(default, deserialize_with = "de::value")]
    retry: Option<JsValue>,
    #[serde(default, deserialize_with = "de::function")]
    on_event: Option<js_sys::Function>,
    usage_url: Option<String>,
    #[serde(default, deserialize_with = "de::value")]
    store: Option<JsValue>,
    max_wait_ms: Option<f64>,
    max_waiting: Option<f64>,
    #[serde(default, deserialize_with = "de::value")]
    meter: Option<JsValue>,
    threads: Option<bool>,
    typed_errors: Option<bool>,
    #[serde(default, deserialize_with = "de::value")]
    cache: Option<JsValue>,
    #[serde(default, deserialize_with = "de::value")]
    quota: Option<JsValue>,
}

/// Reads `rate`: left out, `'auto'` or `{ burst, perSecond, learn? }`.
fn allowance(value: Option<JsValue>) -> Result<Allowance, JsValue> {
    let rate = match value.filter(|v| !v.is_undefined()) {
        None => None,
        Some(value) => match value.as_string() {
            Some(text) if text == "auto" => None,
            Some(_) => return Err(de::wrong("rate", "'auto' or { burst, perSecond }", &value)),
            None => Some(rate(&value)?),
        },
    };
    Ok(Allowance::given(rate))
}

/// `retry: { ... }`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RetryOptions {
    max_attempts: Option<f64>,
    time_budget_ms: Option<f64>,
    attempt_timeout_ms: Option<f64>,
    base_ms: Option<f64>,
    cap_ms: Option<f64>,
    #[serde(default, deserialize_with = "de::list")]
    statuses: Option<Vec<Status>>,
    #[serde(default, deserialize_with = "de::list")]
    methods: Option<Vec<Method>>,
    #[serde(default, deserialize_with = "de::value")]
    budget: Option<JsValue>,
}

/// `lane({ name, weight, reserve, retry, maxWaitMs, maxWaiting })`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct LaneOptions {
    name: Option<String>,
    weight: Option<f64>,
    reserve: Option<bool>,
    #[serde(default, deserialize_with = "de::value")]
    retry: Option<JsValue>,
    max_wait_ms: Option<f64>,
    max_waiting: Option<f64>,
}

/// An item of `retry.statuses`.
struct Status(u16);

impl Item for Status {
    const WHAT: &'static str = "HTTP status codes (integers from 100 to 599)";
    fn from_js(value: JsValue) -> Option<Self> {
        STATUSES.holds(value.as_f64()?).map(|n| Status(n as u16))
    }
}

/// An item of `retry.methods`.
struct Method(String);

impl Item for Method {
    const WHAT: &'static str = "HTTP method names (tokens)";
    fn from_js(value: JsValue) -> Option<Self> {
        value.as_string().filter(|m| valid_method(m)).map(Method)
    }
}

/// A wrapper's cache (the core's index; `cache.js`'s side of it, the bytes, made on first use),
/// shared by its lanes and batches.
pub type SharedCache = Rc<RefCell<(Cache<RequestKey, u32>, JsValue)>>;

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
    let o: Options = de::options(options, "options")?;
    let allowance = allowance(o.rate)?;
    let (retry, budget) = RetryGiven::toggled(retry(o.retry)?).map_err(config_error)?;
    let usage_url = usage_url(o.usage_url).map_err(config_error)?;
    let (max_wait_ms, max_waiting) = limits(o.max_wait_ms, o.max_waiting).map_err(config_error)?;
    let store = match o.store {
        None => None,
        Some(store) if is_store(&store) => Some(RedisStore::from_descriptor(&store)?),
        Some(_) => {
            return Err(type_error(
                "Expected `store` to come from redisStore(client)",
            ))
        }
    };
    let cache = de::toggle(o.cache, "cache", |v| de::object(v, "cache", "cache."))?;
    let cache = CacheConfig::toggled(cache).map_err(config_error)?;
    let cache = cache.map(|c| Rc::new(RefCell::new((Cache::new(c), JsValue::UNDEFINED))));
    let caches = cache.is_some();
    let spread = quota(o.quota)?;
    let spreads = spread.is_some();
    let metrics = o.meter.map(|m| Metrics::new(&m, caches, spreads).map(Rc::new));
    let metrics = metrics.transpose()?;
    let threads = o.threads.unwrap_or(THREADS);
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
        typed_errors: o.typed_errors.unwrap_or(TYPED_ERRORS),
        spread,
    };
    let config = Config {
        store,
        fetch: o.fetch,
        events: Events::new(o.on_event),
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
    let o: LaneOptions = de::options(options, "lane options")?;
    if let Some(name) = &o.name {
        lane_name::check("name", name).map_err(config_error)?;
    }
    let weight = LaneAsks::weight(o.weight).map_err(config_error)?;
    let mut asks = LaneAsks {
        reserve: o.reserve.unwrap_or(false),
        ..LaneAsks::default()
    };
    if let Some(value) = o.retry {
        let names_budget =
            de::is_object(&value) && js_sys::Reflect::has(&value, &"budget".into()) == Ok(true);
        LaneAsks::own_retry(names_budget).map_err(config_error)?;
        let (policy, _) = RetryGiven::toggled(retry(Some(value))?).map_err(config_error)?;
        asks.policy = Some(policy.map(Rc::new));
    }
    (asks.max_wait_ms, asks.max_waiting) =
        limits(o.max_wait_ms, o.max_waiting).map_err(config_error)?;
    Ok((asks, weight, o.name.map(Rc::from)))
}

/// `retry` as given: a flag or its fields.
fn retry(value: Option<JsValue>) -> Result<Option<Toggle<RetryGiven>>, JsValue> {
    de::toggle(value, "retry", |value| {
        let r: RetryOptions = de::object(value, "retry", "retry.")?;
        Ok(RetryGiven {
            max_attempts: r.max_attempts,
            time_budget_ms: r.time_budget_ms,
            attempt_timeout_ms: r.attempt_timeout_ms,
            base_ms: r.base_ms,
            cap_ms: r.cap_ms,
            statuses: r.statuses.map(|s| s.into_iter().map(|s| s.0).collect()),
            methods: r.methods.map(|m| m.into_iter().map(|m| m.0).collect()),
            budget: r.budget.map(budget).transpose()?,
        })
    })
}

/// `quota`: an object, whose `spread: true` paces the key's credits to its billing period.
fn quota(value: Option<JsValue>) -> Result<Option<(Spread, Costs)>, JsValue> {
    let Some(value) = value else {
        return Ok(None);
    };
    let q: SpreadGiven<readers::Costs> = de::object(&value, "quota", "quota.")?;
    q.costs(readers::costs)?.spread().map_err(config_error)
}

/// `retry.budget` as given: `false` (`None`) or its fields.
fn budget(value: JsValue) -> Result<Option<RefillingConfig>, JsValue> {
    if value == JsValue::FALSE {
        return Ok(None);
    }
    if !de::is_object(&value) {
        return Err(de::wrong("retry.budget", "false or an object", &value));
    }
    de::object(&value, "retry.budget", "retry.budget.").map(Some)
}

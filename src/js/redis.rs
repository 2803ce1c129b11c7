//! The Redis store as the bindings see it: a duck-typed client (ioredis, node-redis or
//! @upstash/redis over HTTP), the gate script loaded once and run with `EVALSHA`. The gate decides what to run, when a call is too
//! late, and what to do while Redis does not answer (`core::gate::store_link`); this module
//! only runs operations and reads the answers.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use serde::Serialize;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::{spawn_local, JsFuture};

use super::de::{self, Kind};
use super::errors::{config_error, type_error};
use super::props::get;
use super::text::number;
use crate::core::authority::Op;
use crate::core::gate::store_link::given::StoreGiven;
use crate::core::gate::store_link::{StoreReply, StoreSettings};
use crate::core::gates::fleet::Shared;
use crate::core::gates::scope::{RequestKey, Scope};
use crate::core::rules::allowance::Rate;
use crate::core::rules::shared_cache;
use crate::core::Millis;
use crate::store;

const BRAND: &str = "__oddsGateStore";

/// `redisStore(client, options?)`: describes a Redis store for `createFetch({ store })`.
#[wasm_bindgen(js_name = redisStore)]
pub fn redis_store(client: JsValue, options: JsValue) -> Result<JsValue, JsValue> {
    check_client(&client)?;
    // Validate now, so a bad option fails where it was written; keep a copy, so changing the
    // object later changes nothing.
    settings(&options)?;
    let descriptor = js_sys::Object::new();
    let set = |k: &str, v: &JsValue| js_sys::Reflect::set(&descriptor, &k.into(), v);
    set(BRAND, &JsValue::TRUE)?;
    set("client", &client)?;
    if !options.is_undefined() {
        let copy = js_sys::Object::assign(&js_sys::Object::new(), options.unchecked_ref());
        set("options", &copy)?;
    }
    Ok(descriptor.into())
}

/// Whether a value came from `redisStore()`.
pub fn is_store(value: &JsValue) -> bool {
    get(value, BRAND).is_truthy()
}

#[wasm_bindgen(module = "/src/js/redis.js")]
extern "C" {
    #[wasm_bindgen(js_name = clientProblem)]
    fn client_problem(client: &JsValue) -> String;
    fn load(client: &JsValue, source: &str) -> js_sys::Promise;
    #[wasm_bindgen(js_name = evalSha)]
    fn eval_sha(client: &JsValue, sha: &str, key: &str, args: &js_sys::Array) -> js_sys::Promise;
    #[wasm_bindgen(js_name = noScript)]
    fn no_script(error: &JsValue) -> bool;
}

/// An ioredis, node-redis or @upstash/redis client (connected, for node-redis), or the
/// `TypeError` that says what it got.
fn check_client(client: &JsValue) -> Result<(), JsValue> {
    match client_problem(client) {
        problem if problem.is_empty() => Ok(()),
        problem => Err(type_error(&format!(
            "Expected an ioredis, node-redis or @upstash/redis client (with script loading and \
             evalsha), got {problem}"
        ))),
    }
}

/// The store's prefix and settings, from `redisStore()`'s options.
fn settings(options: &JsValue) -> Result<(String, StoreSettings), JsValue> {
    let fields = [
        ("prefix", Kind::String),
        ("timeoutMs", Kind::Number),
        ("onFailure", Kind::String),
        ("localShare", Kind::Number),
        ("retryMs", Kind::Number),
    ];
    let [prefix, timeout_ms, on_failure, local_share, retry_ms] =
        de::options(options, "redisStore options", "", &fields)?;
    let given = StoreGiven {
        prefix: prefix.string(),
        timeout_ms: timeout_ms.number(),
        on_failure: on_failure.string(),
        local_share: local_share.number(),
        retry_ms: retry_ms.number(),
    };
    given.settings().map_err(config_error)
}

/// A connection to the shared store for the gates of one wrapper; `describe()` words its
/// prefix and settings.
#[derive(Serialize)]
pub struct RedisStore {
    #[serde(skip)]
    client: JsValue,
    prefix: String,
    settings: StoreSettings,
    /// When the shared cache last found the store failing (see `rules::shared_cache::asks`).
    #[serde(skip)]
    cache_failed_at: Cell<Millis>,
}

impl RedisStore {
    /// Builds the store from a `redisStore()` descriptor.
    pub fn from_descriptor(descriptor: &JsValue) -> Result<Rc<RedisStore>, JsValue> {
        let client = get(descriptor, "client");
        let (prefix, settings) = settings(&get(descriptor, "options"))?;
        check_client(&client)?;
        Ok(Rc::new(RedisStore {
            client,
            prefix,
            settings,
            cache_failed_at: Cell::new(Millis::NEG_INFINITY),
        }))
    }

    /// Which gates may share: the same prefix is the same shared state.
    pub fn identity(&self) -> String {
        format!("redis:{}", self.prefix)
    }

    /// The gate's key for a scope.
    pub fn key(&self, scope: &Scope) -> String {
        store::key(&self.prefix, scope)
    }

    /// How gates use the store.
    pub fn settings(&self) -> StoreSettings {
        self.settings
    }

    /// Runs `op` on `key` for a gate with `rate` and an optional budget capacity; `process`
    /// names this process's admissions. The gate bounds how long it waits for the answer.
    pub fn run(
        &self,
        key: String,
        op: &Op,
        rate: Rate,
        budget: Option<f64>,
        process: &str,
    ) -> impl std::future::Future<Output = Result<StoreReply, JsValue>> + 'static {
        let args = store::args(op, rate, budget, None, process, &number);
        let client = self.client.clone();
        async move {
            let reply = eval(&client, Script::Gate, &key, &args).await?;
            let field = |i| js_sys::Reflect::get_u32(&reply, i).map(|v| v.as_string());
            let mut fields: [String; 9] = Default::default();
            for (i, text) in (0..).zip(&mut fields) {
                *text = field(i)?.unwrap_or_default();
            }
            store::reply(&fields).ok_or_else(|| {
                type_error(&format!(
                    "Unexpected answer from the gate script: {}",
                    fields[0]
                ))
            })
        }
    }

    /// Whether the shared cache asks the store at `now` (not for `retryMs` after it failed).
    pub fn cache_asks(&self, now: Millis) -> bool {
        let failed_at = self.cache_failed_at.get();
        shared_cache::asks(now, failed_at, self.settings.retry_ms)
    }

    /// The shared cache found the store failing at `now`.
    pub fn cache_failed(&self, now: Millis) {
        self.cache_failed_at.set(now);
    }

    /// Runs `cache.lua` with `args` for the request `key`: its reply. The caller bounds how long
    /// it waits (`timeout_ms` of the settings).
    pub fn cache(
        &self,
        key: &RequestKey,
        args: Vec<String>,
    ) -> impl std::future::Future<Output = Result<JsValue, JsValue>> + 'static {
        let key = store::cache::cache_key(&self.prefix, key);
        let client = self.client.clone();
        async move { eval(&client, Script::Cache, &key, &args).await }
    }

    /// Tells the fleet `facts` about `credential`'s learning gates, nobody waiting: a store that
    /// does not answer only means the others learn for themselves.
    pub fn share(&self, credential: &Scope, facts: &[Shared]) {
        let args = store::put(facts, &number);
        let key = store::learned_key(&self.prefix, credential);
        let client = self.client.clone();
        spawn_local(async move {
            let _ = eval(&client, Script::Learned, &key, &args).await;
        });
    }

    /// What the fleet learned of `credential` (nothing when the store does not answer).
    pub fn recall(
        &self,
        credential: &Scope,
    ) -> impl std::future::Future<Output = Vec<Shared>> + 'static {
        let key = store::learned_key(&self.prefix, credential);
        let client = self.client.clone();
        async move {
            let args = ["get".to_string()];
            let Ok(reply) = eval(&client, Script::Learned, &key, &args).await else {
                return Vec::new();
            };
            if !js_sys::Array::is_array(&reply) {
                return Vec::new();
            }
            let flat: Vec<String> = js_sys::Array::from(&reply)
                .iter()
                .map(|v| v.as_string().unwrap_or_default())
                .collect();
            store::read_all(&flat)
        }
    }
}

/// The scripts the store runs.
#[derive(Clone, Copy)]
enum Script {
    /// The gate's state and transitions (`gate.lua`).
    Gate,
    /// What learning gates share (`learned.lua`).
    Learned,
    /// The fleet's shared cache (`cache.lua`).
    Cache,
}

impl Script {
    fn source(self) -> &'static str {
        match self {
            Script::Gate => store::GATE_SCRIPT,
            Script::Learned => store::LEARNED_SCRIPT,
            Script::Cache => store::cache::CACHE_SCRIPT,
        }
    }
}

thread_local! {
    /// Each script's SHA1 is the same for every client; remember it once.
    static SHAS: RefCell<[Option<String>; 3]> = const { RefCell::new([None, None, None]) };
}

/// Loads `script` into Redis: its SHA1, remembered.
async fn load_script(client: &JsValue, script: Script) -> Result<String, JsValue> {
    let sha = JsFuture::from(load(client, script.source()))
        .await?
        .as_string()
        .ok_or_else(|| type_error("SCRIPT LOAD did not return a SHA"))?;
    SHAS.with(|shas| shas.borrow_mut()[script as usize] = Some(sha.clone()));
    Ok(sha)
}

/// Runs `script` on `key` with `args`, loading it first when Redis has not got it: the reply.
async fn eval(
    client: &JsValue,
    script: Script,
    key: &str,
    args: &[String],
) -> Result<JsValue, JsValue> {
    let args: js_sys::Array = args.iter().map(JsValue::from).collect();
    let known = SHAS.with(|shas| shas.borrow()[script as usize].clone());
    let sha = match known {
        Some(sha) => sha,
        None => load_script(client, script).await?,
    };
    match JsFuture::from(eval_sha(client, &sha, key, &args)).await {
        Err(e) if no_script(&e) => {
            // Redis restarted and forgot the script: load it again, once.
            let sha = load_script(client, script).await?;
            JsFuture::from(eval_sha(client, &sha, key, &args)).await
        }
        other => other,
    }
}

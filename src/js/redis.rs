//! The Redis store as the bindings see it: a duck-typed client (ioredis or node-redis), the
//! gate script loaded once and run with `EVALSHA`, a time limit on every call, and an up/down
//! state that decides between shared admission and the configured fail-safe.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

use super::clock;
use super::errors::{range_error, type_error};
use super::events::Events;
use super::read::{self, get};
use super::sleep::within;
use super::text::number;
use crate::core::config::Rate;
use crate::core::Millis;
use crate::store::{self, Answer, Op};

const BRAND: &str = "__oddsGateStore";
const OPTIONS: &[&str] = &["prefix", "timeoutMs", "onFailure", "localShare", "retryMs"];

/// What a gate does while Redis cannot answer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum OnFailure {
    /// Admit locally at `localShare` of the allowance (a conservative share per process).
    Local,
    /// Reject calls with `GateAbandonedError` reason `store-unavailable`.
    Closed,
}

/// `redisStore(client, options?)`: describes a Redis store for `createFetch({ store })`.
#[wasm_bindgen(js_name = redisStore)]
pub fn redis_store(client: JsValue, options: JsValue) -> Result<JsValue, JsValue> {
    client_kind(&client)?;
    read::object(&options, "redisStore options", OPTIONS, true)?;
    let descriptor = js_sys::Object::new();
    let set = |k: &str, v: JsValue| js_sys::Reflect::set(&descriptor, &k.into(), &v);
    set(BRAND, JsValue::TRUE)?;
    set("client", client)?;
    if options.is_object() {
        for key in OPTIONS {
            set(key, get(&options, key))?;
        }
    }
    // Validate now, so a bad option fails where it was written.
    settings(&descriptor.clone().into())?;
    Ok(descriptor.into())
}

/// Whether a value came from `redisStore()`.
pub fn is_store(value: &JsValue) -> bool {
    get(value, BRAND).is_truthy()
}

#[derive(Clone, Copy, PartialEq)]
enum Client {
    /// node-redis: `scriptLoad(src)`, `evalSha(sha, { keys, arguments })`.
    NodeRedis,
    /// ioredis: `script('LOAD', src)`, `evalsha(sha, numKeys, ...keys, ...args)`.
    IoRedis,
}

fn client_kind(client: &JsValue) -> Result<Client, JsValue> {
    if get(client, "evalSha").is_function() && get(client, "scriptLoad").is_function() {
        Ok(Client::NodeRedis)
    } else if get(client, "evalsha").is_function() && get(client, "script").is_function() {
        Ok(Client::IoRedis)
    } else {
        Err(type_error(
            "Expected an ioredis or node-redis client (with script loading and evalsha)",
        ))
    }
}

struct Settings {
    prefix: String,
    timeout_ms: Millis,
    on_failure: OnFailure,
    local_share: f64,
    retry_ms: Millis,
}

fn settings(descriptor: &JsValue) -> Result<Settings, JsValue> {
    let prefix = match get(descriptor, "prefix") {
        v if v.is_undefined() => "og".to_string(),
        v => v
            .as_string()
            .filter(|p| !p.is_empty() && !p.contains(['{', '}']))
            .ok_or_else(|| {
                type_error("Expected `prefix` to be a non-empty string without braces")
            })?,
    };
    let positive = |key: &str, default: f64| -> Result<f64, JsValue> {
        match read::number(descriptor, key, key)? {
            None => Ok(default),
            Some(n) if n.is_finite() && n > 0.0 => Ok(n),
            Some(n) => Err(range_error(&format!(
                "`{key}` must be a finite number greater than 0, got {}",
                number(n)
            ))),
        }
    };
    let on_failure = match get(descriptor, "onFailure").as_string().as_deref() {
        None | Some("local") => OnFailure::Local,
        Some("closed") => OnFailure::Closed,
        Some(other) => {
            return Err(type_error(&format!(
                "Expected `onFailure` to be 'local' or 'closed', got '{other}'"
            )))
        }
    };
    let local_share = positive("localShare", 0.25)?;
    if local_share > 1.0 {
        return Err(range_error(&format!(
            "`localShare` must be at most 1, got {}",
            number(local_share)
        )));
    }
    Ok(Settings {
        prefix,
        timeout_ms: positive("timeoutMs", 500.0)?,
        on_failure,
        local_share,
        retry_ms: positive("retryMs", 1000.0)?,
    })
}

/// A connection to the shared store for the gates of one wrapper.
pub struct RedisStore {
    client: JsValue,
    kind: Client,
    settings: Settings,
    down_until: Cell<Millis>,
    /// Whether the last call was answered: events fire when this changes.
    up: Cell<bool>,
    failures: Cell<u64>,
    calls: Cell<u64>,
    events: Events,
}

impl RedisStore {
    /// Builds the store from a `redisStore()` descriptor.
    pub fn from_descriptor(
        descriptor: &JsValue,
        events: Events,
    ) -> Result<Rc<RedisStore>, JsValue> {
        let client = get(descriptor, "client");
        Ok(Rc::new(RedisStore {
            kind: client_kind(&client)?,
            client,
            settings: settings(descriptor)?,
            down_until: Cell::new(f64::NEG_INFINITY),
            up: Cell::new(true),
            failures: Cell::new(0),
            calls: Cell::new(0),
            events,
        }))
    }

    /// Which gates may share: the same prefix is the same shared state.
    pub fn identity(&self) -> String {
        format!("redis:{}", self.settings.prefix)
    }

    /// The gate's key for a scope.
    pub fn key(&self, scope: &crate::core::scope::Scope) -> String {
        store::key(&self.settings.prefix, scope)
    }

    /// One line for `describe()`.
    pub fn describe(&self) -> String {
        let s = &self.settings;
        let fail = match s.on_failure {
            OnFailure::Local => format!(
                "each process admits alone at {}% of the allowance",
                number(s.local_share * 100.0)
            ),
            OnFailure::Closed => "calls fail with GateAbandonedError (store-unavailable)".into(),
        };
        format!(
            "shared across processes through Redis (keys {}:{{scope}}:gate, Redis TIME as the clock); \
             if Redis does not answer within {} ms, {fail}, and Redis is asked again after {} ms",
            s.prefix,
            number(s.timeout_ms),
            number(s.retry_ms)
        )
    }

    /// The fail-safe.
    pub fn on_failure(&self) -> OnFailure {
        self.settings.on_failure
    }

    /// The allowance a process may use alone while the store is down.
    pub fn local_rate(&self, rate: Rate) -> Rate {
        let share = self.settings.local_share;
        Rate::new(
            (rate.burst() * share).floor().max(1.0),
            rate.per_second() * share,
        )
        .unwrap_or(rate)
    }

    /// Whether the last call failed recently enough that we should not ask yet.
    pub fn is_down(&self) -> bool {
        clock::now() < self.down_until.get()
    }

    /// Calls made and failures seen, for the figures.
    pub fn counts(&self) -> (u64, u64) {
        (self.calls.get(), self.failures.get())
    }

    /// Runs one operation on `key`. A failure or a late answer marks the store down for
    /// `retryMs`; the first call after that tries again.
    pub async fn run(
        &self,
        key: &str,
        op: Op<'_>,
        rate: Rate,
        budget: Option<f64>,
    ) -> Result<Answer, JsValue> {
        let args = store::args(&op, rate, budget, None, number);
        self.calls.set(self.calls.get() + 1);
        let result = within(self.settings.timeout_ms, self.eval(key.to_string(), args)).await;
        let answer = match result {
            Some(Ok(answer)) => Ok(answer),
            Some(Err(error)) => Err(error),
            None => Err(range_error("Redis did not answer in time")),
        };
        match &answer {
            Ok(_) => self.down_until.set(f64::NEG_INFINITY),
            Err(_) => {
                self.failures.set(self.failures.get() + 1);
                self.down_until.set(clock::now() + self.settings.retry_ms);
            }
        }
        let up = answer.is_ok();
        if self.up.replace(up) != up {
            // `store-down`: admissions fall back to the fail-safe; `store-up`: shared again.
            let kind = if up { "store-up" } else { "store-down" };
            // The key is `<prefix>:{<scope>}:gate`: the scope sits between the braces.
            let scope = key.split(['{', '}']).nth(1).unwrap_or(key);
            self.events.emit(kind, scope, |_| {});
        }
        answer
    }

    fn eval(
        &self,
        key: String,
        args: Vec<String>,
    ) -> impl std::future::Future<Output = Result<Answer, JsValue>> + 'static {
        let (client, kind) = (self.client.clone(), self.kind);
        async move {
            let known = SHA_CACHE.with(|cache| cache.borrow().clone());
            let sha = match known {
                Some(sha) => sha,
                None => load(&client, kind).await?,
            };
            match evalsha(&client, kind, &sha, &key, &args).await {
                Err(e) if is_noscript(&e) => {
                    // Redis restarted and forgot the script: load it again, once.
                    let sha = load(&client, kind).await?;
                    evalsha(&client, kind, &sha, &key, &args).await
                }
                other => other,
            }
        }
    }
}

thread_local! {
    /// The script's SHA1 is the same for every client; remember it once.
    static SHA_CACHE: RefCell<Option<String>> = const { RefCell::new(None) };
}

async fn load(client: &JsValue, kind: Client) -> Result<String, JsValue> {
    let source = JsValue::from_str(store::GATE_SCRIPT);
    let pending = match kind {
        Client::NodeRedis => call(client, "scriptLoad", &[source])?,
        Client::IoRedis => call(client, "script", &["LOAD".into(), source])?,
    };
    let sha = JsFuture::from(js_sys::Promise::resolve(&pending))
        .await?
        .as_string()
        .ok_or_else(|| type_error("SCRIPT LOAD did not return a SHA"))?;
    SHA_CACHE.with(|cache| *cache.borrow_mut() = Some(sha.clone()));
    Ok(sha)
}

async fn evalsha(
    client: &JsValue,
    kind: Client,
    sha: &str,
    key: &str,
    args: &[String],
) -> Result<Answer, JsValue> {
    let strings = |items: &[String]| items.iter().map(JsValue::from).collect::<js_sys::Array>();
    let pending = match kind {
        Client::NodeRedis => {
            let options = js_sys::Object::new();
            js_sys::Reflect::set(&options, &"keys".into(), &strings(&[key.to_string()]))?;
            js_sys::Reflect::set(&options, &"arguments".into(), &strings(args))?;
            call(client, "evalSha", &[sha.into(), options.into()])?
        }
        Client::IoRedis => {
            let mut all: Vec<JsValue> = vec![sha.into(), 1.into(), key.into()];
            all.extend(args.iter().map(JsValue::from));
            call(client, "evalsha", &all)?
        }
    };
    let reply = JsFuture::from(js_sys::Promise::resolve(&pending)).await?;
    let code = js_sys::Reflect::get_u32(&reply, 0)?
        .as_string()
        .unwrap_or_default();
    let field = |i| js_sys::Reflect::get_u32(&reply, i).map(|v| v.as_string().unwrap_or_default());
    let (value, extra) = (field(1)?, field(2)?);
    store::answer(&code, &value, &extra)
        .ok_or_else(|| type_error(&format!("Unexpected answer from the gate script: {code}")))
}

fn call(target: &JsValue, method: &str, args: &[JsValue]) -> Result<JsValue, JsValue> {
    let f: js_sys::Function = get(target, method).dyn_into()?;
    f.apply(target, &args.iter().collect::<js_sys::Array>())
}

fn is_noscript(error: &JsValue) -> bool {
    get(error, "message")
        .as_string()
        .is_some_and(|m| m.as_bytes().windows(8).any(|w| w == b"NOSCRIPT")) // no str searcher
}

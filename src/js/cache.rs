//! `createFetch({ cache })`: the wrapper's cache (the core's `rules::cache_flow` decides), and
//! what `cache.js`, which keeps the entries' bytes and the callers' promises, reports to it.
//! Every report returns the actions to perform next, four numbers each (see
//! [`CacheAction::words`]); calls are known by the machine's numbers.

use wasm_bindgen::prelude::*;

use super::clock;
use super::driver::driver;
use super::errors;
use super::headers::{self, header_value};
use super::props::get;
use super::transport::Transport;
use super::Exported;
use crate::core::gates::scope::{request_key, RequestKey};
use crate::core::rules::cache::{EntryId, How};
use crate::core::parse::freshness::CacheHeaders;
use crate::core::rules::cache::{Cache, Refusal};
use crate::core::rules::cache_flow::{says_json, CallId, Copied, Ended};
use crate::core::rules::cache_request::CacheRequest;
use crate::core::rules::shared_cache::Asked;

#[wasm_bindgen(module = "/src/js/cache.js")]
extern "C" {
    #[wasm_bindgen(thread_local_v2, js_name = cached)]
    static CACHED: js_sys::Function;
}

#[wasm_bindgen]
impl Transport {
    /// `cache.js`'s `cached(transport, send)`, for a wrapper that caches; else undefined.
    #[wasm_bindgen(js_name = cacheWrapper)]
    pub fn cache_wrapper(&self) -> Exported {
        Ok(match self.cache() {
            Some(_) => CACHED.with(Clone::clone).into(),
            None => JsValue::UNDEFINED,
        })
    }

    /// `cache.js`'s side of the cache (undefined until it gives one).
    #[wasm_bindgen(js_name = cacheSide)]
    pub fn cache_side(&self) -> Exported {
        Ok(self
            .cache()
            .map_or(JsValue::UNDEFINED, |c| c.borrow().1.clone()))
    }

    /// Keeps `side` as `cache.js`'s side of the cache, which asks a shared cache first when
    /// `shared` (it has one).
    #[wasm_bindgen(js_name = setCacheSide)]
    pub fn set_cache_side(&self, side: JsValue, shared: bool) {
        if let Some(c) = self.cache() {
            let mut c = c.borrow_mut();
            c.1 = side;
            c.0.share(shared);
        }
    }

    /// The largest body kept (`cache.maxEntryBytes`): `cache.js` copies no more.
    #[wasm_bindgen(js_name = cacheEntryBytes)]
    pub fn cache_entry_bytes(&self) -> f64 {
        self.cache()
            .map_or(0.0, |c| c.borrow().0.cache().config().max_entry_bytes)
    }

    /// A call begins, with the request's `facts` and headers (`asked`: `reads.js`'s
    /// `requestFacts` and `cacheFacts`), its signal already `aborted` or not: its number, then
    /// the actions to perform now (one crossing for a call a kept entry answers).
    #[wasm_bindgen(js_name = cacheBegin)]
    pub fn cache_begin(&self, facts: &str, asked: &str, aborted: bool) -> Vec<f64> {
        let Some(cache) = self.cache() else {
            return Vec::new();
        };
        let now = clock::now();
        let mut c = cache.borrow_mut();
        let request = read(c.0.cache(), facts, asked);
        let held = |key: &RequestKey| self.holds(now, &key.0, &key.1);
        let key = request.as_ref().map(|(k, _)| k.clone());
        let call = c.0.begin(now, request, aborted, || key.as_ref().is_some_and(held));
        let mut out = vec![f64::from(call)];
        out.extend(c.0.take_words());
        out
    }

    /// The shared cache answered `leader`'s ask `[code, ms]` (`cache_share.js`'s; 0 for a
    /// failure), with a fresh entry `bytes` long (below 0: none) and `age_ms` old.
    #[wasm_bindgen(js_name = cacheAsked)]
    pub fn cache_asked(&self, leader: CallId, code: f64, ms: f64, bytes: f64, age_ms: f64) -> Vec<f64> {
        let answer = Asked::from_code(code, ms);
        let entry = (bytes >= 0.0).then_some((bytes, age_ms.max(0.0)));
        let words = self.report(|c| c.asked(clock::now(), leader, answer, entry));
        self.watch_wake();
        words
    }

    /// `leader`'s request ended: `response` (undefined: none), else the rejection `error`.
    #[wasm_bindgen(js_name = cacheEnded)]
    pub fn cache_ended(&self, leader: CallId, response: JsValue, error: JsValue) -> Vec<f64> {
        let ended = match response.is_object() {
            true => {
                let headers = get(&response, "headers");
                let header = |name: &str| match headers.is_object() {
                    true => header_value(&headers, &name.into()),
                    false => None,
                };
                let status = get(&response, "status").as_f64().unwrap_or(0.0);
                Ended::Responded {
                    status: if (0.0..=999.0).contains(&status) { status as u16 } else { 0 },
                    json: says_json(header("content-type").as_deref()),
                    refusal: Refusal::marked(header("x-odds-gate").as_deref()),
                }
            }
            false => Ended::Failed {
                refusal: errors::refusal(&error),
            },
        };
        self.report(|c| c.ended(clock::now(), leader, ended))
    }

    /// `leader`'s answer was read: a response of `status` whose body, `bytes` long, was copied
    /// whole (`copied`; else it could not be), with its caching headers, its `Vary` and its
    /// JSON body's `ttl_seconds` (when the machine asked for it).
    #[wasm_bindgen(js_name = cacheCopied)]
    #[allow(clippy::too_many_arguments)]
    pub fn cache_copied(
        &self,
        leader: CallId,
        status: u16,
        bytes: f64,
        copied: bool,
        cache_control: Option<String>,
        expires: Option<String>,
        date: Option<String>,
        age: Option<String>,
        vary: Option<String>,
        ttl_seconds: Option<f64>,
    ) -> Vec<f64> {
        let headers = CacheHeaders {
            cache_control: cache_control.as_deref(),
            expires: expires.as_deref(),
            date: date.as_deref(),
            age: age.as_deref(),
        };
        let copy = copied.then_some(Copied {
            status,
            bytes,
            headers,
            vary: vary.as_deref(),
            ttl_seconds,
        });
        let (now, wall) = (clock::now(), clock::wall_now());
        self.report(|c| c.copied(now, wall, leader, copy))
    }

    /// `call` no longer waits (its signal aborted; `cache.js` rejects it).
    #[wasm_bindgen(js_name = cacheLeave)]
    pub fn cache_leave(&self, call: CallId) -> Vec<f64> {
        self.report(|c| c.leave(call))
    }

    /// The bytes of `entry` were lost from the threads' ring when it was to answer a call as
    /// action `code` said (a hit, stale, coalesced); `cache.js` sends that call on as it is.
    #[wasm_bindgen(js_name = cacheLost)]
    pub fn cache_lost(&self, entry: f64, code: u8) -> Vec<f64> {
        self.report(|c| c.lost(entry as EntryId, How::of_code(code)))
    }
}

impl Transport {
    /// Reports to the cache's machine (`f`), and returns the actions it has now.
    fn report(&self, f: impl FnOnce(&mut crate::core::rules::cache_flow::CacheFlow<RequestKey>)) -> Vec<f64> {
        let Some(cache) = self.cache() else {
            return Vec::new();
        };
        let mut c = cache.borrow_mut();
        f(&mut c.0);
        c.0.take_words()
    }

    /// When the machine waits for a time (a poll of the shared cache), the driver's timer
    /// wakes it.
    fn watch_wake(&self) {
        let Some(cache) = self.cache() else {
            return;
        };
        if cache.borrow().0.next_wake().is_some() {
            let driver = driver();
            driver.watch_cache(cache);
            driver.drive();
        }
    }
}

/// The key and headers of a request `cache` keeps or joins, from its `facts` and `asked`
/// (`reads.js`'s `requestFacts` and `cacheFacts`); `None` for any other (see `request_key`).
pub(super) fn read(
    cache: &Cache<RequestKey, u32>,
    facts: &str,
    asked: &str,
) -> Option<(RequestKey, CacheRequest)> {
    let (credential, method, body, url) = headers::facts(facts);
    let credential = (credential.api_key.as_deref(), credential.authorization.as_deref());
    let request = CacheRequest::parse(asked)?;
    let key = request_key(credential, (&method, body), url, (&request, cache.key_headers()))?;
    Some((key, request))
}

/// The key of a request `transport`'s cache keeps or joins (see [`read`]).
pub(super) fn key(transport: &Transport, facts: &str, asked: &str) -> Option<RequestKey> {
    let cache = transport.cache()?;
    let cache = cache.borrow();
    read(cache.0.cache(), facts, asked).map(|(key, _)| key)
}

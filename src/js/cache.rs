//! `createFetch({ cache })`: the wrapper's cache (the core's `rules::cache` decides), and what
//! `cache.js`, which keeps the entries' bytes and the callers' promises, asks of it. Calls are
//! known here by `cache.js`'s numbers.

use wasm_bindgen::prelude::*;

use super::clock;
use super::headers::{self, header_value};
use super::props::get;
use super::transport::Transport;
use super::Exported;
use crate::core::gates::scope::{request_key, RequestKey};
use crate::core::parse::freshness::CacheHeaders;
use crate::core::rules::cache::{answered_words, Cache, Landed, Refusal};
use crate::core::rules::cache_request::CacheRequest;

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

    /// Keeps `side` as `cache.js`'s side of the cache.
    #[wasm_bindgen(js_name = setCacheSide)]
    pub fn set_cache_side(&self, side: JsValue) {
        if let Some(c) = self.cache() {
            c.borrow_mut().1 = side;
        }
    }

    /// The largest body kept (`cache.maxEntryBytes`): `cache.js` copies no more.
    #[wasm_bindgen(js_name = cacheEntryBytes)]
    pub fn cache_entry_bytes(&self) -> f64 {
        self.cache()
            .map_or(0.0, |c| c.borrow().0.config().max_entry_bytes)
    }

    /// Call `waiter` with the request's `facts` and headers (`asked`: `reads.js`'s
    /// `requestFacts` and `cacheFacts`): -2 when it is not cached (not a GET, a body, a request
    /// that asks to go upstream or carries no identity), -1 when it leads a request, 0 when it
    /// joined one in flight, the fresh entry that answers it, or `-2 - entry` for a stale entry
    /// that answers it because the gate would hold it past a cooldown or refuse it.
    #[wasm_bindgen(js_name = cacheLookup)]
    pub fn cache_lookup(&self, facts: &str, asked: &str, waiter: u32) -> f64 {
        let Some(cache) = self.cache() else {
            return -2.0;
        };
        let Some((key, request)) = read(&cache.borrow().0, facts, asked) else {
            return -2.0;
        };
        let now = clock::now();
        let held = || self.holds(now, &key.0, &key.1);
        let lookup = cache.borrow_mut().0.lookup(now, &key, (waiter, &request), held);
        lookup.code()
    }

    /// The request `leader` led (for the same `facts` and `asked`) ended as `ended` (a
    /// rejection, or a response the gate marked): when that is the gate's refusal and a stale
    /// entry may answer instead, `[entry, calls to answer with it...]`; else `[]`, and it lands
    /// as anything else does (`cacheLanded`).
    #[wasm_bindgen(js_name = cacheRefused)]
    pub fn cache_refused(
        &self,
        leader: u32,
        facts: &str,
        asked: &str,
        ended: JsValue,
    ) -> Vec<f64> {
        let (Some(cache), Some(refusal)) = (self.cache(), refusal(&ended)) else {
            return Vec::new();
        };
        let cache = &mut cache.borrow_mut().0;
        let Some((key, _)) = read(cache, facts, asked) else {
            return Vec::new();
        };
        answered_words(cache.refused(clock::now(), &key, leader, refusal))
    }

    /// The request `leader` led (for the same `facts` and `asked`) has landed: a response of
    /// `status` (0: none) whose body, `bytes` long, was copied whole (`copied`), with its
    /// caching headers, its `Vary` and its JSON body's `ttl_seconds`. Returns the core's
    /// `Settled::words`.
    #[wasm_bindgen(js_name = cacheLanded)]
    #[allow(clippy::too_many_arguments)]
    pub fn cache_landed(
        &self,
        leader: u32,
        facts: &str,
        asked: &str,
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
        let Some(cache) = self.cache() else {
            return vec![0.0, 0.0, 0.0, 0.0];
        };
        let cache = &mut cache.borrow_mut().0;
        let Some((key, _)) = read(cache, facts, asked) else {
            return vec![0.0, 0.0, 0.0, 0.0];
        };
        let headers = CacheHeaders {
            cache_control: cache_control.as_deref(),
            expires: expires.as_deref(),
            date: date.as_deref(),
            age: age.as_deref(),
        };
        let default = cache.config().default_ttl_ms;
        let landed = Landed::of(
            (status, bytes, copied),
            headers,
            ttl_seconds,
            clock::wall_now(),
            default,
        );
        let settled = cache.landed(clock::now(), &key, leader, (landed, vary.as_deref()));
        settled.words()
    }

    /// Call `waiter` no longer waits (its signal aborted): the leader of the request to
    /// cancel when nobody waits for it any more, else -1.
    #[wasm_bindgen(js_name = cacheLeave)]
    pub fn cache_leave(&self, waiter: u32) -> f64 {
        let left = self.cache().and_then(|c| c.borrow_mut().0.leave(waiter));
        left.map_or(-1.0, f64::from)
    }
}

/// The gate's refusal `ended` says, if it is one (see [`Refusal::of`]): a response's mark, or
/// a rejection's `name` and `reason`.
fn refusal(ended: &JsValue) -> Option<Refusal> {
    let headers = get(ended, "headers");
    let mark = headers.is_object().then(|| header_value(&headers, &"x-odds-gate".into()));
    let text = |key| get(ended, key).as_string();
    let (name, reason) = (text("name"), text("reason"));
    Refusal::of(mark.as_ref().map(Option::as_deref), name.as_deref(), reason.as_deref())
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
    read(&cache.0, facts, asked).map(|(key, _)| key)
}

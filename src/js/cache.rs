//! `createFetch({ cache })`: the cache's index, which the core's rules keep
//! (`rules::cache`), and what `cache.js` asks of it. The bytes of every entry and every
//! caller's `Response` are `cache.js`'s; calls are known here by `cache.js`'s numbers.

use std::cell::RefCell;
use std::rc::Rc;

use wasm_bindgen::prelude::*;

use super::clock;
use super::headers;
use super::transport::Transport;
use super::Exported;
use crate::core::base::map::Map;
use crate::core::gates::scope::Scope;
use crate::core::parse::freshness::{freshness, CacheHeaders};
use crate::core::rules::cache::{lifetime, Cache, CacheConfig, CacheFigures, Landed, Lookup};
use crate::core::rules::classify::Body;

#[wasm_bindgen(module = "/src/js/cache.js")]
extern "C" {
    #[wasm_bindgen(thread_local_v2, js_name = cached)]
    static CACHED: js_sys::Function;
}

/// What makes two GETs the same: the credential (its scope, a hash), the URL and `Accept`.
type Key = (Scope, String, String);

/// One wrapper's cache, shared by its lanes and batches.
pub struct CacheIndex {
    cache: Cache<Key, u32>,
    /// What each waiting call asked for.
    asked: Map<u32, Key>,
    /// `cache.js`'s side of it (entries' bytes, waiting callers), made on first use: one for
    /// every wrapper that shares the index.
    side: JsValue,
}

/// Shared by the wrappers of one `createFetch`.
pub type Shared = Rc<RefCell<CacheIndex>>;

impl CacheIndex {
    /// An empty cache.
    pub fn new(config: CacheConfig) -> Shared {
        Rc::new(RefCell::new(CacheIndex {
            cache: Cache::new(config),
            asked: Map::default(),
            side: JsValue::UNDEFINED,
        }))
    }

    /// Its settings, for `describe()`.
    pub fn config(&self) -> CacheConfig {
        self.cache.config()
    }

    /// Its figures, for `stats().cache`.
    pub fn figures(&self) -> CacheFigures {
        self.cache.figures()
    }
}

#[wasm_bindgen]
impl Transport {
    /// `cache.js`'s `cached(transport, send)`, which puts a gated fetch behind the cache, for
    /// a wrapper that caches; undefined for one that does not.
    #[wasm_bindgen(js_name = cacheWrapper)]
    pub fn cache_wrapper(&self) -> Exported {
        Ok(match self.cache() {
            Some(_) => CACHED.with(Clone::clone).into(),
            None => JsValue::UNDEFINED,
        })
    }

    /// `cache.js`'s side of this wrapper's cache (undefined until it gives one, and for a
    /// wrapper that does not cache).
    #[wasm_bindgen(js_name = cacheSide)]
    pub fn cache_side(&self) -> Exported {
        Ok(self
            .cache()
            .map_or(JsValue::UNDEFINED, |c| c.borrow().side.clone()))
    }

    /// Keeps `side` as `cache.js`'s side of this wrapper's cache, for the wrappers sharing it.
    #[wasm_bindgen(js_name = setCacheSide)]
    pub fn set_cache_side(&self, side: JsValue) {
        if let Some(c) = self.cache() {
            c.borrow_mut().side = side;
        }
    }

    /// The largest body kept (`cache.maxEntryBytes`): `cache.js` copies no more.
    #[wasm_bindgen(js_name = cacheEntryBytes)]
    pub fn cache_entry_bytes(&self) -> f64 {
        self.cache()
            .map_or(0.0, |c| c.borrow().cache.config().max_entry_bytes)
    }

    /// Call `waiter` (`cache.js`'s number) with the request's `facts` (`reads.js`) and
    /// `Accept`: -2 when it is not cached (not a GET, or it has a body), -1 when it leads a
    /// request, 0 when it joined one in flight, or the fresh entry that answers it.
    #[wasm_bindgen(js_name = cacheLookup)]
    pub fn cache_lookup(&self, facts: &str, accept: &str, waiter: u32) -> f64 {
        let Some(index) = self.cache() else {
            return -2.0;
        };
        let Some(key) = key(facts, accept) else {
            return -2.0;
        };
        let mut index = index.borrow_mut();
        match index.cache.lookup(clock::now(), &key, waiter) {
            Lookup::Fresh { entry, .. } => entry as f64,
            Lookup::Joined => {
                index.asked.insert(waiter, key);
                0.0
            }
            Lookup::Lead => {
                index.asked.insert(waiter, key);
                -1.0
            }
        }
    }

    /// The request `leader` led (for the same `facts` and `accept`) has landed: a response of
    /// `status` (0: none) whose body of `bytes` was copied whole (`copied`), with its caching
    /// headers and its JSON body's `ttl_seconds`. Returns `[kept entry or 0, n, n entries to
    /// drop..., calls to answer...]`.
    #[wasm_bindgen(js_name = cacheLanded)]
    #[allow(clippy::too_many_arguments)]
    pub fn cache_landed(
        &self,
        leader: u32,
        facts: &str,
        accept: &str,
        status: u16,
        bytes: f64,
        copied: bool,
        cache_control: Option<String>,
        expires: Option<String>,
        date: Option<String>,
        age: Option<String>,
        ttl_seconds: Option<f64>,
    ) -> Vec<f64> {
        let Some(index) = self.cache() else {
            return vec![0.0, 0.0];
        };
        let Some(key) = key(facts, accept) else {
            return vec![0.0, 0.0];
        };
        let mut index = index.borrow_mut();
        index.asked.remove(&leader);
        let landed = match status == 200 && copied {
            true => {
                let headers = CacheHeaders {
                    cache_control: cache_control.as_deref(),
                    expires: expires.as_deref(),
                    date: date.as_deref(),
                    age: age.as_deref(),
                };
                let said = freshness(headers, clock::wall_now());
                let default = index.cache.config().default_ttl_ms;
                Landed::Ok {
                    bytes,
                    lifetime: lifetime(said, ttl_seconds, default),
                }
            }
            false => Landed::Other,
        };
        let settled = index.cache.landed(clock::now(), &key, leader, landed);
        for waiter in &settled.waiting {
            index.asked.remove(waiter);
        }
        let mut out = vec![settled.kept.unwrap_or(0) as f64];
        out.push(settled.dropped.len() as f64);
        out.extend(settled.dropped.iter().map(|&id| id as f64));
        out.extend(settled.waiting.iter().map(|&w| f64::from(w)));
        out
    }

    /// Call `waiter` no longer waits (its signal aborted): the leader of the request to
    /// cancel when nobody waits for it any more, else -1.
    #[wasm_bindgen(js_name = cacheLeave)]
    pub fn cache_leave(&self, waiter: u32) -> f64 {
        let Some(index) = self.cache() else {
            return -1.0;
        };
        let mut index = index.borrow_mut();
        let Some(key) = index.asked.remove(&waiter) else {
            return -1.0;
        };
        index.cache.leave(&key, waiter).map_or(-1.0, f64::from)
    }
}

/// The key of a GET without a body, from the request's `facts` (`reads.js`) and `Accept`.
fn key(facts: &str, accept: &str) -> Option<Key> {
    let (credential, method, body, url) = headers::facts(facts);
    if method != "GET" || body != Body::None {
        return None;
    }
    let scope = Scope::of(
        credential.api_key.as_deref(),
        credential.authorization.as_deref(),
    );
    Some((scope, url, accept.to_owned()))
}

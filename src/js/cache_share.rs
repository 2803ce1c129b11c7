//! The cache shared beyond this thread (the core's `rules::shared_cache` decides): the fleet's
//! through the store's Redis client (`cache.lua`), the threads' cells in their shared memory
//! (`cache_threads.js` holds them, and asks here what each answer means). `cache.js` asks.

use std::cell::RefCell;

use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use super::cache::key;
use super::clock;
use super::random::process_id;
use super::text::number;
use super::transport::Transport;
use super::Exported;
use crate::core::rules::arrivals::Arrivals;
use super::shared_memory::{self, SharedMemory};
use crate::core::authority::cache_cells;
use crate::core::authority::slot::Memory;
use crate::core::rules::shared_cache::{Asked, Sharing};
use crate::store::cache as script;

#[wasm_bindgen(module = "/src/js/cache_share.js")]
extern "C" {
    #[wasm_bindgen(thread_local_v2, js_name = shareOf)]
    static SHARE_OF: js_sys::Function;
}

thread_local! {
    /// The entries this thread holds of what the process's threads fetched: one index for every
    /// cache of the thread that shares with the threads (`cache_share.js` keeps the bytes).
    static ARRIVALS: RefCell<Arrivals> = RefCell::default();
}

#[wasm_bindgen]
impl Transport {
    /// Who shares this wrapper's cache: 0 nobody, 1 the process's threads (`threads`, no
    /// `store`), 2 the fleet through the store.
    #[wasm_bindgen(js_name = cacheShared)]
    pub fn cache_shared(&self) -> u8 {
        let config = self.config();
        Sharing::code(self.cache().is_some(), config.store.is_some(), config.threads)
    }

    /// `cache_share.js`'s `shareOf(transport)`, which makes the shared side of a cache that is
    /// shared; else undefined.
    #[wasm_bindgen(js_name = cacheShareOf)]
    pub fn cache_share_of(&self) -> Exported {
        Ok(match self.cache_shared() {
            0 => JsValue::UNDEFINED,
            _ => SHARE_OF.with(Clone::clone).into(),
        })
    }

    /// The store failed to answer the shared cache (an error, or no answer in `timeoutMs`).
    #[wasm_bindgen(js_name = cacheStoreFailed)]
    pub fn cache_store_failed(&self) {
        if let Some(store) = &self.config().store {
            store.cache_failed(clock::now());
        }
    }

    /// How long a call waits for the store's answer before it goes on alone (`timeoutMs`).
    #[wasm_bindgen(js_name = cacheStoreWait)]
    pub fn cache_store_wait(&self) -> f64 {
        self.config().store.as_ref().map_or(0.0, |s| s.settings().timeout_ms)
    }

    /// Asks the fleet for the request (`facts`, `asked`), claiming its fetch when it may: a
    /// promise of `[code, ms]` (the core's `Asked::code`), with a fresh entry `[1, ms, ms
    /// since put, status, status text, headers (JSON), body (base64), age]`; `[0, 0]` when
    /// the store is not asked now or said nothing understood; rejected when the store failed
    /// (then `cacheStoreFailed`).
    #[wasm_bindgen(js_name = cacheAsk)]
    pub fn cache_ask(&self, facts: &str, asked: &str) -> Exported {
        let (Some(store), Some(key)) = (self.config().store.clone(), key(self, facts, asked)) else {
            return Ok(js_sys::Promise::resolve(&alone()).into());
        };
        if !store.cache_asks(clock::now()) {
            return Ok(js_sys::Promise::resolve(&alone()).into());
        }
        let run = store.cache(&key, script::get(&process_id(), &number));
        Ok(future_to_promise(async move {
            let reply = run.await?;
            if !js_sys::Array::is_array(&reply) {
                return Ok(alone());
            }
            let reply = js_sys::Array::from(&reply);
            let fields: Vec<String> = reply.iter().map(|v| v.as_string().unwrap_or_default()).collect();
            let (numbers, texts) = script::reply_words(&fields);
            let out: js_sys::Array = numbers.into_iter().map(JsValue::from).collect();
            for text in texts {
                out.push(&JsValue::from_str(text));
            }
            Ok(out.into())
        })
        .into())
    }

    /// Puts the entry this process fetched for the request in the fleet's cache, fresh for
    /// `fresh_ms` and kept as long as it may answer stale; its claim released. A promise of
    /// the store's answer (nobody waits on it: a failure only means the others fetch).
    #[wasm_bindgen(js_name = cachePut)]
    #[allow(clippy::too_many_arguments)]
    pub fn cache_put(
        &self,
        facts: &str,
        asked: &str,
        fresh_ms: f64,
        status: u16,
        status_text: String,
        headers: String,
        body: String,
        age: String,
    ) -> Exported {
        let (Some(store), Some(cache), Some(key)) =
            (self.config().store.clone(), self.cache(), key(self, facts, asked))
        else {
            return Ok(js_sys::Promise::resolve(&JsValue::UNDEFINED).into());
        };
        let times = (fresh_ms, cache.borrow().0.cache().config().stale_for_ms);
        let entry = [status_text, headers, body, age];
        let args = script::put(&process_id(), times, status, entry, &number);
        let run = store.cache(&key, args);
        Ok(future_to_promise(run).into())
    }

    /// Releases this process's claim on the request's fetch (it has nothing to put).
    #[wasm_bindgen(js_name = cacheRelease)]
    pub fn cache_release(&self, facts: &str, asked: &str) -> Exported {
        let (Some(store), Some(key)) = (self.config().store.clone(), key(self, facts, asked)) else {
            return Ok(js_sys::Promise::resolve(&JsValue::UNDEFINED).into());
        };
        Ok(future_to_promise(store.cache(&key, script::release(&process_id()))).into())
    }

    /// The shared name of the request (`facts`, `asked`), or '' when it is not cached.
    #[wasm_bindgen(js_name = cacheName)]
    pub fn cache_name(&self, facts: &str, asked: &str) -> String {
        key(self, facts, asked).map_or_else(String::new, |k| script::shared_name(&k))
    }

    /// A thread asks the threads' shared memory for the request called `name`: whether to
    /// take a fresh entry (when the bytes this thread holds of it are fresh), ask the other
    /// threads for its bytes (`since`: when this thread began to listen; `wanted_at`: when it
    /// last asked, -1 never), lead or wait: `[code, ms, now]` (the shared clock); `[0, 0, now]`
    /// when nothing is shared now.
    #[wasm_bindgen(js_name = cacheClaimCell)]
    pub fn cache_claim_cell(&self, name: &str, since: f64, wanted_at: f64) -> Vec<f64> {
        let now = SharedMemory::now();
        let here = ARRIVALS.with(|a| a.borrow_mut().left(now, name));
        let wanted_at = (wanted_at >= 0.0).then_some(wanted_at);
        let asked = match (shared_memory::current(), cache_cells::key_of_name(name)) {
            (Some(memory), Some(key)) => {
                cache_cells::claim(&memory, key, now, here, (since, wanted_at))
            }
            _ => Asked::Alone,
        };
        let [code, ms] = asked.code();
        vec![code, ms, now]
    }

    /// This thread's claim on the request called `name` ends, with an entry fresh for
    /// `fresh_ms` put (below 0: none): the shared clock's time, or -1 when nothing is shared.
    #[wasm_bindgen(js_name = cacheSettleCell)]
    pub fn cache_settle_cell(&self, name: &str, fresh_ms: f64) -> f64 {
        let (Some(memory), Some(key)) = (shared_memory::current(), cache_cells::key_of_name(name)) else {
            return -1.0;
        };
        let now = SharedMemory::now();
        cache_cells::settle(&memory, key, now, (fresh_ms >= 0.0).then_some(fresh_ms));
        now
    }
}

/// The threads' entries as this thread holds them (see `rules::arrivals`), times on the shared
/// clock; any transport asks, the index is the thread's.
#[wasm_bindgen]
impl Transport {
    /// The thread's index holds at least this cache's `maxBytes`.
    #[wasm_bindgen(js_name = cacheArrivalsBound)]
    pub fn cache_arrivals_bound(&self) {
        if let Some(cache) = self.cache() {
            let max = cache.borrow().0.cache().config().max_bytes;
            ARRIVALS.with(|a| a.borrow_mut().bound(max));
        }
    }

    /// Entry `name`, `bytes` long and fresh until `until`, arrived at `now`: the names whose
    /// bytes to drop (`name` itself when it is not kept).
    #[wasm_bindgen(js_name = cacheArrive)]
    pub fn cache_arrive(&self, name: &str, bytes: f64, until: f64, now: f64) -> Vec<String> {
        ARRIVALS.with(|a| a.borrow_mut().arrive(now, name, bytes, until))
    }

    /// How long entry `name` stays fresh after `now`; -1 when it is not here, or stale.
    #[wasm_bindgen(js_name = cacheArrivedLeft)]
    pub fn cache_arrived_left(&self, name: &str, now: f64) -> f64 {
        ARRIVALS.with(|a| a.borrow_mut().left(now, name)).unwrap_or(-1.0)
    }

    /// The names whose lifetime ended by `now`, their bytes to drop.
    #[wasm_bindgen(js_name = cacheArrivedSweep)]
    pub fn cache_arrived_sweep(&self, now: f64) -> Vec<String> {
        ARRIVALS.with(|a| a.borrow_mut().sweep(now))
    }

    /// When to sweep next (the shared clock); -1 when nothing is held.
    #[wasm_bindgen(js_name = cacheArrivedWake)]
    pub fn cache_arrived_wake(&self) -> f64 {
        ARRIVALS.with(|a| a.borrow().wake_at()).unwrap_or(-1.0)
    }
}

fn alone() -> JsValue {
    js_sys::Array::of2(&0.0.into(), &0.0.into()).into()
}

//! The cache shared beyond this thread (the core's `rules::shared_cache` decides): the fleet's
//! through the store's Redis client (`cache.lua`), the threads' cells in their shared memory
//! and the bytes in its ring (`authority::cache_cells` and `rules::arena` decide).
//! `cache_share.js` asks for `cache.js`.

use js_sys::Uint8Array;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use super::arena;
use super::cache::key;
use super::clock;
use super::random::process_id;
use super::text::number;
use super::transport::Transport;
use super::Exported;
use super::shared_memory::{self, SharedMemory};
use crate::core::rules::arena::Place;
use crate::core::authority::cache_cells;
use crate::core::authority::slot::Memory;
use crate::core::rules::shared_cache::{Asked, Sharing, READS};
use crate::store::cache as script;

#[wasm_bindgen(module = "/src/js/cache_share.js")]
extern "C" {
    #[wasm_bindgen(thread_local_v2, js_name = shareOf)]
    static SHARE_OF: js_sys::Function;
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

    /// A thread asks the threads' shared memory for the request called `name`: whether to take
    /// a fresh entry, lead or wait: `[code, ms]` (the core's `Asked::code`), with a fresh entry
    /// `[1, ms, ms since put, place (five numbers), bytes]`, its bytes read from the ring
    /// (bytes found overwritten as they were read are forgotten and the cell asked again,
    /// [`READS`] times at most); `[0, 0]` when nothing is shared now.
    #[wasm_bindgen(js_name = cacheClaimCell)]
    pub fn cache_claim_cell(&self, name: &str) -> Exported {
        let (Some(memory), Some(key)) = (shared_memory::current(), cache_cells::key_of_name(name)) else {
            return Ok(alone());
        };
        let mut lost = None;
        for _ in 0..READS {
            let now = SharedMemory::now();
            let (asked, cell) = cache_cells::claim(&memory, key, now, lost);
            let [code, ms] = asked.code();
            let (Asked::Fresh { .. }, Some(place)) = (asked, cell.place) else {
                return Ok(js_sys::Array::of2(&code.into(), &ms.into()).into());
            };
            if let Some(bytes) = arena::take(&place) {
                let words = js_sys::Float64Array::from(&place.words()[..]);
                let out = js_sys::Array::of3(&code.into(), &ms.into(), &(now - cell.put_at).into());
                out.push(&words);
                out.push(&bytes);
                return Ok(out.into());
            }
            lost = Some(place);
        }
        Ok(alone())
    }

    /// This thread's claim on the request called `name` ends, with an entry fresh for
    /// `fresh_ms` put, its bytes at `place` in the ring (five words; none, or `fresh_ms` below
    /// 0: nothing put): the shared clock's time, or -1 when nothing is shared.
    #[wasm_bindgen(js_name = cacheSettleCell)]
    pub fn cache_settle_cell(&self, name: &str, fresh_ms: f64, place: Vec<f64>) -> f64 {
        let (Some(memory), Some(key)) = (shared_memory::current(), cache_cells::key_of_name(name)) else {
            return -1.0;
        };
        let now = SharedMemory::now();
        let kept = Place::read(&place).filter(|_| fresh_ms >= 0.0);
        cache_cells::settle(&memory, key, now, kept.map(|p| (fresh_ms, p)));
        now
    }

    /// The threads' ring holds at least this cache's `maxBytes`.
    #[wasm_bindgen(js_name = cacheArenaBound)]
    pub fn cache_arena_bound(&self) {
        if let Some(cache) = self.cache() {
            arena::bound(cache.borrow().0.cache().config().max_bytes);
        }
    }

    /// Writes an entry's `bytes` into the threads' ring: their place (five words), or none
    /// when the ring could not take them.
    #[wasm_bindgen(js_name = cacheArenaKeep)]
    pub fn cache_arena_keep(&self, bytes: &Uint8Array) -> Vec<f64> {
        arena::keep(bytes).map_or_else(Vec::new, |p| p.words().to_vec())
    }

    /// The bytes at `place` in the threads' ring (five words), or undefined when they are not
    /// the ones written there any more (an entry a thread keeps, read again for each answer).
    #[wasm_bindgen(js_name = cacheArenaTake)]
    pub fn cache_arena_take(&self, place: Vec<f64>) -> Exported {
        let bytes = Place::read(&place).and_then(|p| arena::take(&p));
        Ok(bytes.map_or(JsValue::UNDEFINED, JsValue::from))
    }
}

fn alone() -> JsValue {
    js_sys::Array::of2(&0.0.into(), &0.0.into()).into()
}

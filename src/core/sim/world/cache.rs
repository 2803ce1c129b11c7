//! The processes' caches, as the bindings' `createFetch({ cache })` puts one before the gates:
//! which GETs a fresh or stale entry answers, which join a request in flight, and how a request
//! that landed (or was refused) answers those that joined it. Apart from the driver's event
//! loop, which asks these when a call starts and when it settles.

use super::log::Served;
use super::{Process, SimCall, World};
use crate::core::gate::action::End;
use crate::core::gates::scope::{request_key, RequestKey};
use crate::core::rules::cache::{Cache, CacheConfig, CacheFigures, Landed, Lookup, Refusal};
use crate::core::rules::cache_request::CacheRequest;

impl World {
    /// Every process's GETs go through a cache of its own with `config` (see
    /// `createFetch({ cache })`); its answers are fresh for `config.default_ttl_ms`. A call
    /// waiting for another's request cannot be aborted here (`simulate()` aborts nothing).
    pub fn cache(&mut self, config: CacheConfig) {
        for process in &mut self.processes {
            process.cache = Some(Cache::new(config));
        }
    }

    /// The processes' caches' figures, their calls (hits, coalesced, stale) added up
    /// (`None`: no cache).
    pub(crate) fn cache_figures(&self) -> Option<CacheFigures> {
        let mut caches = self.processes.iter().filter_map(|p| p.cache.as_ref());
        let first = caches.next()?.figures();
        Some(caches.fold(first, |mut all, c| {
            let f = c.figures();
            all.hits += f.hits;
            all.coalesced += f.coalesced;
            all.stale += f.stale;
            all
        }))
    }

    /// Whether the `index`-th call goes to the gates: it is not a GET its process's cache
    /// answers now (fresh, or stale when its gate would hold it) or later (with the request in
    /// flight it joins). With no stale use (`stale_for_ms` 0), the gate is not asked.
    pub(super) fn leads(&mut self, index: usize, call: &SimCall) -> bool {
        let now = self.now;
        let Process { cache, gates, .. } = &mut self.processes[call.process];
        let Some(cache) = cache.as_mut() else {
            return true;
        };
        let request = cache_request(call);
        let Some(key) = cache_key(call, &request) else {
            return true;
        };
        let stale = cache.config().stale_for_ms > 0.0;
        let held = || stale && gates.holds(now, call.wrapper, &key.0, &call.url);
        let served = match cache.lookup(now, &key, (index, &request), held) {
            Lookup::Lead => return true,
            Lookup::Joined => return false,
            Lookup::Fresh { .. } => Served::Hit,
            Lookup::Stale { .. } => Served::Stale,
        };
        self.log.cached.insert(index, (now, served, 200));
        self.ended_now(index);
        false
    }

    /// The request the `index`-th call of process `p` led has `landed` with `status` (0:
    /// none): the calls that joined it get its answer and end now.
    pub(super) fn landed(
        &mut self,
        p: usize,
        index: usize,
        call: &SimCall,
        landed: Landed,
        status: u16,
    ) {
        let now = self.now;
        let (Some(cache), Some(key)) = (
            self.processes[p].cache.as_mut(),
            cache_key(call, &cache_request(call)),
        ) else {
            return;
        };
        let settled = cache.landed(now, &key, index, (landed, None));
        for joined in settled.waiting.into_iter().filter(|&w| w != index) {
            self.log
                .cached
                .insert(joined, (now, Served::Coalesced, status));
            self.ended_now(joined);
        }
    }

    /// The gate ended the request the `index`-th call of process `p` led with `end`: when that
    /// is a refusal a kept entry answers instead (see [`Refusal::serves_stale`]), the call and
    /// every call waiting for it get the entry, stale, and end now; whether they did.
    pub(super) fn served_stale(
        &mut self,
        p: usize,
        index: usize,
        call: &SimCall,
        end: &End,
    ) -> bool {
        let refusal = match end {
            End::Exhausted { .. } => Refusal::Quota,
            End::Abandoned { abandoned, .. } => Refusal::Abandoned(abandoned.reason),
            _ => return false,
        };
        let now = self.now;
        let (Some(cache), Some(key)) = (
            self.processes[p].cache.as_mut(),
            cache_key(call, &cache_request(call)),
        ) else {
            return false;
        };
        let Some((_, waiting)) = cache.refused(now, &key, index, refusal) else {
            return false;
        };
        let others = waiting.into_iter().filter(|&w| w != index);
        for answered in std::iter::once(index).chain(others) {
            self.log.cached.insert(answered, (now, Served::Stale, 200));
            self.ended_now(answered);
        }
        true
    }
}

/// The headers the cache reads of `call`: its key, as `X-API-Key`.
fn cache_request(call: &SimCall) -> CacheRequest {
    CacheRequest::new("", [("x-api-key", call.key.as_str())])
}

/// The cache's key of `call`, by the bindings' rule (`None`: not cached).
fn cache_key(call: &SimCall, request: &CacheRequest) -> Option<RequestKey> {
    let credential = (Some(call.key.as_str()), None);
    request_key(
        credential,
        (call.method, call.body),
        call.url.clone(),
        (request, &[]),
    )
}

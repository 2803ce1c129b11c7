//! The processes' caches, as the bindings' `createFetch({ cache })` puts one before the gates:
//! the same machine (`rules::cache_flow`) decides which GETs a fresh or stale entry answers,
//! which join a request in flight, and how a request that landed (or was refused) answers
//! those that joined it; this file performs its actions on the simulated calls. Apart from the
//! driver's event loop, which reports when a call starts and when it settles.

use super::cache_state::SimCache;
use super::log::Served;
use super::{Process, SimCall, World, SNAPSHOT_BYTES};
use crate::core::gates::scope::{request_key, RequestKey};
use crate::core::parse::freshness::CacheHeaders;
use crate::core::rules::cache::{Cache, CacheConfig, CacheFigures};
use crate::core::rules::cache_flow::{CacheAction, CacheFlow, Copied, Ended, How};
use crate::core::rules::cache_request::CacheRequest;

impl World {
    /// Every process's GETs go through a cache of its own with `config` (see
    /// `createFetch({ cache })`); its answers are fresh for `config.default_ttl_ms`. A call
    /// waiting for another's request cannot be aborted here (`simulate()` aborts nothing).
    pub fn cache(&mut self, config: CacheConfig) {
        for process in &mut self.processes {
            process.cache = Some(SimCache::new(CacheFlow::new(Cache::new(config), false)));
        }
    }

    /// The processes' caches' figures, their calls (hits, coalesced, stale) added up
    /// (`None`: no cache).
    pub(crate) fn cache_figures(&self) -> Option<CacheFigures> {
        let mut caches = self.processes.iter().filter_map(|p| p.cache.as_ref());
        let first = caches.next()?.flow.cache().figures();
        Some(caches.fold(first, |mut all, c| {
            let f = c.flow.cache().figures();
            all.hits += f.hits;
            all.coalesced += f.coalesced;
            all.stale += f.stale;
            all
        }))
    }

    /// Whether the `index`-th call goes to the gates: the machine has it lead a request, or
    /// it is not cached; else a fresh or stale entry answered it (now) or it joined a request in
    /// flight (answered when that lands). With no stale use (`stale_for_ms` 0), the gate is not
    /// asked.
    pub(super) fn leads(&mut self, index: usize, call: &SimCall) -> bool {
        let now = self.now;
        let Process { cache, gates, .. } = &mut self.processes[call.process];
        let Some(cache) = cache.as_mut() else {
            return true;
        };
        let request = cache_request(call);
        let key = cache_key(call, &request);
        let stale = cache.flow.cache().config().stale_for_ms > 0.0;
        let held = |key: &RequestKey| stale && gates.holds(now, call.wrapper, &key.0, &call.url);
        let scope = key.clone();
        let id = cache.flow.begin(now, key.map(|k| (k, request)), false, || {
            scope.as_ref().is_some_and(held)
        });
        cache.indexes.insert(id, index);
        let actions = cache.flow.take_actions();
        for action in &actions {
            match action {
                CacheAction::Lead { .. } => {
                    cache.leaders.insert(index, id);
                    return true;
                }
                CacheAction::Forward { .. } => return true,
                _ => {}
            }
        }
        // Answered at once (a fresh or stale entry), or waiting for a request in flight.
        self.land(call.process, &actions, 200);
        false
    }

    /// The request the `index`-th call of process `p` led ended as `ended`, its last answer's
    /// `status` (0: none): the machine hears it (and its copy, read at once). `None` when a
    /// stale entry answered it instead (then the call ends here, and so do those that joined
    /// it); else the actions left, which [`land`](World::land) does once the caller logged the
    /// call's own end.
    pub(super) fn cache_ended(
        &mut self,
        p: usize,
        index: usize,
        ended: Ended,
        status: u16,
    ) -> Option<Vec<CacheAction>> {
        let now = self.now;
        let Some(cache) = self.processes[p].cache.as_mut() else {
            return Some(Vec::new());
        };
        let Some(leader) = cache.leaders.remove(&index) else {
            return Some(Vec::new());
        };
        cache.flow.ended(now, leader, ended);
        let mut actions = cache.flow.take_actions();
        if actions
            .iter()
            .any(|a| matches!(a, CacheAction::Take { .. }))
        {
            let copy = Copied {
                status,
                bytes: SNAPSHOT_BYTES,
                headers: CacheHeaders::default(),
                vary: None,
                ttl_seconds: None,
            };
            cache.flow.copied(now, 1.7e12 + now, leader, Some(copy));
            actions.extend(cache.flow.take_actions());
        }
        let stale = actions.iter().any(
            |a| matches!(a, CacheAction::Answer { call, how: How::Stale, .. } if *call == leader),
        );
        if !stale {
            return Some(actions);
        }
        self.land(p, &actions, status);
        None
    }

    /// Does `actions` on process `p`'s calls: every call answered or told its request's end
    /// (`status`) is logged as the cache served it and ends now (a leader whose end the gates
    /// logged is theirs).
    pub(super) fn land(&mut self, p: usize, actions: &[CacheAction], status: u16) {
        let now = self.now;
        let Some(cache) = self.processes[p].cache.as_mut() else {
            return;
        };
        let mut ended = Vec::new();
        for &action in actions {
            let (call, served, status) = match action {
                CacheAction::Answer { call, how, .. } => {
                    let served = match how {
                        How::Hit => Served::Hit,
                        How::Stale => Served::Stale,
                        How::Coalesced => Served::Coalesced,
                    };
                    (call, served, 200)
                }
                CacheAction::Copy { call, .. } | CacheAction::Reject { call, .. } => {
                    (call, Served::Coalesced, status)
                }
                CacheAction::Forward { call } => (call, Served::Coalesced, status),
                _ => continue,
            };
            let Some(index) = cache.indexes.remove(&call) else {
                continue;
            };
            if self.log.settled.contains_key(&index) || self.log.refused.contains_key(&index) {
                continue;
            }
            self.log.cached.insert(index, (now, served, status));
            ended.push(index);
        }
        for index in ended {
            self.ended_now(index);
        }
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

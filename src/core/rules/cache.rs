//! One request per snapshot (`createFetch({ cache })`): which answers are kept and for how long,
//! which calls join a request already in flight, which are answered from a kept entry (fresh,
//! or stale instead of refused), and which entries go when the bytes run out. The index only:
//! the bindings hold the bytes, known here by an `EntryId` and their length.
//!
//! A key `K` is what makes two GETs identical (the credential's scope, the URL, a hash of
//! `Accept` and every part that carries identity, see `cache_request`): an entry is only ever
//! found under its own key, so a credential never sees another's. Within a key, an answer's
//! `Vary` decides which callers it answers. A caller `C` is a call waiting for a request's
//! answer.

use std::hash::Hash;

use crate::core::base::map::Map;
use crate::core::parse::freshness::{freshness, CacheHeaders, Freshness};
use crate::core::rules::allowance::{at_least, ConfigError};
use crate::core::rules::cache_request::{CacheRequest, Vary};
use crate::core::rules::classify::Body;
use crate::core::rules::policy::Reason;
use crate::core::rules::quota::GIVEN_AGAIN;
use crate::core::rules::toggle::Toggle;
use crate::core::Millis;

/// `cache: { maxBytes, maxEntryBytes, defaultTtlMs, staleForMs }` as given (`None`: left out).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CacheGiven {
    /// [`CacheConfig::max_bytes`].
    pub max_bytes: Option<f64>,
    /// [`CacheConfig::max_entry_bytes`].
    pub max_entry_bytes: Option<f64>,
    /// [`CacheConfig::default_ttl_ms`].
    pub default_ttl_ms: Option<f64>,
    /// [`CacheConfig::stale_for_ms`].
    pub stale_for_ms: Option<f64>,
}

/// `cache: { maxBytes, maxEntryBytes, defaultTtlMs, staleForMs }`.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize),
    serde(rename_all = "camelCase")
)]
pub struct CacheConfig {
    /// The bytes every entry together may hold.
    pub max_bytes: f64,
    /// The largest body kept; a larger one is passed on, not kept.
    pub max_entry_bytes: f64,
    /// The lifetime of an answer nothing else gives one (0: calls in flight share one request,
    /// nothing is kept).
    pub default_ttl_ms: Millis,
    /// How long past its lifetime an entry may still answer a call the gate would refuse or
    /// hold past a cooldown.
    pub stale_for_ms: Millis,
}

impl CacheConfig {
    /// `cache: true`.
    pub const DEFAULT: CacheConfig = CacheConfig {
        max_bytes: 16.0 * 1024.0 * 1024.0,
        max_entry_bytes: 1024.0 * 1024.0,
        default_ttl_ms: 0.0,
        stale_for_ms: 10.0 * 60_000.0,
    };

    /// `cache` as given: `true` (the defaults), `false` or left out (none), or its fields
    /// ([`CacheConfig::given`]).
    pub fn toggled(given: Option<Toggle<CacheGiven>>) -> Result<Option<Self>, ConfigError> {
        match given {
            None | Some(Toggle::Flag(false)) => Ok(None),
            Some(Toggle::Flag(true)) => Ok(Some(CacheConfig::DEFAULT)),
            Some(Toggle::Given(g)) => {
                let fields = [
                    g.max_bytes,
                    g.max_entry_bytes,
                    g.default_ttl_ms,
                    g.stale_for_ms,
                ];
                CacheConfig::given(fields).map(Some)
            }
        }
    }

    /// `cache: { maxBytes, maxEntryBytes, defaultTtlMs, staleForMs }` as given (`None`: left
    /// out), the defaults filling in (`maxEntryBytes` at most `maxBytes`), checked.
    pub fn given(
        [max_bytes, max_entry_bytes, default_ttl_ms, stale_for_ms]: [Option<f64>; 4],
    ) -> Result<Self, ConfigError> {
        let d = CacheConfig::DEFAULT;
        let max_bytes = max_bytes.unwrap_or(d.max_bytes);
        CacheConfig {
            max_bytes,
            max_entry_bytes: max_entry_bytes.unwrap_or(d.max_entry_bytes.min(max_bytes)),
            default_ttl_ms: default_ttl_ms.unwrap_or(d.default_ttl_ms),
            stale_for_ms: stale_for_ms.unwrap_or(d.stale_for_ms),
        }
        .validate()
    }

    /// The configuration, or the first field out of its range.
    pub fn validate(self) -> Result<Self, ConfigError> {
        at_least(
            "cache.maxBytes",
            self.max_bytes,
            1.0,
            "a finite number >= 1",
        )?;
        at_least(
            "cache.maxEntryBytes",
            self.max_entry_bytes,
            1.0,
            "a finite number >= 1",
        )?;
        if self.max_entry_bytes > self.max_bytes {
            return Err(ConfigError::OutOfRange {
                field: "cache.maxEntryBytes",
                expected: "a finite number no larger than cache.maxBytes",
                got: self.max_entry_bytes,
            });
        }
        at_least(
            "cache.defaultTtlMs",
            self.default_ttl_ms,
            0.0,
            "a finite number >= 0",
        )?;
        at_least(
            "cache.staleForMs",
            self.stale_for_ms,
            0.0,
            "a finite number >= 0",
        )?;
        Ok(self)
    }
}

/// Whether a request may be cached: a GET without a body (a body, or any other method, may
/// ask or change something another caller's identical-looking request does not).
pub fn cacheable(method: &str, body: Body) -> bool {
    method == "GET" && body == Body::None
}

/// How long an answer is fresh: what its headers say, else its JSON body's `ttl_seconds`
/// (the API's own guidance), else `default_ttl_ms`; `None` when it must not be kept
/// (`no-store`, or a `ttl_seconds` that is not a finite number >= 0).
pub fn lifetime(
    headers: Freshness,
    ttl_seconds: Option<f64>,
    default_ttl_ms: Millis,
) -> Option<Millis> {
    match headers {
        Freshness::NoStore => None,
        Freshness::For(ms) => Some(ms),
        Freshness::Unsaid => match ttl_seconds {
            Some(s) if s.is_finite() && s >= 0.0 => Some(s * 1_000.0),
            Some(_) => None,
            None => Some(default_ttl_ms),
        },
    }
}

/// How often a landing may look for entries past their stale time.
const SWEEP_EVERY_MS: Millis = 1_000.0;

/// An entry's number: the bindings keep its bytes under it.
pub type EntryId = u64;

/// What [`Cache::lookup`] decided for a call.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Lookup {
    /// Answer with this entry, `age_ms` old: no request, no token.
    Fresh {
        /// The entry.
        entry: EntryId,
        /// Its age now.
        age_ms: Millis,
    },
    /// Answer with this entry, past its lifetime but within `stale_for_ms`, `age_ms` old: the
    /// gate would hold the call past a cooldown or refuse it for a spent quota. No request.
    Stale {
        /// The entry.
        entry: EntryId,
        /// Its age now.
        age_ms: Millis,
    },
    /// A request for the same key is in flight: wait for its answer.
    Joined,
    /// Send the request (through the gate); the calls that join it wait for its answer.
    Lead,
}

/// How the gate refused a request a cache's caller led, as the bindings read its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The monthly quota is spent (`QuotaExhaustedError`, or the quota's answer given again).
    Quota,
    /// The call was abandoned (`GateAbandonedError`) for this reason.
    Abandoned(Reason),
}

impl Refusal {
    /// The gate's refusal a led request's response stands for, by its `x-odds-gate` header:
    /// the spent quota's answer given again, or none.
    pub fn marked(mark: Option<&str>) -> Option<Refusal> {
        (mark == Some(GIVEN_AGAIN)).then_some(Refusal::Quota)
    }

    /// Whether a stale entry answers instead: the gate's own refusals, made without an answer
    /// worth more than a kept one (a spent quota, `maxWaitMs` for a token or credit, `maxWaiting`, a batch's
    /// deadline, a store failing closed, a `Retry-After` that outlasts the call). Not retries
    /// spent on the server's failures (`attempts`, `time-budget`, `retry-budget`): the caller
    /// hears of an outage as it would without the cache.
    pub fn serves_stale(self) -> bool {
        match self {
            Refusal::Quota => true,
            Refusal::Abandoned(reason) => matches!(
                reason,
                Reason::QueueWait
                    | Reason::CreditWait
                    | Reason::QueueFull
                    | Reason::Deadline
                    | Reason::StoreUnavailable
                    | Reason::RetryAfterExceedsDeadline
            ),
        }
    }
}

/// How a request in flight ended, for [`Cache::landed`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Landed {
    /// A 200 whose body is `bytes` long, fresh for `lifetime` (see [`lifetime`]); kept if it
    /// may be and fits.
    Ok {
        /// The body's length.
        bytes: f64,
        /// How long it is fresh; `None`: not kept.
        lifetime: Option<Millis>,
    },
    /// Anything else: an error, another status, a body too large to copy. Nothing kept.
    Other,
}

impl Landed {
    /// A response of `status` (0: none) whose body, `bytes` long, was copied whole (`copied`),
    /// with its caching `headers` and its JSON body's `ttl_seconds`, received at `wall_now`
    /// (Unix ms); `default_ttl_ms` for a 200 that says no lifetime.
    pub fn of(
        (status, bytes, copied): (u16, f64, bool),
        headers: CacheHeaders<'_>,
        ttl_seconds: Option<f64>,
        wall_now: Millis,
        default_ttl_ms: Millis,
    ) -> Landed {
        match status == 200 && copied {
            true => Landed::Ok {
                bytes,
                lifetime: lifetime(freshness(headers, wall_now), ttl_seconds, default_ttl_ms),
            },
            false => Landed::Other,
        }
    }
}

/// What the bindings do once a request in flight has landed.
#[derive(Debug, Clone, PartialEq)]
pub struct Settled<C> {
    /// The calls still waiting for it, its leader first if it still waits: each gets the
    /// answer.
    pub waiting: Vec<C>,
    /// The entry the answer is kept as, if it is.
    pub kept: Option<EntryId>,
    /// How long the kept entry is fresh.
    pub fresh_ms: Millis,
    /// How long the shared cache (the threads', the fleet's) may hold it fresh: 0 when it is
    /// not to be shared (not kept, already stale, or it varies by the request's headers).
    pub share_ms: Millis,
    /// Entries to drop (replaced, past their stale time, or least recently used past
    /// `max_bytes`).
    pub dropped: Vec<EntryId>,
    /// Calls that joined the request but whose headers its answer's `Vary` does not accept:
    /// each sends its own.
    pub resend: Vec<C>,
}

/// How an answer reached a call, as its `x-odds-gate-cache` header says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum How {
    /// From a fresh entry, with no request.
    Hit,
    /// From an entry past its lifetime, instead of the gate's hold or refusal.
    Stale,
    /// From another call's request.
    Coalesced,
}

/// The cache's figures (`stats().cache`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CacheFigures {
    /// Entries kept now.
    pub entries: usize,
    /// Their bytes.
    pub bytes: f64,
    /// Calls answered by a fresh entry.
    pub hits: u64,
    /// Calls that joined a request in flight.
    pub coalesced: u64,
    /// Calls answered by a stale entry instead of refused or held.
    pub stale: u64,
    /// Entries dropped for room.
    pub evictions: u64,
}

impl CacheFigures {
    /// Requests the cache saved: each call it answered or joined to another's request.
    pub fn requests_saved(&self) -> u64 {
        self.hits + self.coalesced + self.stale
    }
}

/// A kept answer.
#[derive(Debug, Clone, Copy)]
struct Entry {
    id: EntryId,
    bytes: f64,
    stored_at: Millis,
    fresh_until: Millis,
    /// Its place in the order of use.
    used: u64,
}

/// A kept answer's times and place, and the requests its `Vary` lets it answer.
#[derive(Debug, Clone)]
struct Kept {
    entry: Entry,
    vary: Vary,
}

/// A request in flight: the call that leads it (sends it through the gate), and the calls
/// waiting for its answer (the leader first, while it waits).
#[derive(Debug)]
struct Flight<C> {
    leader: C,
    /// What the leader sent: an answer's `Vary` is matched against it.
    request: CacheRequest,
    waiting: Vec<C>,
}

/// The index of kept answers and requests in flight.
#[derive(Debug)]
pub struct Cache<K, C> {
    config: CacheConfig,
    /// `cache.keyHeaders`: the request headers, beside the credentials, that say who asks.
    key_headers: Vec<String>,
    entries: Map<K, Kept>,
    /// Uses so far: an entry's last is its place in the order of use.
    uses: u64,
    next_id: EntryId,
    /// Requests in flight, and what each call waiting for one asked for, and with which
    /// headers.
    flights: Map<K, Flight<C>>,
    asked: Map<C, (K, CacheRequest)>,
    figures: CacheFigures,
    /// No look for entries past their stale time before this.
    next_sweep: Millis,
}

impl<K: Hash + Eq + Clone, C: Hash + Eq + Copy> Cache<K, C> {
    /// An empty cache.
    pub fn new(config: CacheConfig) -> Self {
        Cache {
            config,
            key_headers: Vec::new(),
            entries: Map::default(),
            uses: 0,
            next_id: 1,
            flights: Map::default(),
            asked: Map::default(),
            figures: CacheFigures::default(),
            next_sweep: Millis::NEG_INFINITY,
        }
    }

    /// The cache with `names` (`cache.keyHeaders`, checked as tokens) as headers that say who
    /// asks, beside the credentials: in lower case, sorted, once each, a part of every key.
    pub fn with_key_headers(mut self, names: Vec<String>) -> Self {
        let mut names: Vec<String> = names.iter().map(|n| n.to_ascii_lowercase()).collect();
        names.sort_unstable();
        names.dedup();
        self.key_headers = names;
        self
    }

    /// `cache.keyHeaders`, in lower case, sorted, once each.
    pub fn key_headers(&self) -> &[String] {
        &self.key_headers
    }

    /// The configuration.
    pub(crate) fn config(&self) -> CacheConfig {
        self.config
    }

    /// What `caller`, a GET for `key` with the headers `request` at `now`, does: answer from
    /// a fresh entry, from a stale one when `held()` says the gate would hold it past a
    /// cooldown or refuse it (asked only then), join the request in flight, or lead a new one.
    /// An entry answers only the requests its `Vary` accepts.
    pub fn lookup(
        &mut self,
        now: Millis,
        key: &K,
        (caller, request): (C, &CacheRequest),
        held: impl FnOnce() -> bool,
    ) -> Lookup {
        let kept = self.entries.get(key);
        if let Some(e) = kept.filter(|k| k.vary.matches(request)).map(|k| k.entry) {
            if now < e.fresh_until {
                self.touch(key);
                self.figures.hits += 1;
                return Lookup::Fresh {
                    entry: e.id,
                    age_ms: now - e.stored_at,
                };
            }
            if self.usable(now, &e) && held() {
                let (entry, age_ms) = self.serve_stale(now, key, e, 1);
                return Lookup::Stale { entry, age_ms };
            }
        }
        match self.flights.get_mut(key) {
            Some(flight) => {
                flight.waiting.push(caller);
                self.asked.insert(caller, (key.clone(), request.clone()));
                self.figures.coalesced += 1;
                Lookup::Joined
            }
            None => {
                let flight = Flight {
                    leader: caller,
                    request: request.clone(),
                    waiting: vec![caller],
                };
                self.flights.insert(key.clone(), flight);
                self.asked.insert(caller, (key.clone(), request.clone()));
                Lookup::Lead
            }
        }
    }

    /// The request `leader` led for `key` was refused by the gate at `now`: when `refusal`
    /// lets a stale entry answer (see [`Refusal::serves_stale`]) and an entry no older than
    /// `stale_for_ms` past its lifetime is kept, the request is settled and every call still
    /// waiting for it gets that entry (each counted as stale), when its `Vary` accepts every
    /// one of them. Else `None`: it lands as anything else does ([`landed`](Self::landed)).
    pub fn refused(
        &mut self,
        now: Millis,
        key: &K,
        leader: C,
        refusal: Refusal,
    ) -> Option<(EntryId, Vec<C>)> {
        let Kept { entry: e, vary } = self.entries.get(key)?;
        let flight = self.flights.get(key).filter(|f| f.leader == leader)?;
        let accepted = |c: &C| self.asked.get(c).is_some_and(|(_, r)| vary.matches(r));
        let e = *e;
        if !refusal.serves_stale() || !self.usable(now, &e) || !flight.waiting.iter().all(accepted)
        {
            return None;
        }
        let waiting = self
            .flights
            .remove(key)
            .map_or_else(Vec::new, |f| f.waiting);
        self.asked.remove(&leader);
        for caller in &waiting {
            self.asked.remove(caller);
        }
        let (entry, _) = self.serve_stale(now, key, e, waiting.len() as u64);
        Some((entry, waiting))
    }

    /// Whether `leader` leads the request in flight for `key`.
    pub fn leads(&self, key: &K, leader: C) -> bool {
        self.flights.get(key).is_some_and(|f| f.leader == leader)
    }

    /// Whether `caller` waits for the request in flight for `key`.
    pub fn waits(&self, key: &K, caller: C) -> bool {
        self.flights
            .get(key)
            .is_some_and(|f| f.waiting.contains(&caller))
    }

    /// Whether `e` may still answer at `now`: no more than `stale_for_ms` past its lifetime.
    fn usable(&self, now: Millis, e: &Entry) -> bool {
        now <= e.fresh_until + self.config.stale_for_ms
    }

    /// `e`, `key`'s entry, answers `calls` calls stale at `now`: its id and age.
    fn serve_stale(&mut self, now: Millis, key: &K, e: Entry, calls: u64) -> (EntryId, Millis) {
        self.touch(key);
        self.figures.stale += calls;
        (e.id, now - e.stored_at)
    }

    /// The request `leader` led for `key` has landed at `now`, its answer's `Vary` read
    /// against what the leader sent: who gets its answer (and who, its `Vary` not matching,
    /// sends their own), and what is kept and dropped. A request cancelled because nobody
    /// waited for it (see [`leave`](Self::leave)) settles nothing, even if a new one for `key`
    /// is in flight.
    pub fn landed(
        &mut self,
        now: Millis,
        key: &K,
        leader: C,
        (landed, vary): (Landed, Option<&str>),
    ) -> Settled<C> {
        let mut settled = Settled {
            waiting: Vec::new(),
            kept: None,
            fresh_ms: 0.0,
            share_ms: 0.0,
            dropped: Vec::new(),
            resend: Vec::new(),
        };
        self.asked.remove(&leader);
        match self.flights.get(key) {
            Some(flight) if flight.leader == leader => {}
            _ => return settled,
        }
        // Entries past their stale time go at a landing, a look through them at most once a
        // second: memory follows the entries that can still answer, with no timer of its own
        // (nothing lands, nothing grows), and many landings cost no look each.
        if now >= self.next_sweep {
            self.next_sweep = now + SWEEP_EVERY_MS;
            settled.dropped = self.sweep(now);
        }
        let Some(flight) = self.flights.remove(key) else {
            return settled;
        };
        let vary = Vary::of(vary, &flight.request);
        for caller in flight.waiting {
            let accepted = match self.asked.remove(&caller) {
                Some((_, request)) => vary.matches(&request),
                None => true, // the leader, whose request the answer is
            };
            match accepted || caller == leader {
                true => settled.waiting.push(caller),
                false => settled.resend.push(caller),
            }
        }
        let Landed::Ok {
            bytes,
            lifetime: Some(lifetime),
        } = landed
        else {
            return settled;
        };
        if (lifetime <= 0.0 && self.config.stale_for_ms <= 0.0) || !vary.keeps() {
            return settled;
        }
        if bytes > self.config.max_entry_bytes {
            return settled;
        }
        if let Some(old) = self.remove(key) {
            settled.dropped.push(old);
        }
        // The least recently used go first: a look through the entries, once per answer kept
        // (a heap or a list in use order would cost more code than the few thousand entries
        // that fit in `max_bytes` cost time).
        while self.figures.bytes + bytes > self.config.max_bytes {
            let oldest = self.entries.iter().min_by_key(|(_, k)| k.entry.used);
            let Some(oldest) = oldest.map(|(k, _)| k.clone()) else {
                break;
            };
            if let Some(id) = self.remove(&oldest) {
                self.figures.evictions += 1;
                settled.dropped.push(id);
            }
        }
        let id = self.next_id;
        self.next_id += 1;
        self.uses += 1;
        let entry = Entry {
            id,
            bytes,
            stored_at: now,
            fresh_until: now + lifetime,
            used: self.uses,
        };
        // Only an answer every request under its key may take goes to the shared cache, and
        // only while it is fresh.
        if vary == Vary::Any && lifetime > 0.0 {
            settled.share_ms = lifetime;
        }
        self.entries.insert(key.clone(), Kept { entry, vary });
        self.figures.entries += 1;
        self.figures.bytes += bytes;
        settled.kept = Some(id);
        settled.fresh_ms = lifetime;
        settled
    }

    /// The request `leader` was to lead for `key` was answered at `now` by the shared cache
    /// (other threads' or the fleet's, see `shared_cache`): an entry `bytes` long, fresh for
    /// `left_ms` more. It lands as a kept 200 does, the leader's call counted as a hit, or as
    /// coalesced when it `waited` for another's request.
    pub fn shared(
        &mut self,
        now: Millis,
        key: &K,
        leader: C,
        (bytes, left_ms): (f64, Millis),
        waited: bool,
    ) -> Settled<C> {
        if self.flights.get(key).is_some_and(|f| f.leader == leader) {
            match waited {
                true => self.figures.coalesced += 1,
                false => self.figures.hits += 1,
            }
        }
        let landed = Landed::Ok {
            bytes,
            lifetime: Some(left_ms),
        };
        // Only answers without `Vary` are shared (see `landed`).
        self.landed(now, key, leader, (landed, None))
    }

    /// `caller` no longer waits for the request it asked for (its signal aborted). When nobody
    /// does any more, the leader of the request to cancel (while anyone waits, it goes on, its
    /// leader's abort included).
    pub fn leave(&mut self, caller: C) -> Option<C> {
        let (key, _) = self.asked.remove(&caller)?;
        let flight = self.flights.get_mut(&key)?;
        flight.waiting.retain(|&c| c != caller);
        if !flight.waiting.is_empty() {
            return None;
        }
        self.flights.remove(&key).map(|f| f.leader)
    }

    /// Drops every entry past its stale time at `now`; returns their ids.
    fn sweep(&mut self, now: Millis) -> Vec<EntryId> {
        let stale_for = self.config.stale_for_ms;
        let old: Vec<K> = (self.entries.iter())
            .filter(|(_, k)| now > k.entry.fresh_until + stale_for)
            .map(|(k, _)| k.clone())
            .collect();
        old.iter().filter_map(|k| self.remove(k)).collect()
    }

    /// The bytes of `entry` were lost (the threads' ring overwrote them) when it was to answer a
    /// call `how`: it goes, and the call it did not answer is not counted as saved. False when
    /// no such entry is kept.
    pub fn lose(&mut self, entry: EntryId, how: How) -> bool {
        let key = (self.entries.iter())
            .find(|(_, k)| k.entry.id == entry)
            .map(|(k, _)| k.clone());
        if key.and_then(|k| self.remove(&k)).is_none() {
            return false;
        }
        let counted = match how {
            How::Hit => &mut self.figures.hits,
            How::Stale => &mut self.figures.stale,
            How::Coalesced => &mut self.figures.coalesced,
        };
        *counted = counted.saturating_sub(1);
        true
    }

    /// The figures now.
    pub fn figures(&self) -> CacheFigures {
        self.figures
    }

    fn touch(&mut self, key: &K) {
        self.uses += 1;
        if let Some(k) = self.entries.get_mut(key) {
            k.entry.used = self.uses;
        }
    }

    fn remove(&mut self, key: &K) -> Option<EntryId> {
        let e = self.entries.remove(key)?.entry;
        self.figures.entries -= 1;
        self.figures.bytes -= e.bytes;
        Some(e.id)
    }
}

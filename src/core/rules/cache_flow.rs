//! The cache's sequence for each call (`createFetch({ cache })`), as a machine like the gates':
//! the bindings report what happened (a call began, the shared cache answered, a led request
//! ended, its copy was read, a call left, the timer fired) and perform the actions it emits,
//! in order. It decides who is answered from which entry and with what `Age`, who joins, who
//! leads, who asks the shared cache and when again, who sends their own request, who hears the
//! leader's failure, and what is kept, shared, released and dropped. The bindings move bytes,
//! build `Response`s and settle promises; the index of entries is [`Cache`]'s.

use std::collections::VecDeque;
use std::hash::Hash;

use crate::core::base::map::Map;
use crate::core::base::protocol;
use crate::core::parse::freshness::{age_ms, CacheHeaders};
pub use crate::core::rules::cache::How;
use crate::core::rules::cache::{Cache, EntryId, Landed, Lookup, Refusal, Settled};
use crate::core::rules::cache_request::CacheRequest;
use crate::core::rules::shared_cache::{follow, Asked};
use crate::core::Millis;

/// A call through the cache, by the machine's number for it.
pub type CallId = u32;

impl How {
    /// How an answer action (`cache.js`'s code: a hit, stale, else coalesced) meant to answer.
    pub fn of_code(code: u8) -> How {
        match code {
            protocol::ACT_HIT => How::Hit,
            protocol::ACT_STALE => How::Stale,
            _ => How::Coalesced,
        }
    }
}

/// One thing for the bindings to do, in the order given.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CacheAction {
    /// Answer `call` with `entry`'s bytes, marked `how`, with an `Age` of `age_s`.
    Answer {
        /// The call.
        call: CallId,
        /// The entry.
        entry: EntryId,
        /// How it came.
        how: How,
        /// Its `Age` header, in whole seconds.
        age_s: f64,
    },
    /// Answer `call` with a copy of what `leader`'s request got (kept or not), marked
    /// coalesced, with an `Age` of `age_s`.
    Copy {
        /// The call.
        call: CallId,
        /// The leader whose answer it gets.
        leader: CallId,
        /// Its `Age` header, in whole seconds.
        age_s: f64,
    },
    /// `call` goes to the gate as it is: it is not cached, or the answer it waited for cannot
    /// be its own (not copied, or its `Vary` names a header the call sent otherwise).
    Forward {
        /// The call.
        call: CallId,
    },
    /// Send `call`'s request for everyone waiting for it, under a signal of its own (it goes on
    /// while anyone waits); report its end with [`ended`](CacheFlow::ended).
    Lead {
        /// The call.
        call: CallId,
    },
    /// Ask the shared cache (the threads', the fleet's) for `call`'s request, claiming its
    /// fetch; report with [`asked`](CacheFlow::asked).
    Ask {
        /// The call.
        call: CallId,
    },
    /// `call` fails as `leader`'s request failed.
    Reject {
        /// The call.
        call: CallId,
        /// The leader whose failure it hears.
        leader: CallId,
    },
    /// `leader`'s request answered: clone the response, give the response itself to the
    /// leader's caller when `give` (else cancel its body), read the clone whole (and its JSON
    /// body's `ttl_seconds` when `ttl`), and report with [`copied`](CacheFlow::copied).
    Take {
        /// The leader.
        leader: CallId,
        /// Whether its caller still waits for it.
        give: bool,
        /// Whether the body's `ttl_seconds` may say how long it is fresh.
        ttl: bool,
    },
    /// Keep what `leader`'s request got (its copy, or the shared cache's entry) as `entry`.
    Keep {
        /// The entry.
        entry: EntryId,
        /// The leader.
        leader: CallId,
    },
    /// Forget `entry`'s bytes.
    Drop {
        /// The entry.
        entry: EntryId,
    },
    /// Put what `leader`'s request got in the shared cache, fresh for `fresh_ms`, its `Age`
    /// `age_s` then; its claim ends.
    Put {
        /// The leader.
        leader: CallId,
        /// How long it is fresh.
        fresh_ms: Millis,
        /// Its `Age` header, in whole seconds.
        age_s: f64,
    },
    /// End `leader`'s claim on the shared cache without an entry.
    Release {
        /// The leader.
        leader: CallId,
    },
    /// Abort `leader`'s request: nobody waits for it any more.
    Cancel {
        /// The leader.
        leader: CallId,
    },
    /// Cancel the body of the response `leader`'s request ended with: nobody reads it.
    Discard {
        /// The leader.
        leader: CallId,
    },
    /// `leader`'s request is over: forget what was held for it.
    Done {
        /// The leader.
        leader: CallId,
    },
}

impl CacheAction {
    /// The action as four numbers for `cache.js`: a code (`base::protocol`'s `ACT_*`) and its
    /// fields (see `cache.js`'s `run`).
    pub fn words(&self) -> [f64; 4] {
        let n = |c: CallId| f64::from(c);
        let (code, fields) = match *self {
            CacheAction::Answer {
                call,
                entry,
                how,
                age_s,
            } => {
                let code = match how {
                    How::Hit => protocol::ACT_HIT,
                    How::Stale => protocol::ACT_STALE,
                    How::Coalesced => protocol::ACT_COALESCED,
                };
                (code, [n(call), entry as f64, age_s])
            }
            CacheAction::Copy {
                call,
                leader,
                age_s,
            } => (protocol::ACT_COPY, [n(call), n(leader), age_s]),
            CacheAction::Forward { call } => (protocol::ACT_FORWARD, [n(call), 0.0, 0.0]),
            CacheAction::Lead { call } => (protocol::ACT_LEAD, [n(call), 0.0, 0.0]),
            CacheAction::Ask { call } => (protocol::ACT_ASK, [n(call), 0.0, 0.0]),
            CacheAction::Reject { call, leader } => {
                (protocol::ACT_REJECT, [n(call), n(leader), 0.0])
            }
            CacheAction::Take { leader, give, ttl } => {
                let flag = |b: bool| f64::from(u8::from(b));
                (protocol::ACT_TAKE, [n(leader), flag(give), flag(ttl)])
            }
            CacheAction::Keep { entry, leader } => {
                (protocol::ACT_KEEP, [entry as f64, n(leader), 0.0])
            }
            CacheAction::Drop { entry } => (protocol::ACT_DROP, [entry as f64, 0.0, 0.0]),
            CacheAction::Put {
                leader,
                fresh_ms,
                age_s,
            } => (protocol::ACT_PUT, [n(leader), fresh_ms, age_s]),
            CacheAction::Release { leader } => (protocol::ACT_RELEASE, [n(leader), 0.0, 0.0]),
            CacheAction::Cancel { leader } => (protocol::ACT_CANCEL, [n(leader), 0.0, 0.0]),
            CacheAction::Discard { leader } => (protocol::ACT_DISCARD, [n(leader), 0.0, 0.0]),
            CacheAction::Done { leader } => (protocol::ACT_DONE, [n(leader), 0.0, 0.0]),
        };
        let [a, b, c] = fields;
        [f64::from(code), a, b, c]
    }
}

/// How a led request ended, as the bindings read it (before any body is read).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Ended {
    /// A response of `status`, its body JSON (`json`) or not; `refusal` when it is the gate's
    /// own answer for a spent quota.
    Responded {
        /// Its status.
        status: u16,
        /// Whether its `Content-Type` says JSON.
        json: bool,
        /// The gate's refusal it stands for, if any.
        refusal: Option<Refusal>,
    },
    /// A rejection; `refusal` when it is the gate's own.
    Failed {
        /// The gate's refusal it is, if any.
        refusal: Option<Refusal>,
    },
}

/// Whether a `Content-Type` says JSON, whose body's `ttl_seconds` may say how long it is fresh.
pub fn says_json(content_type: Option<&str>) -> bool {
    content_type.is_some_and(|t| t.to_ascii_lowercase().contains("json"))
}

/// What was read of a led request's answer, for [`CacheFlow::copied`].
#[derive(Debug, Clone, Copy)]
pub struct Copied<'a> {
    /// The response's status.
    pub status: u16,
    /// Its body's length.
    pub bytes: f64,
    /// Its caching headers.
    pub headers: CacheHeaders<'a>,
    /// Its `Vary`.
    pub vary: Option<&'a str>,
    /// Its JSON body's `ttl_seconds`, when read and said.
    pub ttl_seconds: Option<f64>,
}

/// Where a leader's request is.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    /// The shared cache is being asked.
    Asking,
    /// Another holds the fetch: ask the shared cache again at this time.
    Polling(Millis),
    /// The request is out, through the gate.
    Sending,
    /// Its answer is being copied; `given` when the leader's caller got the response itself.
    Copying { given: bool },
}

/// A request a call leads, from the first ask of the shared cache to its landing.
#[derive(Debug, Clone)]
struct Leading<K> {
    key: K,
    phase: Phase,
    /// When it first asked the shared cache, and how many asks followed.
    began: Millis,
    polls: u32,
    /// Nobody waits for it any more: what it holds goes when the answer it waits for comes.
    gone: bool,
}

/// When an entry was kept and how old it was then (its `Age`, or the shared copy's age).
#[derive(Debug, Clone, Copy)]
struct Born {
    at: Millis,
    age_ms: Millis,
}

/// The cache's sequence for every call through one cache (see the module's doc).
#[derive(Debug)]
pub struct CacheFlow<K> {
    cache: Cache<K, CallId>,
    /// Whether a shared cache is asked before a request is led.
    shared: bool,
    last: CallId,
    leading: Map<CallId, Leading<K>>,
    born: Map<EntryId, Born>,
    actions: VecDeque<CacheAction>,
}

impl<K: Hash + Eq + Clone> CacheFlow<K> {
    /// The sequence over `cache`, asking a shared cache first when `shared`.
    pub fn new(cache: Cache<K, CallId>, shared: bool) -> Self {
        CacheFlow {
            cache,
            shared,
            last: 0,
            leading: Map::default(),
            born: Map::default(),
            actions: VecDeque::new(),
        }
    }

    /// Asks a shared cache first from now on when `shared` (its side was made, or not).
    pub fn share(&mut self, shared: bool) {
        self.shared = shared;
    }

    /// The index of entries.
    pub fn cache(&self) -> &Cache<K, CallId> {
        &self.cache
    }

    /// The actions to perform now, in order.
    pub fn take_actions(&mut self) -> Vec<CacheAction> {
        self.actions.drain(..).collect()
    }

    /// The actions to perform now, as `cache.js` reads them (four numbers each).
    pub fn take_words(&mut self) -> Vec<f64> {
        self.actions.drain(..).flat_map(|a| a.words()).collect()
    }

    /// A call begins at `now`: `request` is its key and headers when it may be cached (`None`:
    /// not a GET without a body, it asks to go upstream, or it carries no identity), `aborted`
    /// when its signal already has; `held()` says whether the gate would hold it past a
    /// cooldown or refuse it (asked only when a stale entry could answer). Its number.
    pub fn begin(
        &mut self,
        now: Millis,
        request: Option<(K, CacheRequest)>,
        aborted: bool,
        held: impl FnOnce() -> bool,
    ) -> CallId {
        self.last = if self.last >= u32::MAX - 1 {
            1
        } else {
            self.last + 1
        };
        let call = self.last;
        let Some((key, request)) = request.filter(|_| !aborted) else {
            self.actions.push_back(CacheAction::Forward { call });
            return call;
        };
        match self.cache.lookup(now, &key, (call, &request), held) {
            Lookup::Fresh { entry, .. } => self.answer(now, call, entry, How::Hit),
            Lookup::Stale { entry, .. } => self.answer(now, call, entry, How::Stale),
            Lookup::Joined => {}
            Lookup::Lead => {
                let phase = match self.shared {
                    true => Phase::Asking,
                    false => Phase::Sending,
                };
                let leading = Leading {
                    key,
                    phase,
                    began: now,
                    polls: 0,
                    gone: false,
                };
                self.leading.insert(call, leading);
                self.actions.push_back(match self.shared {
                    true => CacheAction::Ask { call },
                    false => CacheAction::Lead { call },
                });
            }
        }
        call
    }

    /// The shared cache answered `leader`'s ask at `now` (a failure or a timeout is
    /// [`Asked::Alone`]); `entry` is a fresh entry's length and age, when it gave one.
    pub fn asked(
        &mut self,
        now: Millis,
        leader: CallId,
        answer: Asked,
        entry: Option<(f64, Millis)>,
    ) {
        let Some(l) = self.leading.get(&leader).cloned() else {
            return;
        };
        if l.phase != Phase::Asking {
            return;
        }
        if l.gone {
            if answer == Asked::Lead {
                self.actions.push_back(CacheAction::Release { leader });
            }
            return self.done(leader);
        }
        match (answer, entry) {
            (Asked::Fresh { left_ms }, Some((bytes, age))) => {
                let waited = l.polls > 0;
                let settled = self
                    .cache
                    .shared(now, &l.key, leader, (bytes, left_ms), waited);
                self.keep(now, leader, &settled, age);
                let answered = |c| match c == leader && !waited {
                    true => How::Hit,
                    false => How::Coalesced,
                };
                for &call in &settled.waiting {
                    match settled.kept {
                        Some(entry) => self.answer(now, call, entry, answered(call)),
                        None => self.actions.push_back(CacheAction::Copy {
                            call,
                            leader,
                            age_s: (age / 1_000.0).floor(),
                        }),
                    }
                }
                self.done(leader);
            }
            (Asked::Wait { left_ms }, _) => self.follow(now, leader, &l, left_ms),
            _ => self.lead(leader),
        }
    }

    /// The bytes of `entry` were lost when it was to answer a call `how` (the bindings send
    /// that call on as it is): the entry goes.
    pub fn lost(&mut self, entry: EntryId, how: How) {
        if self.cache.lose(entry, how) {
            self.born.remove(&entry);
            self.actions.push_back(CacheAction::Drop { entry });
        }
    }

    /// When the timer should next wake the machine ([`wake`](Self::wake)).
    pub fn next_wake(&self) -> Option<Millis> {
        let polls = self.leading.values().filter_map(|l| match l.phase {
            Phase::Polling(at) => Some(at),
            _ => None,
        });
        polls.min_by(f64::total_cmp)
    }

    /// The timer woke the machine at `now`: leaders whose wait is over ask again.
    pub fn wake(&mut self, now: Millis) {
        let due: Vec<CallId> = (self.leading.iter())
            .filter(|(_, l)| matches!(l.phase, Phase::Polling(at) if at <= now))
            .map(|(&c, _)| c)
            .collect();
        for call in due {
            let polls = self.leading.get(&call).map_or(0, |l| l.polls);
            self.set(call, Phase::Asking, polls);
            self.actions.push_back(CacheAction::Ask { call });
        }
    }

    /// `call` left (its signal aborted; the bindings reject it with the signal's reason). When
    /// nobody waits for the request it waited for any more, that request goes: cancelled if
    /// it is out, forgotten if it waits its turn at the shared cache.
    pub fn leave(&mut self, call: CallId) {
        let Some(leader) = self.cache.leave(call) else {
            return;
        };
        let Some(l) = self.leading.get_mut(&leader) else {
            return;
        };
        l.gone = true;
        match l.phase {
            Phase::Sending => self.actions.push_back(CacheAction::Cancel { leader }),
            Phase::Polling(_) => self.done(leader),
            Phase::Asking | Phase::Copying { .. } => {}
        }
    }

    /// `leader`'s request ended at `now` as `ended`, before any body is read.
    pub fn ended(&mut self, now: Millis, leader: CallId, ended: Ended) {
        let Some(l) = self.leading.get(&leader).cloned() else {
            return;
        };
        let (responded, refusal) = match ended {
            Ended::Responded { refusal, .. } => (true, refusal),
            Ended::Failed { refusal } => (false, refusal),
        };
        if !self.cache.leads(&l.key, leader) {
            // Cancelled: nobody waits for it, and a new request may be in flight.
            if responded {
                self.actions.push_back(CacheAction::Discard { leader });
            }
            self.release(leader);
            return self.done(leader);
        }
        let stale = refusal.and_then(|r| self.cache.refused(now, &l.key, leader, r));
        if let Some((entry, waiting)) = stale {
            if responded {
                self.actions.push_back(CacheAction::Discard { leader });
            }
            self.release(leader);
            for call in waiting {
                self.answer(now, call, entry, How::Stale);
            }
            return self.done(leader);
        }
        match ended {
            Ended::Failed { .. } => {
                let settled = self
                    .cache
                    .landed(now, &l.key, leader, (Landed::Other, None));
                self.drop_entries(&settled);
                for &call in settled.waiting.iter().chain(&settled.resend) {
                    self.actions.push_back(CacheAction::Reject { call, leader });
                }
                self.release(leader);
                self.done(leader);
            }
            Ended::Responded { status, json, .. } => {
                let give = self.cache.waits(&l.key, leader);
                let ttl = status == 200 && json;
                self.actions
                    .push_back(CacheAction::Take { leader, give, ttl });
                self.set(leader, Phase::Copying { given: give }, l.polls);
            }
        }
    }

    /// `leader`'s answer was read at `now` (Unix ms `wall_now`): `copy` says what it was, or
    /// `None` when its body could not be copied whole (too large, or unreadable).
    pub fn copied(
        &mut self,
        now: Millis,
        wall_now: Millis,
        leader: CallId,
        copy: Option<Copied<'_>>,
    ) {
        let Some(l) = self.leading.get(&leader).cloned() else {
            return;
        };
        let Phase::Copying { given } = l.phase else {
            return;
        };
        let default = self.cache.config().default_ttl_ms;
        let (landed, vary, age) = match copy {
            Some(c) => (
                Landed::of(
                    (c.status, c.bytes, true),
                    c.headers,
                    c.ttl_seconds,
                    wall_now,
                    default,
                ),
                c.vary,
                age_ms(c.headers.age),
            ),
            None => (Landed::Other, None, 0.0),
        };
        let settled = self.cache.landed(now, &l.key, leader, (landed, vary));
        self.keep(now, leader, &settled, age);
        let answered = settled.waiting.iter().filter(|&&c| !(given && c == leader));
        for &call in answered {
            self.actions.push_back(match copy {
                Some(_) => CacheAction::Copy {
                    call,
                    leader,
                    age_s: (age / 1_000.0).floor(),
                },
                None => CacheAction::Forward { call },
            });
        }
        for &call in &settled.resend {
            self.actions.push_back(CacheAction::Forward { call });
        }
        match (settled.kept, self.shared) {
            (Some(_), true) if settled.share_ms > 0.0 => {
                self.actions.push_back(CacheAction::Put {
                    leader,
                    fresh_ms: settled.share_ms,
                    age_s: (age / 1_000.0).floor(),
                });
            }
            _ => self.release(leader),
        }
        self.done(leader);
    }

    /// `call` gets `entry`, marked `how`, its age counted from when it was kept.
    fn answer(&mut self, now: Millis, call: CallId, entry: EntryId, how: How) {
        let age_ms = self
            .born
            .get(&entry)
            .map_or(0.0, |b| b.age_ms + (now - b.at).max(0.0));
        let age_s = (age_ms / 1_000.0).floor();
        self.actions.push_back(CacheAction::Answer {
            call,
            entry,
            how,
            age_s,
        });
    }

    /// The entries `settled` drops go, and the one it keeps (what `leader`'s request got,
    /// `age_ms` old now) is kept.
    fn keep(&mut self, now: Millis, leader: CallId, settled: &Settled<CallId>, age_ms: Millis) {
        self.drop_entries(settled);
        if let Some(entry) = settled.kept {
            self.born.insert(entry, Born { at: now, age_ms });
            self.actions.push_back(CacheAction::Keep { entry, leader });
        }
    }

    fn drop_entries(&mut self, settled: &Settled<CallId>) {
        for &entry in &settled.dropped {
            self.born.remove(&entry);
            self.actions.push_back(CacheAction::Drop { entry });
        }
    }

    /// `leader` waits for another's request, `left_ms` more at most: it asks again after a
    /// backoff, or sends its own when it waited long enough.
    fn follow(&mut self, now: Millis, leader: CallId, l: &Leading<K>, left_ms: Millis) {
        match follow(now - l.began, l.polls, left_ms) {
            Some(ms) => self.set(leader, Phase::Polling(now + ms), l.polls + 1),
            None => self.lead(leader),
        }
    }

    /// `leader` sends its request now.
    fn lead(&mut self, leader: CallId) {
        let polls = self.leading.get(&leader).map_or(0, |l| l.polls);
        self.set(leader, Phase::Sending, polls);
        self.actions.push_back(CacheAction::Lead { call: leader });
    }

    fn release(&mut self, leader: CallId) {
        if self.shared {
            self.actions.push_back(CacheAction::Release { leader });
        }
    }

    fn set(&mut self, leader: CallId, phase: Phase, polls: u32) {
        if let Some(l) = self.leading.get_mut(&leader) {
            l.phase = phase;
            l.polls = polls;
        }
    }

    fn done(&mut self, leader: CallId) {
        self.leading.remove(&leader);
        self.actions.push_back(CacheAction::Done { leader });
    }
}

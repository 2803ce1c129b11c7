//! The cache shared beyond one thread (#36): the worker threads of a process (a claim per
//! request in their shared memory, entries' bytes in its ring, `rules::arena`) and a fleet through
//! Redis (`cache.lua`). A process whose own cache misses asks the shared one before it leads a
//! request: a fresh entry there answers; else it claims the fetch for [`CLAIM_MS`] if nobody
//! holds it and leads; else it waits for whoever does, asking again after a short backoff, and
//! fetches itself when the lease ends (it then claims) or after [`WAIT_MS`]. The shared cache
//! saves requests and never fails a call: when it does not answer, the process goes on alone.

use sha2::{Digest, Sha256};

use crate::core::base::hex::hex;
use crate::core::base::protocol;
use crate::core::rules::arena::Place;
use crate::core::Millis;

/// How long a claim holds: longer than a request usually waits in the gate's line and takes,
/// so the others rarely fetch beside it; short enough that a leader that died holds nobody up
/// for long.
pub const CLAIM_MS: Millis = 10_000.0;

/// The longest a call waits for another's answer before it fetches itself: the lease.
pub const WAIT_MS: Millis = CLAIM_MS;

/// The first wait before asking again, and the longest: a waiter sees the entry at most this
/// long after it is put, for a few asks per request (the leader's request takes far longer).
pub const FIRST_POLL_MS: Millis = 4.0;
/// See [`FIRST_POLL_MS`].
pub const MAX_POLL_MS: Millis = 25.0;

/// How often one ask of the threads' shared memory reads a fresh entry's bytes from their ring
/// and finds them overwritten as it read (each time a newer entry was put meanwhile) before it
/// goes on alone: a bound, never reached but by a ring far too small for its entries.
pub const READS: u32 = 3;

/// Who shares a wrapper's cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sharing {
    /// Nobody: the thread's own (`threads: false`, no store).
    Alone,
    /// The worker threads of the process (`threads`, no store).
    Threads,
    /// The fleet, through the store (a store shares across processes and threads alike).
    Fleet,
}

impl Sharing {
    /// Who shares the cache of a wrapper with a `store` or not, its gates shared by `threads`
    /// or not: whoever shares its allowance.
    pub fn of(store: bool, threads: bool) -> Sharing {
        match (store, threads) {
            (true, _) => Sharing::Fleet,
            (false, true) => Sharing::Threads,
            (false, false) => Sharing::Alone,
        }
    }

    /// Who shares a wrapper's cache, in `cache_share.js`'s numbers: 0 nobody (nor for a
    /// wrapper that does not cache), 1 the process's threads, 2 the fleet through the store.
    pub fn code(caches: bool, store: bool, threads: bool) -> u8 {
        match (caches, Sharing::of(store, threads)) {
            (false, _) | (_, Sharing::Alone) => 0,
            (true, Sharing::Threads) => 1,
            (true, Sharing::Fleet) => 2,
        }
    }
}

/// What the shared cache answered a process whose own cache missed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Asked {
    /// An entry fresh for `left_ms` more: it answers, and is kept here too.
    Fresh {
        /// How long it stays fresh.
        left_ms: Millis,
    },
    /// The fetch is this process's to make: it leads, and puts the answer.
    Lead,
    /// Another holds the fetch for `left_ms` more: wait, ask again.
    Wait {
        /// Until its lease ends (or the bytes should have come).
        left_ms: Millis,
    },
    /// Not shared now (the shared cache did not answer, or its answer was not understood):
    /// fetch as if alone.
    Alone,
}

/// The shared name of a request (its credential's scope, URL and identity: a hash of `Accept`
/// and its credentials, see `cache_request`): the scope in a hash tag (every key of one
/// credential on one Redis Cluster slot, as the gate's), and 128 bits of a hash of the scope,
/// URL and identity (so no URL or credential is written to the store, and two requests never
/// share an entry); its last 16 hex digits tell requests apart in the threads' shared memory.
pub(crate) fn name(scope: &str, url: &str, identity: &str) -> String {
    let mut hash = Sha256::new();
    hash.update(b"odds-gate/cache/v1\0");
    hash.update(scope.as_bytes());
    hash.update(b"\0");
    hash.update(url.as_bytes());
    hash.update(b"\0");
    hash.update(identity.as_bytes());
    let digest = hash.finalize();
    format!("{{{scope}}}:cache:{}", hex(&digest[..16]))
}

/// Whether to ask the store at `now`, its last failure (an error, or no answer within its
/// `timeoutMs`) at `failed_at`: not for `retry_ms` after it, so a store that does not answer
/// costs one call a wait, not every call.
pub fn asks(now: Millis, failed_at: Millis, retry_ms: Millis) -> bool {
    now >= failed_at + retry_ms
}

/// How long the store keeps an entry fresh for `fresh_ms`: its lifetime and the time it may
/// still answer stale.
pub(crate) fn keep_ms(fresh_ms: Millis, stale_for_ms: Millis) -> Millis {
    fresh_ms + stale_for_ms
}

/// The wait before asking again after `polls` asks and `waited_ms`, with `left_ms` of the
/// holder's lease left; `None`: stop waiting and fetch (the lease ended, or [`WAIT_MS`] passed).
pub fn follow(waited_ms: Millis, polls: u32, left_ms: Millis) -> Option<Millis> {
    if left_ms <= 0.0 || waited_ms >= WAIT_MS {
        return None;
    }
    let backoff = FIRST_POLL_MS * 2f64.powi(polls.min(16) as i32);
    Some(
        backoff
            .min(MAX_POLL_MS)
            .min(left_ms)
            .min(WAIT_MS - waited_ms),
    )
}

/// A request's claim in the threads' shared memory (times on the shared clock, 0: none).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Cell {
    /// Whether the cell is this request's (another request's lease holds it otherwise).
    pub ours: bool,
    /// The claim's end.
    pub lease_until: Millis,
    /// Until when the last entry put is fresh.
    pub fresh_until: Millis,
    /// When that entry was put.
    pub put_at: Millis,
    /// Where its bytes are in the threads' ring.
    pub place: Option<Place>,
}

/// A thread asks the shared memory at `now` for a request (`cell`, its cell), having found the
/// bytes at `lost` overwritten (`None`: it read none): the answer and the cell to write back
/// (`None`: unchanged). The same decisions as `cache.lua`'s `get`: a fresh entry whose bytes
/// the ring still names answers; else the fetch is led by one thread and waited for by the rest.
pub fn claim(cell: Cell, now: Millis, lost: Option<Place>) -> (Asked, Option<Cell>) {
    let mine = Cell {
        ours: true,
        lease_until: now + CLAIM_MS,
        ..Cell::default()
    };
    if !cell.ours {
        // Another request's lease: this one goes alone, never waits on a stranger's.
        return match cell.lease_until > now {
            true => (Asked::Alone, None),
            false => (Asked::Lead, Some(mine)),
        };
    }
    let place = cell.place.filter(|p| Some(*p) != lost);
    if now < cell.fresh_until && place.is_some() {
        let left_ms = cell.fresh_until - now;
        return (Asked::Fresh { left_ms }, None);
    }
    let forgot = Cell { place, ..cell };
    if cell.lease_until > now {
        let left_ms = cell.lease_until - now;
        return (
            Asked::Wait { left_ms },
            (place != cell.place).then_some(forgot),
        );
    }
    (
        Asked::Lead,
        Some(Cell {
            lease_until: mine.lease_until,
            ..forgot
        }),
    )
}

/// The leader put an entry fresh for `fresh_ms` at `now`, its bytes at a place in the ring
/// (`None`: it has none to put, or the ring could not take it): the cell it writes back, its
/// claim released.
pub fn put(cell: Cell, now: Millis, kept: Option<(Millis, Place)>) -> Cell {
    match kept {
        Some((ms, place)) => Cell {
            ours: true,
            lease_until: 0.0,
            fresh_until: now + ms,
            put_at: now,
            place: Some(place),
        },
        None => Cell {
            lease_until: 0.0,
            ..cell
        },
    }
}

impl Asked {
    /// An answer from `cache_share.js`'s numbers (see [`code`](Self::code)); anything not
    /// understood is [`Asked::Alone`].
    pub fn from_code(code: f64, ms: f64) -> Asked {
        let is = |c: u8| code == f64::from(c);
        if is(protocol::ASKED_FRESH) && ms.is_finite() && ms > 0.0 {
            Asked::Fresh { left_ms: ms }
        } else if is(protocol::ASKED_LEAD) {
            Asked::Lead
        } else if is(protocol::ASKED_WAIT) && ms.is_finite() {
            Asked::Wait { left_ms: ms }
        } else {
            Asked::Alone
        }
    }

    /// The answer in `cache.js`'s numbers: 0 alone, 1 fresh, 2 lead, 3 wait; with its
    /// milliseconds (a leader's, how long its claim lasts).
    pub fn code(self) -> [f64; 2] {
        let (code, ms) = match self {
            Asked::Alone => (protocol::ASKED_ALONE, 0.0),
            Asked::Fresh { left_ms } => (protocol::ASKED_FRESH, left_ms),
            Asked::Lead => (protocol::ASKED_LEAD, CLAIM_MS),
            Asked::Wait { left_ms } => (protocol::ASKED_WAIT, left_ms),
        };
        [f64::from(code), ms]
    }
}

impl Cell {
    /// A cell from its words in the shared memory (`ours`: it names this request): lease until,
    /// fresh until, put at, then the place of its bytes (0 for a word missing).
    pub fn read(ours: bool, times: &[f64]) -> Cell {
        let at = |i: usize| times.get(i).copied().unwrap_or(0.0);
        Cell {
            ours,
            lease_until: at(0),
            fresh_until: at(1),
            put_at: at(2),
            place: times.get(3..).and_then(Place::read),
        }
    }

    /// The cell in its words (see [`read`](Self::read)).
    pub fn words(self) -> [f64; 8] {
        let [a, b, c, d, e] = self.place.map_or([0.0; 5], Place::words);
        [
            self.lease_until,
            self.fresh_until,
            self.put_at,
            a,
            b,
            c,
            d,
            e,
        ]
    }
}

/// What `cache.lua`'s `get` answered (its code and number), understood.
pub(crate) fn answer(code: &str, ms: f64) -> Asked {
    match code {
        "fresh" if ms.is_finite() && ms > 0.0 => Asked::Fresh { left_ms: ms },
        "lead" => Asked::Lead,
        "wait" if ms.is_finite() => Asked::Wait { left_ms: ms },
        _ => Asked::Alone,
    }
}

//! The numbers the core shares with the JavaScript side (`src/js`) and the Redis scripts
//! (`src/store/*.lua`), written once. `build.rs` reads this file as it is and writes every
//! constant into `src/js/protocol.js` (generated, not kept in git) and, for each script, the
//! ones it names into its first line: no copy can drift. Only `pub const NAME: type = literal;`
//! lines, each with its doc comment.

/// The f64 words of a gate's slot in the threads' shared memory
/// (`authority::threads::WORDS`, which checks it at compile time).
pub const SLOT_WORDS: usize = 84;

/// The layout of the threads' shared memory (slots, cells, the ring): its version names the
/// environment data the threads find it by (`odds-gate/shared-memory/v<layout>`), so threads of
/// builds with another layout never share it.
pub const SHARED_MEMORY_LAYOUT: u32 = 7;

/// The threads' cache cells in their shared memory (`authority::cache_cells`).
pub const CELLS: u32 = 1024;

/// A cache cell's words: its request's key (two halves), lease until, fresh until, put at,
/// and where its bytes are in the ring (`rules::arena::Place`: five words).
pub const CELL_WORDS: usize = 10;

/// The most bytes the threads' ring of cache bytes may grow to (`rules::arena`): the address
/// space its buffer reserves, taken as memory only as it grows.
pub const RING_MOST_BYTES: f64 = 268435456.0;

/// Timers fire on whole milliseconds and may run up to one early: a time due within this much
/// is due now (`gate::early`, and `attempt.js`'s timeouts).
pub const EARLY_MS: f64 = 1.0;

/// A thread that made a shared memory of its own admits nothing until this long after, and its
/// event loop turned since: time for the threads already there to answer (`authority::settle`,
/// `shared_memory.js`'s timer).
pub const SETTLE_MS: f64 = 200.0;

/// The main thread that makes its shared memory this early in its process need not wait: no
/// worker can be admitting yet (`authority::settle`).
pub const STARTUP_MS: f64 = 100.0;

/// What the shared cache answered (`rules::shared_cache::Asked`): not shared now.
pub const ASKED_ALONE: u8 = 0;
/// A fresh entry.
pub const ASKED_FRESH: u8 = 1;
/// The fetch is the asker's to make.
pub const ASKED_LEAD: u8 = 2;
/// Another holds the fetch: wait, ask again.
pub const ASKED_WAIT: u8 = 3;

/// The cache's actions (`rules::cache_flow::CacheAction::words`): answer from a fresh entry.
pub const ACT_HIT: u8 = 1;
/// Answer from a stale entry.
pub const ACT_STALE: u8 = 2;
/// Answer from an entry, as one that waited for another's request.
pub const ACT_COALESCED: u8 = 3;
/// Answer with a copy of what the leader's request got.
pub const ACT_COPY: u8 = 4;
/// Send the call to the gate as it is.
pub const ACT_FORWARD: u8 = 5;
/// Send the request for everyone waiting for it.
pub const ACT_LEAD: u8 = 6;
/// Ask the shared cache.
pub const ACT_ASK: u8 = 7;
/// Fail the call as the leader's request failed.
pub const ACT_REJECT: u8 = 8;
/// Clone the leader's response, give it, copy the clone.
pub const ACT_TAKE: u8 = 9;
/// Keep what the leader's request got as an entry.
pub const ACT_KEEP: u8 = 10;
/// Forget an entry's bytes.
pub const ACT_DROP: u8 = 11;
/// Put what the leader's request got in the shared cache.
pub const ACT_PUT: u8 = 12;
/// End the leader's claim on the shared cache.
pub const ACT_RELEASE: u8 = 13;
/// Abort the leader's request.
pub const ACT_CANCEL: u8 = 14;
/// Cancel the body of the response the leader's request ended with.
pub const ACT_DISCARD: u8 = 15;
/// Forget what was held for the leader's request.
pub const ACT_DONE: u8 = 16;

/// How long one process's reading of the spread's credits holds the fleet's others off
/// (`authority::credits`, `gate.lua`): as long as the reading may take (the probe's budget; the
/// core holds it to a refresh at most). Its answer moves the next reading a refresh on; a
/// reader that died, or a claim whose answer was lost (a store operation out of time), frees
/// it at the lease's end.
pub const READING_LEASE_MS: f64 = 30_000.0;

/// How soon a process that found no reading yet looks again (`authority::credits`, `gate.lua`).
pub const FIRST_READ_RECHECK_MS: f64 = 100.0;

/// The most of the credits left for the period the spread's bucket ever holds
/// (`rules::credits`, `gate.lua`).
pub const MOST_OF_LEFT: f64 = 0.05;

/// What the spread's new bucket holds at least, when it can hold that much: a credit, what a
/// call costs when nothing else is known (`rules::credits`, `gate.lua`).
pub const OPENING_CREDITS: f64 = 1.0;

/// A reading that finds its period's end already past is read again at least this much later
/// (and as long again as the end is past): the server turns its period within about that, and
/// calls resume with the new one (`rules::credits`, `gate.lua`).
pub const PAST_END_REREAD_MS: f64 = 1_000.0;

/// A period end later than the bucket's by more than this is a new period (`rules::credits`,
/// `gate.lua`).
pub const NEW_PERIOD_MS: f64 = 1_000.0;

/// Float slack, in credits: a wake-up computed for the exact refill instant must find the
/// credits there despite rounding (`rules::credits`, `gate.lua`).
pub const SLACK: f64 = 1e-9;

/// Credits asked (at no stated cost) since the last reading below which a reading's delta says
/// too little to learn the spread's cost scale from (`rules::scale`, `gate.lua`).
pub const MIN_ASKED: f64 = 10.0;

/// Where the spread is shared and only its first reading has come, a reading is due this long
/// after it once `MIN_ASKED` credits were asked at no stated cost: what they cost is measured
/// before a route dearer than a credit can overspend a refresh's worth (`authority::credits`,
/// `gate.lua`; a gate alone has its own rule, `rules::spending`).
pub const EARLY_READING_MS: f64 = 1_000.0;

/// The least the spread's cost scale may be (`rules::scale`, `gate.lua`).
pub const SCALE_LOW: f64 = 0.1;

/// The most the spread's cost scale may be (`rules::scale`, `gate.lua`).
pub const SCALE_HIGH: f64 = 100.0;

// @ts-check
// The shared memory: the memory every thread of the process shares, where the gates' states live so one
// key has one allowance in every worker thread. This file is the one place its layout, its locks
// and how threads find it are defined; the Rust side (shared_memory.rs) only asks for a slot, locks it,
// copies words in and out, and lets go.
//
// Finding it. The first copy of the package to load in a thread takes the shared memory its parent
// handed down (worker_threads environment data, copied into every Worker made after it was set)
// or makes one, sets it as environment data for the threads it will start, and says so on a
// BroadcastChannel. Threads that made shared memories of their own before they heard of each other keep
// the best: the main thread's, else the oldest (a random number breaks ties). A thread that hears
// of a better shared memory marks its old one superseded, moves to the better one and brings every key's
// state along, once (merge in threads.rs); a thread that hears of a worse one answers with its
// own. A gate still naming a superseded shared memory finds its slot on the current one at its next
// transaction (an admission waits until its thread has heard where that is).
//
// Messages arrive only as a thread's event loop turns, so a thread that made its own shared memory
// may not admit at once. The rules, which memory wins and when a thread may admit, are the
// core's (authority/settle.rs): this file reads the facts they ask for (a memory's header, the
// SETTLE_MS timer, Node's list of the worker threads it started) and the Rust side asks them.
//
// Growing. The buffer is growable (to MOST slots): a key that finds no room makes the table
// double, under the table's lock (table.rs in the core says where keys go, so growing moves
// none). Every thread sees the same buffer grow. Its views have a fixed length, made again when
// a slot past them is asked for (`fit`): in V8 (Node 20 and 24) an element of a view that tracks
// a growable buffer's length costs about ten times as much to read or write, and an atomic
// operation on it three times.
//
// A shared memory is two SharedArrayBuffers, found and ranked as one: the table below, and the
// ring of the cache's bytes (arena.js), which the cells name places in.
//
// Layout (the first SharedArrayBuffer; offsets in bytes):
//   0  i32 magic             4  i32 first segment   8  i32 slots now    12 i32 superseded (0/1)
//   16 f64 made (Unix ms)    24 f64 tie-break       32 i32 made by the main thread (0/1)
//   40 i32 table lock        52 i32 threads asleep on the table lock
//   64 + c * CELL_BYTES: the cache's cell c of CELLS (the core's authority/cache_cells.rs)
//      0 i32 lock    12 i32 threads asleep on the lock
//      16 + b * CELL_WORDS * 8: buffer b of 3, CELL_WORDS f64 each
//   HEAD_BYTES + i * SLOT_BYTES: slot i
//      0 i32 lock    4 i32 key high    8 i32 key low (0, 0: never used)
//      12 i32 threads asleep on the lock
//      16 + b * WORDS * 8: buffer b of 3, WORDS f64 each (the core's threads::WORDS)
//
// Locking. A lock is one i32: bit 0 locked, bits 1-2 the buffer that holds the live state, bits
// 3-28 a sequence number that counts locks, bits 29-30 the quarantined buffer + 1 (0: none). A
// thread locks a slot by compare-and-swap (seq + 1, locked), copies the live buffer out, writes its
// new state into a spare buffer (one of the two not live: the one not quarantined, else the one
// the sequence number's parity picks) and lets go by compare-and-swap to (that buffer live, not
// locked); a read lets go with the same buffer live. A lock that lasts TAKEOVER_MS unchanged is taken
// over (its thread died, was terminated, or is stalled in it): the taker quarantines the buffer
// the stalled owner writes into and so writes into the other spare, and the stalled owner's
// late let-go fails, so it runs its transaction again. An owner copies its words only after it
// saw its lock still held, so a stalled one copies nothing once taken over, and while it may
// still be copying (it was taken over mid-copy) no writer targets its buffer: the quarantine stays
// until the next take-over (a dead thread never lifts it; two buffers are enough for locks that
// are not taken over). Nothing a dead or stalled thread did half-way is ever live. The table lock
// (for claiming a slot) and the cache's cells work the same way.
import { SLOT_WORDS as WORDS, CELLS, CELL_WORDS, SHARED_MEMORY_LAYOUT, SETTLE_MS } from './protocol.js';
import { makeArena, usableArena } from './arena.js';
import {
  BroadcastChannel,
  getEnvironmentData,
  isMainThread,
  setEnvironmentData,
  threadId,
} from 'node:worker_threads';

/**
 * A shared memory as this thread sees it: the table's buffer and the cache's ring, and views of
 * the table made again as it grows (see fit()).
 * @typedef {{ sab: SharedArrayBuffer, arena: SharedArrayBuffer, ints: Int32Array | null, f64: Float64Array | null }} Shared
 */

const MAGIC = 0x0dd59a7e;
const NAME = `odds-gate/shared-memory/v${SHARED_MEMORY_LAYOUT}`;
const SLOTS = 16384;
// 16 times that: 262 MB of address space reserved, the memory itself only as the table grows.
const MOST = 262144;
const CELL_BYTES = 16 + 3 * CELL_WORDS * 8;
const HEAD_BYTES = 64 + CELLS * CELL_BYTES;
const SLOT_BYTES = 16 + 3 * WORDS * 8;
const SUPERSEDED = 3;
const TABLE_LOCK = 10;
// Far longer than any transaction (microseconds); short enough that a thread killed while
// locking a slot holds up the others for a moment only. A live owner stalled longer by the
// scheduler only runs its transaction again.
const TAKEOVER_MS = 100;
const SPINS = 64;

/** @type {Shared | null} */
let sharedMemory = null;
let channel = null;
// Set by the module (shared_memory.rs, `wire`): moves every key's state from one shared memory
// to another, and ranks two by their headers (the core's `settle::rank`: < 0 when the first wins).
let mover = null;
let ranker = null;
// What was heard before the module wired itself, heard again when it does.
let unheard = [];
export function wire(move, rank) {
  [mover, ranker] = [move, rank];
  const heard = unheard;
  unheard = [];
  heard.forEach(hear);
}
// How this thread came by its shared memory: [made here, by the main thread, the process's age
// then] (made here 0: handed down); and whether SETTLE_MS passed since and the loop turned.
let started = [0, 0, 0];
let waited = false;
export const startedAs = () => started;
export const hasWaited = () => waited;

export const sharedNow = () => performance.timeOrigin + performance.now();

// The tests' way to a small table: [first, most] slots, set as environment data under this name
// before the package loads.
const SIZE = `${NAME}/size`;

function make() {
  const [first, most] = /** @type {number[] | undefined} */ (getEnvironmentData(SIZE)) ?? [SLOTS, MOST];
  let sab;
  try {
    sab = new SharedArrayBuffer(HEAD_BYTES + first * SLOT_BYTES, { maxByteLength: HEAD_BYTES + most * SLOT_BYTES });
  } catch {
    // No address space for the most: a table that keeps its size.
    sab = new SharedArrayBuffer(HEAD_BYTES + first * SLOT_BYTES);
  }
  const ints = new Int32Array(sab, 0, HEAD_BYTES / 4);
  const floats = new Float64Array(sab, 0, HEAD_BYTES / 8);
  ints[1] = first;
  ints[2] = first;
  floats[2] = sharedNow();
  floats[3] = Math.random();
  ints[8] = isMainThread ? 1 : 0;
  Atomics.store(ints, 0, MAGIC);
  return [sab, makeArena()];
}

// Whether `pair` is a shared memory this build can use: its table and its ring.
function usable(pair) {
  if (!Array.isArray(pair) || !usableArena(pair[1])) return false;
  const sab = pair[0];
  return (
    sab instanceof SharedArrayBuffer &&
    sab.byteLength >= HEAD_BYTES &&
    Atomics.load(new Int32Array(sab, 0, 1), 0) === MAGIC &&
    sab.byteLength >= HEAD_BYTES + Atomics.load(new Int32Array(sab, 0, 3), 2) * SLOT_BYTES
  );
}

// Who made shared memory `sab`, as the core's `settle::Maker`: [main thread (0/1), made, tie-break].
const maker = (sab) => [new Int32Array(sab, 32, 1)[0], ...new Float64Array(sab, 16, 2)];

function hear(pair) {
  if (!usable(pair)) return;
  if (!ranker) return void unheard.push(pair);
  const order = ranker(...maker(pair[0]), ...maker(sharedMemory.sab));
  if (order === 0) return;
  if (order < 0) {
    const old = sharedMemory;
    Atomics.store(old.ints, SUPERSEDED, 1);
    adopt(pair);
    // The gates of this module move what they spent on the old shared memory now, not at their next
    // transaction: a thread that does not wake for a while must not hide it meanwhile.
    mover?.(old, sharedMemory);
  } else {
    channel.postMessage([sharedMemory.sab, sharedMemory.arena]);
  }
}

/** @param {SharedArrayBuffer[]} pair */
function adopt([sab, arena]) {
  sharedMemory = { sab, arena, ints: null, f64: null };
  fit(sharedMemory, -1);
  setEnvironmentData(NAME, [sab, arena]);
}

// Makes the shared memory's views reach slot i (-1: the header), as far as the buffer has grown.
/** @param {Shared} s */
function fit(s, i) {
  if (s.ints === null || HEAD_BYTES + (i + 1) * SLOT_BYTES > s.ints.byteLength) {
    const bytes = s.sab.byteLength;
    s.ints = new Int32Array(s.sab, 0, bytes / 4);
    s.f64 = new Float64Array(s.sab, 0, bytes / 8);
  }
}

function start() {
  // A runtime without threads (the edge entry's worker_threads has no BroadcastChannel).
  if (typeof BroadcastChannel !== 'function') return;
  let inherited;
  try {
    inherited = /** @type {any} */ (getEnvironmentData(NAME));
  } catch {
    inherited = undefined;
  }
  if (usable(inherited)) {
    adopt(inherited);
  } else {
    adopt(make());
    started = [1, isMainThread ? 1 : 0, performance.now()];
    setTimeout(() => (waited = true), SETTLE_MS).unref();
  }
  channel = new BroadcastChannel(NAME);
  channel.onmessage = (event) => hear(event.data);
  // Never what keeps the process alive.
  channel.unref();
  channel.postMessage([sharedMemory.sab, sharedMemory.arena]);
}

// The shared memory threads share now, as this thread heard it; null where memory cannot
// be shared (the gates then stay the thread's own). What others said arrives as the event loop
// turns (a BroadcastChannel cannot be read synchronously).
export function current() {
  return channel ? sharedMemory : null;
}

try {
  start();
} catch {
  sharedMemory = null;
  channel = null;
}

export const thread = () => threadId;
/** @param {Shared} s */
export const first = (s) => s.ints[1];
/** @param {Shared} s */
export const slots = (s) => Atomics.load(s.ints, 2);
// The most slots the table can grow to.
/** @param {Shared} s */
export const most = (s) => (s.sab.growable ? (s.sab.maxByteLength - HEAD_BYTES) / SLOT_BYTES : slots(s));

// Doubles the table (the table's lock locked); false at its most, or when memory cannot grow.
/** @param {Shared} s */
export function grow(s) {
  const n = slots(s);
  if (2 * n > most(s)) return false;
  try {
    // Grown already when the owner of the table's lock died before it counted the new slots.
    if (s.sab.byteLength < HEAD_BYTES + 2 * n * SLOT_BYTES) s.sab.grow(HEAD_BYTES + 2 * n * SLOT_BYTES);
  } catch {
    return false;
  }
  fit(s, 2 * n - 1);
  Atomics.store(s.ints, 2, 2 * n);
  return true;
}
// How many worker threads this process's main thread has started, by Node's diagnostic report:
// -1 where none can be believed (Bun's and Deno's list none even while some run; the report's
// `excludeNetwork` is Node's own, since 20.13). The core asks it once, of the main thread (see
// settle.rs). The report takes 2-6 ms; its network section, which would look up host names, and
// the environment are left out where Node can.
export function workersStarted() {
  // Fields of newer Nodes than the types know (`excludeNetwork`, `excludeEnv`), and Bun's and Deno's.
  const report = /** @type {any} */ (globalThis.process?.report);
  const versions = /** @type {any} */ (globalThis.process?.versions ?? {});
  if (versions.bun || versions.deno || typeof report?.getReport !== 'function' || typeof report.excludeNetwork !== 'boolean') return -1;
  const [network, env] = [report.excludeNetwork, report.excludeEnv];
  try {
    report.excludeNetwork = true;
    if (typeof env === 'boolean') report.excludeEnv = true;
    const { workers } = report.getReport();
    return Array.isArray(workers) ? workers.length : -1;
  } catch {
    return -1;
  } finally {
    report.excludeNetwork = network;
    if (typeof env === 'boolean') report.excludeEnv = env;
  }
}

// The module's memory, which transactions copy a slot's words into and out of.
let memory = null;
let heap = null;
export function useMemory(m) {
  memory = m;
}
// A view is emptied (length 0) when the memory grows: then a new one.
const wasmWords = () => (heap?.length ? heap : (heap = new Float64Array(memory.buffer)));

// The i32 index of a lock word: slot i's, or (i = -1) the table's.
const lockIndex = (i) => (i < 0 ? TABLE_LOCK : (HEAD_BYTES + i * SLOT_BYTES) / 4);
// The i32 index of the cache's cell c's lock word, and the f64 index of its buffer b.
const cellLockIndex = (c) => (64 + c * CELL_BYTES) / 4;
const cellBufferAt = (c, b) => (64 + c * CELL_BYTES + 16) / 8 + b * CELL_WORDS;
// The f64 index of buffer b of slot i.
const bufferAt = (i, b) => (HEAD_BYTES + i * SLOT_BYTES + 16) / 8 + b * WORDS;
// A lock word's sequence number and quarantined buffer (see "Locking").
const SEQ = 0x1ffffff8;
const QUARANTINE = 0x60000000;
const live = (locked) => (locked >> 1) & 3;
// The buffer a lock's owner writes into: one of the two that are not live, the one not quarantined, else
// by the sequence's parity (buffer numbers add up to 3).
function target(locked) {
  const q = (locked & QUARANTINE) >> 29;
  return q ? 3 - live(locked) - (q - 1) : (live(locked) + 1 + ((locked >> 3) & 1)) % 3;
}

// Locks slot i (-1: the table): the lock word as locked; -1 when the shared memory was superseded and
// `force` is false (the caller moves to the current shared memory first); -2 when the slot no longer
// belongs to key (high, low) (it was idle and another key took it; 0, 0 checks nothing).
/** @param {Shared} s */
function lock(s, i, force, high, low) {
  fit(s, i);
  return lockAt(s, lockIndex(i), force, high, low);
}

// Locks the lock word at i32 index `at` (see lock()).
/** @param {Shared} s */
function lockAt(s, at, force, high, low) {
  const ints = s.ints;
  let seen = Atomics.load(ints, at);
  let since = -1;
  for (let spins = 0; ; ) {
    if (!force && Atomics.load(ints, SUPERSEDED) !== 0) return -1;
    if ((seen & 1) === 0 || (since >= 0 && performance.now() - since > TAKEOVER_MS)) {
      // Taking over: the stalled owner may yet copy into its buffer.
      const quarantine = seen & 1 ? (target(seen) + 1) << 29 : seen & QUARANTINE;
      const next = (((seen & SEQ) + 8) & SEQ) | quarantine | (seen & 6) | 1;
      const was = Atomics.compareExchange(ints, at, seen, next);
      if (was === seen) {
        if ((high | low) === 0 || (ints[at + 1] === high && ints[at + 2] === low)) return next;
        unlockAt(s, at, next, live(next));
        return -2;
      }
      [seen, since, spins] = [was, -1, 0];
      continue;
    }
    if (spins++ < SPINS) {
      const was = Atomics.load(ints, at);
      if (was !== seen) [seen, since] = [was, -1];
      continue;
    }
    if (since < 0) since = performance.now();
    // Slot header word 3 counts the threads asleep on the lock, so an unlock wakes only them.
    Atomics.add(ints, at + 3, 1);
    Atomics.wait(ints, at, seen, 1);
    Atomics.sub(ints, at + 3, 1);
    const was = Atomics.load(ints, at);
    if (was !== seen) [seen, since, spins] = [was, -1, 0];
  }
}

// Lets go of a lock with `buffer` live (the lock's target when it wrote). False when the lock was
// taken over meanwhile: nothing it wrote counts.
/** @param {Shared} s */
function unlock(s, i, locked, buffer) {
  return unlockAt(s, lockIndex(i), locked, buffer);
}

// Lets go of the lock word at i32 index `at` (see unlock()).
/** @param {Shared} s */
function unlockAt(s, at, locked, buffer) {
  const ints = s.ints;
  const next = (locked & ~7) | (buffer << 1);
  const ok = Atomics.compareExchange(ints, at, locked, next) === locked;
  if (Atomics.load(ints, at + 3) !== 0) Atomics.notify(ints, at);
  return ok;
}

// Locks slot i and copies its live words to the module's memory at f64 index `to`: the lock
// word locked, or what lock() says when it is not locked.
/** @param {Shared} s */
export function enter(s, i, force, high, low, to) {
  const locked = lock(s, i, force, high, low);
  if (locked >= 0) {
    const w = wasmWords();
    const f = s.f64;
    const from = bufferAt(i, live(locked));
    // A loop, not set(subarray()): with views of a fixed length it is the cheaper (no view made).
    for (let k = 0; k < WORDS; k++) w[to + k] = f[from + k];
  }
  return locked;
}

// Copies the module's words at f64 index `from` (-1: nothing written) to the slot's spare buffer
// and lets go; false when the lock was taken over meanwhile (nothing it wrote counts, and once it
// was taken over it copies nothing: a later writer may have made its buffer live).
/** @param {Shared} s */
export function leave(s, i, locked, from) {
  if (from < 0) return unlock(s, i, locked, live(locked));
  if (Atomics.load(s.ints, lockIndex(i)) !== locked) return false;
  const w = wasmWords();
  const f = s.f64;
  const b = target(locked);
  const to = bufferAt(i, b);
  for (let k = 0; k < WORDS; k++) f[to + k] = w[from + k];
  return unlock(s, i, locked, b);
}

// Locks slot i (a key's, as in enter), copies its first `len` live words to the module's memory at
// f64 index `to` and lets go, at one call: false when it was not locked (see lock()) or the lock was
// taken over meanwhile (what it copied may be torn); the caller then reads it by a transaction.
/** @param {Shared} s */
export function peek(s, i, high, low, to, len) {
  const locked = lock(s, i, false, high, low);
  if (locked < 0) return false;
  const w = wasmWords();
  const f = s.f64;
  const from = bufferAt(i, live(locked));
  for (let k = 0; k < len; k++) w[to + k] = f[from + k];
  return unlock(s, i, locked, live(locked));
}

// Locks the cache's cell c and copies its live words to the module's memory at f64 index `to`:
// the lock word locked.
/** @param {Shared} s */
export function enterCell(s, c, to) {
  const locked = lockAt(s, cellLockIndex(c), true, 0, 0);
  const w = wasmWords();
  const from = cellBufferAt(c, live(locked));
  for (let k = 0; k < CELL_WORDS; k++) w[to + k] = s.f64[from + k];
  return locked;
}

// As leave(), for the cache's cell c.
/** @param {Shared} s */
export function leaveCell(s, c, locked, from) {
  const at = cellLockIndex(c);
  if (from < 0) return unlockAt(s, at, locked, live(locked));
  if (Atomics.load(s.ints, at) !== locked) return false;
  const w = wasmWords();
  const b = target(locked);
  const to = cellBufferAt(c, b);
  for (let k = 0; k < CELL_WORDS; k++) s.f64[to + k] = w[from + k];
  return unlockAt(s, at, locked, b);
}

// The slots some key ever used.
/** @param {Shared} s */
export function used(s) {
  const out = [];
  const n = slots(s);
  fit(s, n - 1);
  for (let i = 0; i < n; i++) {
    const at = lockIndex(i);
    if (s.ints[at + 1] !== 0 || s.ints[at + 2] !== 0) out.push(i);
  }
  return out;
}

// The table: slot i's key (0, 0: never used), and giving it to another key (locked).
/** @param {Shared} s */
export const keyHigh = (s, i) => (fit(s, i), s.ints[lockIndex(i) + 1]);
/** @param {Shared} s */
export const keyLow = (s, i) => (fit(s, i), s.ints[lockIndex(i) + 2]);
/** @param {Shared} s */
export function setKey(s, i, high, low) {
  fit(s, i);
  const at = lockIndex(i);
  s.ints[at + 1] = high;
  s.ints[at + 2] = low;
}
/** @param {Shared} s */
export const lockTable = (s) => lock(s, -1, true, 0, 0);
/** @param {Shared} s */
export const unlockTable = (s, locked) => unlock(s, -1, locked, live(locked));

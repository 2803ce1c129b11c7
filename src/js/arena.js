// @ts-check
// The ring of the threads' cache bytes: one growable SharedArrayBuffer made with the shared
// memory (shared_memory.js) and found with it. The core decides (rules/arena.rs): where an
// entry's bytes go and whether what was read back is intact; this file moves bytes and counts.
//
// Layout (bytes): 0 i32 growing (0/1)   4 i32 the ring's size now
//                 8 BigInt64 the head (bytes ever reserved)   RING_AT..: the ring
import { createHash } from 'node:crypto';
import { RING_MOST_BYTES } from './protocol.js';

const RING_AT = 64;

/** A new ring, empty until a cache fits it (a fixed empty one where memory cannot grow). */
export function makeArena() {
  try {
    return new SharedArrayBuffer(RING_AT, { maxByteLength: RING_AT + RING_MOST_BYTES });
  } catch {
    return new SharedArrayBuffer(RING_AT);
  }
}

export const usableArena = (a) => a instanceof SharedArrayBuffer && a.byteLength >= RING_AT;

// Views of a ring, made again when its size changed.
/** @type {WeakMap<SharedArrayBuffer, { size: number, ints: Int32Array, head: BigInt64Array, ring: Uint8Array }>} */
const views = new WeakMap();
function viewOf(s) {
  const a = s.arena;
  let v = views.get(a);
  const size = v === undefined ? Atomics.load(new Int32Array(a, 0, 2), 1) : Atomics.load(v.ints, 1);
  if (v === undefined || v.size !== size) {
    v = { size, ints: new Int32Array(a, 0, 2), head: new BigInt64Array(a, 8, 1), ring: new Uint8Array(a, RING_AT, size) };
    views.set(a, v);
  }
  return v;
}

export const arenaCapacity = (s) => viewOf(s).size;
export const arenaReserve = (s, len) => Number(Atomics.add(viewOf(s).head, 0, BigInt(len)));
export const arenaHead = (s) => Number(Atomics.load(viewOf(s).head, 0));
export function arenaWrite(s, at, bytes, from, len) {
  viewOf(s).ring.set(bytes.subarray(from, from + len), at);
}
export function arenaRead(s, at, bytes, to, len) {
  bytes.set(viewOf(s).ring.subarray(at, at + len), to);
}

/** The first 64 bits of `bytes`' SHA-256, as two numbers. */
export function arenaDigest(bytes) {
  const d = createHash('sha256').update(bytes).digest();
  return [d.readUInt32BE(0), d.readUInt32BE(4)];
}

/** Grows the ring to `size` bytes (the core's size) unless it is that large, or another thread grows it now. */
export function arenaFit(s, size) {
  const a = s.arena;
  const ints = viewOf(s).ints;
  if (Atomics.load(ints, 1) >= size || !a.growable || Atomics.compareExchange(ints, 0, 0, 1) !== 0) return;
  try {
    if (a.byteLength < RING_AT + size) a.grow(RING_AT + size);
    Atomics.store(ints, 1, size);
  } catch {
    // No memory to grow into: the ring keeps its size.
  } finally {
    Atomics.store(ints, 0, 0);
  }
}

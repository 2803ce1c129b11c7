// A hold on a shared-memory slot that outlasts TAKEOVER_MS is taken over; whatever the stalled holder
// does when it resumes must not reach the slot's live words (a late copy into a buffer a later
// writer made live admitted 100,336 of 100,000 under CPU load). Driven through shared_memory.js's
// own exports, one thread: a second `enter` on a held slot waits out the lease and takes it over,
// and the stalled holder's `leave` comes afterwards, when the test says, with no timing luck.
// The package folds its snippets into odds_gate.js (scripts/inline-snippets.mjs), so this imports
// the source the package is built from.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { current, enter, enterCell, leave, leaveCell, useMemory } from '../src/js/shared_memory.js';
import { CELLS, CELL_WORDS, SLOT_WORDS as WORDS } from '../src/js/protocol.js';

const s = current();
// The module's memory, as `enter` and `leave` see it: region r is the WORDS f64s at r * WORDS.
const heap = new Float64Array(8 * WORDS);
useMemory({ buffer: heap.buffer });
const [OUT, IN, STALLED] = [1, 2, 3];
const fill = (r, v) => heap.fill(v, r * WORDS, (r + 1) * WORDS);

function hold(slot) {
  const held = enter(s, slot, true, 0, 0, IN * WORDS);
  assert.ok(held >= 0, `enter gave ${held}`);
  return held;
}
// Whole transactions: one writing WORDS copies of v, one writing nothing.
function write(slot, v) {
  const held = hold(slot);
  fill(OUT, v);
  assert.equal(leave(s, slot, held, OUT * WORDS), true, `writing ${v}`);
}
function read(slot) {
  const held = hold(slot);
  assert.equal(leave(s, slot, held, -1), true, 'reading');
}
// The slot's live words, all equal to v.
function assertLive(slot, v) {
  const held = hold(slot);
  assert.equal(leave(s, slot, held, -1), true);
  assert.deepEqual([...new Set(heap.subarray(IN * WORDS, (IN + 1) * WORDS))], [v]);
}
// How many buffers hold WORDS copies of v: the slots these tests use lie in the first 8 after the
// header and the cache's cells (shared_memory.js's layout), and each test's values are its own.
const HEAD_F64 = (64 + CELLS * (16 + 3 * CELL_WORDS * 8)) / 8;
const buffers = (v) => s.f64.subarray(0, HEAD_F64 + 8 * (2 + 3 * WORDS)).filter((x) => x === v).length / WORDS;
// A hold that another hold takes over: it stalls (its thread descheduled, collecting garbage)
// from now until the test lets it go.
function stall(slot, v) {
  const held = hold(slot);
  fill(STALLED, v);
  return held;
}
function takeOver(slot, v) {
  const start = performance.now();
  write(slot, v);
  assert.ok(performance.now() - start >= 100, 'the write waited out the lease');
}

test('a taken-over holder that resumes copies nothing into the live buffer', () => {
  const slot = 0;
  write(slot, 1);
  const stalled = stall(slot, 666);
  takeOver(slot, 2);
  // A read-only hold, then a write: its buffer is the one the stalled holder picked.
  read(slot);
  write(slot, 3);
  assert.equal(leave(s, slot, stalled, STALLED * WORDS), false, 'the late leave fails');
  assertLive(slot, 3);
  assert.equal(buffers(666), 0, 'nothing the stalled holder wrote is in the slot');
});

test("no write targets a taken-over holder's buffer while it may yet copy into it", () => {
  const slot = 1;
  // Each buffer its own value: two writes, a read-only hold, a write.
  write(slot, 11);
  write(slot, 12);
  read(slot);
  write(slot, 13);
  assert.deepEqual([11, 12, 13].map(buffers), [1, 1, 1]);
  const stalled = stall(slot, 777);
  takeOver(slot, 21);
  for (const v of [0, 22, 0, 0, 23, 24, 0, 25]) v ? write(slot, v) : read(slot);
  // The stalled holder's buffer kept what it held: that is where a late copy would go.
  assert.equal([11, 12, 13].map(buffers).reduce((a, b) => a + b), 1, 'one buffer left alone');
  assertLive(slot, 25);
  assert.equal(leave(s, slot, stalled, STALLED * WORDS), false);
  assertLive(slot, 25);
  // A second take-over while the first quarantine stands: the slot goes on as before.
  const again = stall(slot, 888);
  takeOver(slot, 31);
  for (const v of [0, 32, 0, 33, 34]) v ? write(slot, v) : read(slot);
  assert.equal(leave(s, slot, again, STALLED * WORDS), false);
  assertLive(slot, 34);
  assert.deepEqual([777, 888].map(buffers), [0, 0]);
});

test("the cache's cells are held the same way: a taken-over holder's late write counts for nothing", () => {
  const cell = CELLS - 1;
  const at = (r) => r * WORDS;
  const writeCell = (v) => {
    const held = enterCell(s, cell, at(IN));
    heap.fill(v, at(OUT), at(OUT) + CELL_WORDS);
    assert.equal(leaveCell(s, cell, held, at(OUT)), true, `writing ${v}`);
  };
  const liveCell = () => {
    const held = enterCell(s, cell, at(IN));
    assert.equal(leaveCell(s, cell, held, -1), true);
    return [...new Set(heap.subarray(at(IN), at(IN) + CELL_WORDS))];
  };
  writeCell(41);
  assert.deepEqual(liveCell(), [41]);
  const stalled = enterCell(s, cell, at(IN));
  heap.fill(999, at(STALLED), at(STALLED) + CELL_WORDS);
  const start = performance.now();
  writeCell(42);
  assert.ok(performance.now() - start >= 100, 'the write waited out the lease');
  assert.equal(leaveCell(s, cell, stalled, at(STALLED)), false, 'the late leave fails');
  assert.deepEqual(liveCell(), [42]);
  writeCell(43);
  assert.deepEqual(liveCell(), [43]);
  assert.equal(s.f64.subarray(0, 17416).filter((x) => x === 999).length, 0, 'nothing it wrote is in a cell');
});

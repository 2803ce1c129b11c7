// Lanes, live: `fetchImpl.lane(options)` is another fetchImpl on the same gates whose calls wait
// in a queue of their own, sharing admissions by weight. Wiring only, with wide bounds: the
// shares themselves are the core's, tested on the virtual clock (tests/lanes.rs).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { randomUUID } from 'node:crypto';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createFetch, simulate } from '../pkg/index.js';
import { startFakeOddsApi } from './support/fake-odds-api.mjs';
import { assertLiveWentFirst, LANES_RATE, LANES_SERVER } from './support/lanes-order.mjs';

const scenario = fileURLToPath(new URL('./support/threads-scenario.mjs', import.meta.url));

test('live calls in a heavier lane go before a queue of background refreshes, on one key, with no 429', async () => {
  const rate = LANES_RATE;
  const api = await startFakeOddsApi(LANES_SERVER);
  try {
    const fetchImpl = createFetch({ rate });
    const background = fetchImpl.lane({ weight: 1, retry: false });
    const live = fetchImpl.lane({ name: 'live', weight: 9 });
    const headers = { 'X-API-Key': `lanes-${randomUUID()}` };
    const url = (n) => `${api.baseUrl}/events/${n}/odds/snapshot`;
    const done = [];
    const call = (lane, kind, n) => lane(url(n), { headers }).then(async (r) => {
      await r.text();
      done.push({ kind, status: r.status });
    });
    const queued = Array.from({ length: 40 }, (_, n) => call(background, 'background', n));
    // The live calls come once the first refresh is back: the other 39 queued before them.
    await queued[0];
    const urgent = Array.from({ length: 8 }, (_, n) => call(live, 'live', 100 + n));
    await Promise.all([...queued, ...urgent]);
    // Nine live for one background once they come (see support/lanes-order.mjs).
    assertLiveWentFirst(done, api);
    // One gate for the key: the lanes share it, and its figures count every lane's calls;
    // each lane's own figures count its own.
    const gates = live.stats().gates;
    assert.equal(gates.length, 1);
    assert.equal(gates[0].admitted, 48);
    const [bg, lv] = [background.stats().lane, live.stats().lane];
    assert.deepEqual([bg.weight, bg.admitted, bg.waiting, lv.weight, lv.admitted, lv.waiting], [1, 40, 0, 9, 8, 0]);
    assert.ok(bg.waitedMs > lv.waitedMs && lv.waitedMs > 0, `waited: background ${bg.waitedMs} ms, live ${lv.waitedMs} ms`);
    assert.match(live.describe().lane, /"live", of weight 9/);
    // Names: the wrapper's own calls are `default`; an unnamed lane is numbered by the unnamed
    // lanes this thread made (so two never share a name), a named one keeps its name (and is
    // the lane of that name for every wrapper, thread and process on the gates).
    assert.deepEqual([fetchImpl.stats().lane.name, lv.name], ['default', 'live']);
    const [n] = bg.name.match(/^lane-(\d+)$/).slice(1).map(Number);
    assert.equal(fetchImpl.lane().stats().lane.name, `lane-${n + 1}`);
    assert.equal(fetchImpl.describe().lane, undefined, "a wrapper's own calls are no lane of their own");
  } finally {
    await api.close();
  }
});

test('across worker threads, live calls in one thread go before background calls another thread queued', async () => {
  const rate = LANES_RATE;
  const api = await startFakeOddsApi(LANES_SERVER);
  try {
    const job = { mode: 'lanes', rate, baseUrl: api.baseUrl, apiKey: `lanes-${randomUUID()}`, background: 40, live: 8, delayMs: 500 };
    const { stdout } = await promisify(execFile)(process.execPath, [scenario, JSON.stringify(job)], { timeout: 120_000 });
    const done = JSON.parse(stdout).done;
    // The threads follow one schedule: as in one thread above (one queue across the threads
    // would have the live calls done last).
    assertLiveWentFirst(done, api);
  } finally {
    await api.close();
  }
});

test('a lane composes with batch(), and a bad lane option is a typed error naming the field', async () => {
  const fetchImpl = createFetch({ rate: { burst: 1, perSecond: 1000 }, fetch: async () => new Response('{}') });
  const headers = { 'X-API-Key': `lanes-${randomUUID()}` };
  const round = fetchImpl.lane({ weight: 3 }).batch({ deadlineMs: 5_000 });
  assert.equal((await round('http://127.0.0.1/x', { headers })).status, 200);
  assert.equal(round.stats().batch.remainingMs > 0, true);
  assert.equal((await fetchImpl.batch({ deadlineMs: 5_000 }).lane()('http://127.0.0.1/y', { headers })).status, 200);
  for (const weight of [0, -1, NaN, Infinity]) {
    assert.throws(() => fetchImpl.lane({ weight }), { name: 'RangeError', message: /`lane\.weight`.*positive finite/ });
  }
  assert.throws(() => fetchImpl.lane({ weight: '2' }), { name: 'TypeError', message: /weight/ });
  assert.throws(() => fetchImpl.lane({ wieght: 2 }), { name: 'TypeError', message: /wieght/ });
  assert.throws(() => fetchImpl.lane({ retry: { budget: false } }), { name: 'TypeError', message: /retry\.budget/ });
  assert.throws(() => fetchImpl.lane({ maxWaitMs: -1 }), { name: 'RangeError', message: /maxWaitMs/ });
  for (const name of ['', 'x'.repeat(65)]) {
    assert.throws(() => fetchImpl.lane({ name }), { name: 'RangeError', message: /`lane\.name` must be 1 to 64 characters long/ });
  }
  assert.throws(() => fetchImpl.lane({ name: 7 }), { name: 'TypeError', message: /`lane\.name`/ });
  assert.equal(fetchImpl.lane({ name: 'é'.repeat(64) }).stats().lane.name.length, 64);
});

test("a lane's own limits: maxWaiting drops its work rather than queue it, the other lane's calls still wait", async () => {
  const fetchImpl = createFetch({ rate: { burst: 1, perSecond: 10 }, fetch: async () => new Response('{}') });
  const headers = { 'X-API-Key': `lanes-${randomUUID()}` };
  const bestEffort = fetchImpl.lane({ maxWaiting: 2, retry: false });
  const results = await Promise.allSettled([
    ...Array.from({ length: 4 }, () => fetchImpl('http://127.0.0.1/a', { headers })),
    bestEffort('http://127.0.0.1/b', { headers }),
  ]);
  assert.deepEqual(results.slice(0, 4).map((r) => r.status), ['fulfilled', 'fulfilled', 'fulfilled', 'fulfilled']);
  assert.equal(results[4].status, 'rejected', 'more than two already waited on the gate');
  assert.match(String(results[4].reason?.message), /queue-full/);
});

test('simulate({ lanes }): the issue\'s case on the virtual clock, each lane\'s figures, and the options lanes refuse', () => {
  const lanes = [{ name: 'background', workers: 40 }, { name: 'live', weight: 9, workers: 8, startMs: 1000 }];
  const r = simulate({ lanes });
  assert.deepEqual([r.attempts, r.throttled, r.completed, r.lastAttemptMs], [48, 0, 48, 23000]);
  assert.deepEqual(r.lanes.map((l) => [l.name, l.weight, l.firstWorker, l.workers, l.calls, l.admitted, l.throttled, l.doneMs]),
    [['background', 1, 0, 40, 40, 40, 0, 23000], ['live', 9, 40, 8, 8, 8, 0, 4500]]);
  assert.ok(r.lanes[1].maxWaitMs <= 3500 && r.lanes[0].meanWaitMs > 5 * r.lanes[1].meanWaitMs, JSON.stringify(r.lanes));
  // The wrapper's own workers are `default`; an unnamed lane is numbered by its place.
  assert.deepEqual(simulate({ workers: 2, lanes: [{ workers: 1, snapshots: 2 }] }).lanes.map((l) => [l.name, l.calls]), [['default', 2], ['lane-1', 2]]);
  assert.equal(simulate().lanes, undefined);
  assert.throws(() => simulate({ lanes: [{ workers: 1 }, { workers: 1, weight: 0 }] }), { name: 'RangeError', message: /^`lanes\[1\]\.weight`/ });
  assert.throws(() => simulate({ lanes: [{ weight: 2 }] }), { name: 'TypeError', message: /`lanes\[0\]\.workers` is required/ });
  assert.throws(() => simulate({ lanes: [{ workers: 1, name: '' }] }), { name: 'RangeError', message: /`lanes\[0\]\.name`/ });
  for (const other of [{ threads: 2 }, { processes: 2 }, { separateGates: 2 }, { shared: false }]) {
    assert.throws(() => simulate({ lanes, ...other }), { name: 'TypeError', message: /`lanes` wait in one shared gate's queue/ }, JSON.stringify(other));
  }
  assert.throws(() => simulate({ lanes, lookups: { calls: 1, burst: 1, perSecond: 1 } }), { name: 'TypeError', message: /`lanes` and `lookups`/ });
});

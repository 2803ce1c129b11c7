// The shapes JavaScript sees, key by key and in order: the core's figures and reports serialise
// themselves (the `serde` feature), so these pin what no other suite spells out whole.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createFetch, redisStore, simulate } from '../pkg/index.js';

const throttled = async () => new Response('{}', {
  status: 429,
  headers: { 'retry-after': '1', 'x-ratelimit-limit': '5', 'x-ratelimit-remaining': '0' },
});

test('stats(): a gate\'s figures, its estimate, histograms and last feedback, in their order', async () => {
  const fetchImpl = createFetch({ rate: { burst: 2, perSecond: 2, learn: true }, fetch: throttled, retry: false });
  await fetchImpl('https://api.example/v1/events/e1/odds/snapshot', { headers: { 'X-API-Key': 'shapes-1' } });
  const stats = fetchImpl.stats();
  assert.deepEqual(Object.keys(stats), ['admitted', 'waiting', 'throttled', 'retries', 'abandoned', 'gates', 'lane']);
  const [gate] = stats.gates;
  assert.deepEqual(Object.keys(gate), [
    'scope', 'requests', 'admitted', 'waiting', 'peakWaiting', 'cancelled', 'abandonedInQueue', 'throttled', 'wakeups',
    'timerArmed', 'cooldownUntil', 'cooldownRemainingMs', 'slow', 'retries', 'abandoned', 'quotaRejected', 'quota',
    'retryBudget', 'rate', 'learned', 'store', 'admissionWaitMs', 'backoffMs', 'lastFeedback',
  ]);
  assert.deepEqual(Object.keys(gate.learned), ['burst', 'perSecond', 'atLeast', 'confidence', 'lastThrottle']);
  assert.ok(gate.learned.lastThrottle instanceof Date);
  assert.deepEqual(Object.keys(gate.rate), ['burst', 'perSecond']);
  assert.deepEqual(gate.retries, { throttled: 0, serverError: 0, network: 0, timeout: 0 });
  assert.deepEqual(gate.quota, { state: 'open', periodEnd: null });
  assert.deepEqual(gate.store, { kind: 'memory', threads: true });
  assert.deepEqual(gate.lastFeedback, { retryAfterMs: 1000, limit: 5, remaining: 0, resetMs: null, limiter: null });
  assert.deepEqual(Object.keys(gate.admissionWaitMs), ['count', 'sumMs', 'maxMs', 'bins']);
  assert.deepEqual(gate.admissionWaitMs.bins.at(-1), { leMs: Infinity, count: 0 });
});

test('describe(): a Redis store in words, from its prefix and settings', () => {
  const client = { evalsha() {}, script() {} };
  const store = (options) => createFetch({ store: redisStore(client, options) }).describe().store;
  assert.equal(store({ prefix: 'p', timeoutMs: 250, onFailure: 'local', localShare: 0.25 }),
    'shared across processes through Redis (keys p:{scope}:gate, Redis TIME as the clock); if Redis does not answer '
    + 'within 250 ms, each process admits alone at 25% of the allowance, and Redis is asked again after 1000 ms');
  assert.equal(store({ onFailure: 'closed', retryMs: 3000 }),
    'shared across processes through Redis (keys og:{scope}:gate, Redis TIME as the clock); if Redis does not answer '
    + 'within 500 ms, calls fail with GateAbandonedError (store-unavailable), and Redis is asked again after 3000 ms');
});

test('simulate(): the report, its estimates, lanes and limiters, in their order', () => {
  const learning = simulate({ learn: true, headers: true, workers: 4 });
  assert.deepEqual(Object.keys(learning), ['attempts', 'throttled', 'rejected', 'completed', 'abandoned', 'lastAttemptMs', 'timeline', 'learned']);
  assert.deepEqual(Object.keys(learning.timeline[0]), ['at', 'worker', 'status']);
  assert.deepEqual(Object.keys(learning.learned[0]), ['at', 'burst', 'perSecond', 'atLeast', 'confidence']);
  const lanes = simulate({ lanes: [{ name: 'a', workers: 2 }], workers: 1 });
  assert.deepEqual(lanes.lanes[1], {
    name: 'a', weight: 1, firstWorker: 1, workers: 2, startMs: 0, calls: 2, admitted: 2, throttled: 0, doneMs: 500,
    meanWaitMs: 250, maxWaitMs: 500,
  });
  const lookups = simulate({ lookups: { calls: 2, burst: 1, perSecond: 1 } });
  assert.deepEqual(lookups.limiters[0], { name: 'snapshot', attempts: 20, throttled: 12, doneMs: 3000 });
});

test('describe() says what each mode does, as it is configured: threads, store, spread, learning, lanes, cache', () => {
  const client = { evalsha() {}, script() {} };
  const d = (options) => createFetch(options).describe();
  const fixed = { burst: 2, perSecond: 2 };
  // Where the allowance lives.
  assert.match(d({}).store, /^in-process memory shared by every thread of the process/);
  assert.match(d({ threads: false }).store, /^in-process memory of this thread only \(threads: false\)/);
  assert.match(d({ store: redisStore(client) }).store, /^shared across processes through Redis.*each process admits alone at 25% of the allowance, and Redis/);
  // With the spread, what a process alone spends of it, and who shares its bucket.
  const fleet = d({ store: redisStore(client), quota: { spread: true } });
  assert.match(fleet.store, /at 25% of the allowance and of the spread's pace \(told to Redis when it answers again\)/);
  assert.match(fleet.spread, /a scale the readings teach.*; shared by the fleet through the store$/);
  assert.match(d({ quota: { spread: true } }).spread, /a scale the readings teach.*; shared by every thread of the process$/);
  assert.match(d({ threads: false, quota: { spread: true } }).spread, /else learned per route.*; this thread's gates only \(threads: false\)$/);
  assert.equal(d({}).spread, undefined);
  // Learning, or the rate given.
  assert.equal(d({}).learn, true);
  assert.match(d({}).text, /^- bucket: learned per credential from the responses:/m);
  assert.equal(d({ rate: fixed }).learn, false);
  assert.match(d({ rate: fixed }).text, /^- bucket: burst 2 at 2 per second, per credential/m);
  // A lane's own words.
  assert.match(createFetch({ rate: fixed }).lane({ name: 'bg', weight: 3 }).describe().lane, /^lane "bg", of weight 3:/);
  assert.equal(d({ rate: fixed }).lane, undefined);
  // The cache, by who shares it.
  assert.match(d({ cache: true }).cache, /\(shared: threads\).*in a ring in that memory/);
  assert.match(d({ cache: true, threads: false }).cache, /\(shared: no; threads: false\)/);
  assert.match(d({ cache: true, store: redisStore(client) }).cache, /\(shared: the fleet\)/);
});

// stats() crosses from wasm as one JSON string (src/js/figures.js): every field of a busy
// wrapper's figures, for many kinds of gates (a fixed rate, learning, lanes, a cache, a quota
// spread, throttled ones with their last feedback), checked against the shape index.d.ts gives.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { randomUUID } from 'node:crypto';
import { createFetch } from '../pkg/index.js';
import { startFakeOddsApi } from './support/fake-odds-api.mjs';

const REASONS = ['attempts', 'time-budget', 'retry-budget', 'deadline', 'retry-after-exceeds-deadline', 'store-unavailable', 'queue-wait', 'queue-full', 'credit-wait'];
const BOUNDS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 60000, Infinity];

const count = (v, at) => assert.ok(Number.isInteger(v) && v >= 0, `${at}: a count, got ${v}`);
const number = (v, at) => assert.ok(typeof v === 'number' && !Number.isNaN(v), `${at}: a number, got ${v}`);
const orNull = (check) => (v, at) => v === null || check(v, at);
const date = (v, at) => assert.ok(v instanceof Date && !Number.isNaN(v.getTime()), `${at}: a Date, got ${v}`);
const kind = (type) => (v, at) => assert.equal(typeof v, type, at);

/** `value` has exactly the keys of `shape` (`?` marks one that may be left out), in order. */
function fields(value, shape, at) {
  const keys = Object.keys(shape);
  const present = keys.filter((k) => !k.endsWith('?') || k.slice(0, -1) in value).map((k) => k.replace('?', ''));
  assert.deepEqual(Object.keys(value), present, `${at}: its keys`);
  for (const k of keys) {
    const name = k.replace('?', '');
    if (name in value) shape[k](value[name], `${at}.${name}`);
  }
}
const object = (shape) => (v, at) => fields(v, shape, at);

const histogram = (h, at) => {
  fields(h, { count, sumMs: number, maxMs: number, bins: Array.isArray }, at);
  assert.deepEqual(h.bins.map((b) => b.leMs), BOUNDS, `${at}.bins' bounds`);
  h.bins.forEach((b, i) => fields(b, { leMs: number, count }, `${at}.bins[${i}]`));
  assert.equal(h.bins.reduce((sum, b) => sum + b.count, 0), h.count, `${at}: its bins add up`);
};

const gateShape = {
  scope: kind('string'), requests: count, admitted: count, waiting: count, peakWaiting: count, cancelled: count,
  abandonedInQueue: count, throttled: count, wakeups: count, timerArmed: kind('boolean'), cooldownUntil: number,
  cooldownRemainingMs: number, slow: kind('boolean'),
  retries: object({ throttled: count, serverError: count, network: count, timeout: count }),
  abandoned: object(Object.fromEntries(REASONS.map((r) => [r, count]))),
  quotaRejected: count,
  quota: object({
    state: (v, at) => assert.ok(['open', 'probing', 'exhausted'].includes(v), at), periodEnd: orNull(date),
    'used?': number, 'limit?': number, 'spreadPerHour?': number, 'waitingForCredit?': count, 'unpaced?': count,
    'projectedEnd?': orNull(date),
  }),
  retryBudget: orNull(number),
  rate: object({ burst: number, perSecond: number }),
  learned: orNull(object({ burst: orNull(number), perSecond: number, atLeast: number, confidence: number, lastThrottle: orNull(date) })),
  store: object({ kind: kind('string'), 'threads?': kind('boolean'), 'calls?': count, 'failures?': count, 'up?': kind('boolean') }),
  admissionWaitMs: histogram,
  backoffMs: histogram,
  lastFeedback: orNull(object({
    retryAfterMs: orNull(number), limit: orNull(number), remaining: orNull(number), resetMs: orNull(number), limiter: orNull(kind('string')),
  })),
};

const statsShape = (extra) => ({
  admitted: count, waiting: count, throttled: count, retries: count, abandoned: count,
  gates: (gates, at) => gates.forEach((g, i) => fields(g, gateShape, `${at}[${i}]`)),
  lane: object({ name: kind('string'), weight: number, waiting: count, admitted: count, waitedMs: number }),
  ...extra,
});

test('stats() of a busy wrapper, its lane and others: every field as index.d.ts gives it', async () => {
  const api = await startFakeOddsApi({ burst: 1, perSecond: 10, creditLimit: 100_000, retryAfterSeconds: 0.1, rateLimitHeaders: false });
  try {
    const spreading = createFetch({
      rate: { burst: 2, perSecond: 20 }, threads: false, cache: true, quota: { spread: true }, retry: { maxAttempts: 3 },
    });
    const lane = spreading.lane({ name: 'bulk', weight: 2 });
    const learning = createFetch({ threads: false });
    const batch = createFetch({ rate: { burst: 1, perSecond: 50 } }).batch({ deadlineMs: 60_000, retryBudget: 4 });
    const key = () => ({ 'X-API-Key': randomUUID() });
    const calls = [];
    for (let k = 0; k < 4; k++) {
      const [a, b, c] = [key(), key(), key()];
      for (let i = 0; i < 4; i++) {
        // Bursts beyond the server's allowance: 429s, retries and feedback.
        calls.push(learning(`${api.baseUrl}/events/e${i}/odds/snapshot`, { headers: a }));
        calls.push((i % 2 ? lane : spreading)(`${api.baseUrl}/events/e${i % 2}/odds/snapshot`, { headers: b }));
        calls.push(batch(`${api.baseUrl}/events/e${i}/odds/snapshot`, { headers: c }));
      }
    }
    for (const r of await Promise.allSettled(calls)) if (r.status === 'fulfilled') await r.value.text();

    const stats = spreading.stats();
    fields(stats, statsShape({
      'cache?': object({ entries: count, bytes: number, hits: count, coalesced: count, stale: count, evictions: count, requestsSaved: count }),
    }), 'stats()');
    assert.ok(stats.cache, 'the cache\'s figures');
    assert.ok(stats.gates.length >= 4 && stats.gates.every((g) => 'spreadPerHour' in g.quota), 'spread figures per gate');
    fields(lane.stats(), statsShape({ 'cache?': Boolean }), 'lane.stats()');
    assert.deepEqual(lane.stats().lane.name, 'bulk');
    const learned = learning.stats();
    fields(learned, statsShape({}), 'learning.stats()');
    assert.ok(learned.gates.some((g) => g.learned !== null && g.lastFeedback !== null), 'a gate learned from a 429');
    assert.ok(learned.gates.some((g) => g.learned?.lastThrottle instanceof Date), 'its last 429 a Date');
    assert.ok(learned.gates.some((g) => g.admissionWaitMs.count > 0 && g.admissionWaitMs.sumMs > 0), 'waits recorded');
    fields(batch.stats(), statsShape({ 'batch?': object({ remainingMs: number, retriesLeft: orNull(count) }) }), 'batch.stats()');
    assert.ok(batch.stats().batch, 'the batch\'s figures');
  } finally {
    await api.close();
  }
});

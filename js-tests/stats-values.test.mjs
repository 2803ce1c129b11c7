// stats() value by value: the figures of a few kinds of gates (a fixed rate with a lane, one in a
// Retry-After's cooldown with its last feedback, a spread quota, a learning one), every key in
// its order and every value compared with Object.is (so null, NaN, -0 and Infinity are told
// apart), as the figures crossed as JSON text gave them before they crossed as numbers (#38).
// Only what depends on the clock is checked by a rule rather than a value.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createFetch } from '../pkg/index.js';

const BOUNDS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 60000, Infinity];
const base = 'https://api.example/v1';
const usageEnd = new Date(Date.now() + 3_600_000);

// The inner fetch: /usage for the spread, a 429 with a Retry-After and counts on /throttle, else a 200.
async function stub(url) {
  const u = String(url);
  if (u.endsWith('/usage')) {
    const usage = { api_credits_used: 250, api_credits_limit: 1000, period_end_utc: usageEnd.toISOString() };
    return new Response(JSON.stringify(usage), { headers: { 'content-type': 'application/json' } });
  }
  if (u.endsWith('/throttle')) {
    const headers = { 'retry-after': '30', 'x-ratelimit-limit': '5', 'x-ratelimit-remaining': '0', 'x-ratelimit-bucket': 'snap' };
    return new Response('{"detail":"slow down"}', { status: 429, headers });
  }
  return new Response('ok', { headers: { 'x-ratelimit-limit': '10', 'x-ratelimit-remaining': '7' } });
}

/** `actual` is `expected`: the same keys in the same order, values by Object.is; a function in `expected` checks the value instead. */
function same(actual, expected, at) {
  if (typeof expected === 'function') return expected(actual, at);
  if (expected === null || typeof expected !== 'object') {
    return assert.ok(Object.is(actual, expected), `${at}: ${String(actual)}, expected ${String(expected)}`);
  }
  assert.ok(actual !== null && typeof actual === 'object', `${at}: an object, got ${actual}`);
  assert.equal(Array.isArray(actual), Array.isArray(expected), `${at}: an array or not`);
  assert.deepEqual(Object.keys(actual), Object.keys(expected), `${at}: its keys`);
  for (const k of Object.keys(expected)) same(actual[k], expected[k], `${at}.${k}`);
}

const scope = (v, at) => assert.match(v, /^key:[0-9a-f]{32}$/, at);
const date = (near, slackMs) => (v, at) => {
  assert.ok(v instanceof Date, `${at}: a Date`);
  assert.ok(Math.abs(v.getTime() - near.getTime()) <= slackMs, `${at}: ${v.toISOString()}, expected about ${near.toISOString()}`);
};
const between = (lo, hi) => (v, at) => assert.ok(typeof v === 'number' && v >= lo && v <= hi, `${at}: ${v}, expected ${lo}..${hi}`);
const bins = (...counts) => BOUNDS.map((leMs, i) => ({ leMs, count: counts[i] ?? 0 }));
const histogram = (count, sumMs = 0, maxMs = 0, ...counts) => ({ count, sumMs, maxMs, bins: bins(...counts) });
// A histogram of `count` waits of a few milliseconds at most (the clock's).
const shortWaits = (count) => (h, at) => {
  same(h, { count, sumMs: between(0, 100), maxMs: between(0, 50), bins: (b, where) => {
    same(b.map((x) => x.leMs), BOUNDS, `${where}'s bounds`);
    assert.equal(b.reduce((sum, x) => sum + x.count, 0), count, `${where} add up`);
  } }, at);
};
const none = { throttled: 0, serverError: 0, network: 0, timeout: 0 };
const notAbandoned = {
  attempts: 0, 'time-budget': 0, 'retry-budget': 0, deadline: 0, 'retry-after-exceeds-deadline': 0,
  'store-unavailable': 0, 'queue-wait': 0, 'queue-full': 0, 'credit-wait': 0,
};

/** A gate's figures with the defaults of one that has admitted `admitted` calls, `over` them. */
const gate = (admitted, over) => ({
  scope, requests: admitted, admitted, waiting: 0, peakWaiting: 1, cancelled: 0, abandonedInQueue: 0, throttled: 0,
  wakeups: 0, timerArmed: false, cooldownUntil: 0, cooldownRemainingMs: 0, slow: false, retries: none,
  abandoned: notAbandoned, quotaRejected: 0, quota: { state: 'open', periodEnd: null }, retryBudget: null,
  rate: { burst: 2, perSecond: 1 }, learned: null, store: { kind: 'memory', threads: true },
  admissionWaitMs: histogram(admitted, 0, 0, admitted), backoffMs: histogram(0), lastFeedback: null, ...over,
});
// In a 30 s cooldown from a 429 a moment ago, on the performance.now() clock.
const cooldown = {
  cooldownUntil: (v, at) => between(29_000, 30_000)(v - performance.now(), at),
  cooldownRemainingMs: between(29_000, 30_000),
};
const feedback = { retryAfterMs: 30000, limit: 5, remaining: 0, resetMs: null, limiter: 'snap' };
const totals = (admitted, throttled, lane) => ({ admitted, waiting: 0, throttled, retries: 0, abandoned: 0, gates: [], lane });

test('stats(): each kind of gate, value by value, in its order', async () => {
  const fixed = createFetch({ rate: { burst: 2, perSecond: 1 }, fetch: stub, retry: false });
  const lane = fixed.lane({ name: 'bulk', weight: 2 });
  const spreading = createFetch({ rate: { burst: 5, perSecond: 10 }, fetch: stub, threads: false, quota: { spread: true } });
  const learning = createFetch({ fetch: stub, threads: false, retry: false });
  const call = async (wrapper, path, key) => (await wrapper(`${base}${path}`, { headers: { 'X-API-Key': key } })).text();
  await call(fixed, '/events/e1', 'stats-values-fixed');
  await call(lane, '/events/e2', 'stats-values-fixed');
  await call(fixed, '/throttle', 'stats-values-cool');
  await call(spreading, '/events/e1', 'stats-values-spread');
  const learnedAt = new Date();
  await call(learning, '/throttle', 'stats-values-learn');

  const shared = gate(2);
  const fixedStats = fixed.stats();
  same(fixedStats, {
    ...totals(3, 1, { name: 'default', weight: 1, waiting: 0, admitted: 2, waitedMs: 0 }),
    gates: [gate(1, { throttled: 1, ...cooldown, lastFeedback: feedback }), shared],
  }, 'stats()');
  const laneStats = lane.stats();
  same(laneStats, { ...totals(2, 0, { name: 'bulk', weight: 2, waiting: 0, admitted: 1, waitedMs: 0 }), gates: [shared] }, 'lane.stats()');
  assert.equal(laneStats.gates[0].scope, fixedStats.gates[1].scope, 'one gate for the key, whichever lane');

  same(spreading.stats(), {
    ...totals(2, 0, { name: 'default', weight: 1, waiting: 0, admitted: 2, waitedMs: between(0, 100) }),
    gates: [gate(2, {
      peakWaiting: 2,
      quota: {
        state: 'open', periodEnd: (v, at) => assert.equal(v?.getTime(), usageEnd.getTime(), at), used: 251, limit: 1000, spreadPerHour: between(650, 750), waitingForCredit: 0,
        unpaced: 0, projectedEnd: null,
      },
      retryBudget: 500,
      rate: { burst: 5, perSecond: 10 },
      store: { kind: 'memory', threads: false },
      admissionWaitMs: shortWaits(2),
    })],
  }, 'spreading.stats()');

  same(learning.stats(), {
    ...totals(1, 1, { name: 'default', weight: 1, waiting: 0, admitted: 1, waitedMs: 0 }),
    gates: [gate(1, {
      throttled: 1,
      ...cooldown,
      rate: { burst: 5, perSecond: 1 },
      learned: { burst: 5, perSecond: 1, atLeast: 0, confidence: 0, lastThrottle: date(learnedAt, 5_000) },
      store: { kind: 'memory', threads: false },
      lastFeedback: feedback,
    })],
  }, 'learning.stats()');
});

// Learning the allowance, live: createFetch() without a rate against the fake Odds API, with the
// X-RateLimit-* counts and without them, and with two limiter buckets on one key. The policy
// itself is tested on virtual time in the core (tests/learn.rs); these check the wiring, with
// wide bounds.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { randomUUID } from 'node:crypto';
import { createFetch } from '../pkg/index.js';
import { startFakeOddsApi } from './support/fake-odds-api.mjs';

/** `workers` workers fetch `each` URLs from `url(w, i)` one after another; the end times. */
async function workers(fetchImpl, apiKey, count, each, url) {
  const started = performance.now();
  const ends = [];
  await Promise.all(Array.from({ length: count }, async (_, w) => {
    for (let i = 0; i < each; i++) {
      const res = await fetchImpl(url(w, i), { headers: { 'X-API-Key': apiKey, Accept: 'application/json' } });
      assert.equal(res.status, 200, `worker ${w} call ${i}`);
      await res.text();
      ends.push(performance.now() - started);
    }
  }));
  return Math.max(...ends);
}

const snapshot = (api) => (w, i) => `${api.baseUrl}/events/w${w}-${i}/odds/snapshot`;

test('without a rate, the counts in the headers teach the gate the burst and the pace', async () => {
  const api = await startFakeOddsApi({ burst: 5, perSecond: 10 });
  try {
    const events = [];
    const fetchImpl = createFetch({ onEvent: (e) => events.push(e) });
    const description = fetchImpl.describe();
    assert.equal(description.learn, true);
    assert.equal(description.rate, null);
    assert.match(description.text, /bucket: learned per credential from the responses/);
    assert.match(description.text, /up to 16 limiters beside the first and 256 routes per credential/);
    assert.match(description.text, /estimate kept \(for up to 32768 forgotten gates per thread/);
    assert.equal(description.learned, 'nothing yet (no answer so far)');
    // 20 workers x 3 snapshots: 60 requests, 5.5 s at the true allowance.
    await workers(fetchImpl, `learn-${randomUUID()}`, 20, 3, snapshot(api));
    const server = api.stats();
    assert.equal(server.ok, 60);
    assert.ok(server.throttled <= 3, `${server.throttled} 429s`);
    const [gate] = fetchImpl.stats().gates;
    assert.equal(gate.learned.burst, 5);
    assert.equal(gate.rate.burst, 5);
    assert.ok(gate.learned.perSecond > 3 && gate.learned.perSecond <= 10.5, JSON.stringify(gate.learned));
    assert.ok(gate.learned.atLeast <= 10.5, 'a lower bound never above the true rate');
    const described = fetchImpl.describe();
    assert.match(described.learned, new RegExp(`^${gate.scope}: burst 5 at [\\d.]+ per second \\(at least [\\d.]+, confidence [\\d.]+; last 429 `));
    assert.match(described.text, /\n- learned: key:/);
    const learned = events.filter((e) => e.type === 'learned');
    assert.ok(learned.length >= 1);
    assert.equal(learned.at(-1).scope, gate.scope);
    assert.equal(learned.at(-1).learned.burst, 5);
  } finally {
    await api.close();
  }
});

test('with 429 and Retry-After only, the gate still finds a pace and every call completes', async () => {
  const api = await startFakeOddsApi({ burst: 5, perSecond: 10, rateLimitHeaders: false });
  try {
    const fetchImpl = createFetch({ rate: 'auto', retry: { maxAttempts: 10 } });
    await workers(fetchImpl, `blind-${randomUUID()}`, 8, 5, snapshot(api));
    const server = api.stats();
    assert.equal(server.ok, 40);
    assert.ok(server.throttled <= 10, `${server.throttled} 429s`);
    const [gate] = fetchImpl.stats().gates;
    assert.equal(gate.learned.burst, null, 'no limit header: no burst learned');
    assert.equal(gate.rate.burst, 1);
    // Wiring, in real time on a machine that may be busy: a pace was learned and put to use.
    // The pace itself (8/s; 8.08/s measured here) is asserted exactly on the virtual clock
    // (tests/learn.rs, with_retry_after_only_the_live_tests_run_learns_8_per_second); a third
    // of the rate still catches a gate that never learned or learned from nothing.
    assert.ok(gate.learned.perSecond >= 10 / 3, JSON.stringify(gate.learned));
  } finally {
    await api.close();
  }
});

test('a learned allowance never goes above the rate given with learn: true', async () => {
  const api = await startFakeOddsApi({ burst: 5, perSecond: 10 });
  try {
    const fetchImpl = createFetch({ rate: { burst: 2, perSecond: 4, learn: true } });
    assert.deepEqual(fetchImpl.describe().rate, { burst: 2, perSecond: 4 });
    const started = performance.now();
    await workers(fetchImpl, `ceiling-${randomUUID()}`, 4, 3, snapshot(api));
    // 12 calls at no more than burst 2 at 4/s: at least 2.5 s.
    assert.ok(performance.now() - started >= 2_400, `${(performance.now() - started).toFixed(0)} ms`);
    const [gate] = fetchImpl.stats().gates;
    assert.ok(gate.rate.burst <= 2 && gate.rate.perSecond <= 4, JSON.stringify(gate.rate));
  } finally {
    await api.close();
  }
});

test('two limiter buckets on one key: event lookups are not held behind snapshots', async () => {
  const api = await startFakeOddsApi({ burst: 2, perSecond: 2, events: { burst: 10, perSecond: 10 } });
  try {
    const fetchImpl = createFetch();
    const apiKey = `buckets-${randomUUID()}`;
    // Snapshots alone need 3 s (8 at burst 2, 2/s); 40 lookups alone 3 s (burst 10, 10/s).
    // Held behind the snapshots' allowance, the lookups would take 20 s.
    const [snapshotsDone, lookupsDone] = await Promise.all([
      workers(fetchImpl, apiKey, 4, 2, snapshot(api)),
      workers(fetchImpl, apiKey, 8, 5, (w, i) => `${api.baseUrl}/events/e${w}-${i}`),
    ]);
    const server = api.stats();
    assert.equal(server.byBucket.snapshot.ok, 8);
    assert.equal(server.byBucket.events.ok, 40);
    assert.ok(server.throttled <= 6, `${server.throttled} 429s`);
    assert.ok(lookupsDone < 9_000, `lookups done at ${lookupsDone.toFixed(0)} ms`);
    assert.ok(snapshotsDone >= 2_500, `snapshots done at ${snapshotsDone.toFixed(0)} ms`);
    const gates = fetchImpl.stats().gates;
    assert.equal(gates.length, 2, gates.map((g) => g.scope).join());
    const events = gates.find((g) => g.scope.endsWith('#events'));
    assert.ok(events, 'a gate for the events bucket');
    assert.equal(events.learned.burst, 10);
    const first = gates.find((g) => !g.scope.includes('#'));
    assert.equal(events.scope, `${first.scope}#events`);
  } finally {
    await api.close();
  }
});

test('a learning wrapper settles a call whose input cannot be read as a URL', async () => {
  const fetchImpl = createFetch({ retry: false, fetch: async () => { throw new TypeError('not a URL'); } });
  const input = { toString() { throw new Error('unreadable'); } };
  await assert.rejects(fetchImpl(input, { headers: { 'X-API-Key': `bad-${randomUUID()}` } }), /not a URL/);
});

// The article's eight checks (section 6), through the package's JavaScript API. The model
// checks run the production core on a virtual clock; the observer checks run createFetch.
import assert from 'node:assert/strict';
import test from 'node:test';
import { randomUUID } from 'node:crypto';
import { Gate, simulate, createFetch } from '../pkg/index.js';
import { simulate as articleModel } from './support/retry-model.mjs';

const rate = { burst: 2, perSecond: 2 };
const freshKey = () => `article-${randomUUID()}`;

test('independent delays repeat the collision; shared admission avoids it in this model', () => {
  const independent = simulate();
  const shared = simulate({ shared: true });
  // The article's assertions, unchanged: simulate() speaks its words (`rejected`, beside ours).
  assert.deepEqual([independent.attempts, independent.rejected, independent.completed], [20, 12, 8]);
  assert.deepEqual([shared.attempts, shared.rejected, shared.completed], [8, 0, 8]);
  assert.equal(independent.throttled, independent.rejected);
  assert.equal(independent.lastAttemptMs, 3000);
  assert.equal(shared.lastAttemptMs, 3000);
  assert.deepEqual(shared.timeline.map((x) => x.at), [0, 0, 500, 1000, 1500, 2000, 2500, 3000]);
});

test('cooldown blocks every worker, then admission still limits the burst', () => {
  const gate = new Gate(rate);
  gate.defer(0, 2000);
  assert.ok(Array.from({ length: 8 }, () => gate.admitAt(1999)).every((t) => t === 2000));
  const resumed = Array.from({ length: 8 }, () => gate.admitAt(2000));
  assert.equal(resumed.filter((t) => t === 2000).length, 2);
  assert.equal(resumed.filter((t) => t > 2000).length, 6);
});

test('later responses can extend the cooldown but cannot shorten it', () => {
  const gate = new Gate(rate);
  gate.defer(0, 5000);
  gate.defer(100, 1000);
  assert.equal(gate.blockedUntil, 5000);
  gate.defer(1000, 8000);
  assert.equal(gate.blockedUntil, 9000);
  assert.throws(() => gate.defer(0, -1), RangeError);
  assert.throws(() => gate.defer(0, Infinity), RangeError);
});

test('two independent gates still exceed the one server allowance', () => {
  const result = simulate({ separateGates: true });
  assert.deepEqual([result.attempts, result.rejected, result.completed], [14, 6, 8]);
});

test('one batch retry allowance bounds extra calls across all eight workers', () => {
  const perWorker = simulate({ alwaysReject: true, maxAttempts: 3 });
  const shared = simulate({ alwaysReject: true, maxAttempts: 3, retryBudget: 4 });
  assert.deepEqual([perWorker.attempts, perWorker.abandoned], [24, 8]);
  assert.deepEqual([shared.attempts, shared.abandoned], [12, 8]);
  assert.equal(shared.completed, 0);
});

test('the observer preserves a long server delay and leaves the body readable', async () => {
  const response = new Response('{"detail":"Synthetic throttle"}', {
    status: 429, headers: { 'Retry-After': '30' },
  });
  let calls = 0;
  // The article's observer records feedback and admits; it does not retry.
  const fetchImpl = createFetch({ rate, retry: false, fetch: async () => { calls++; return response; } });
  const init = { headers: { 'X-API-Key': freshKey() } };
  assert.equal(await fetchImpl('https://example.invalid/snapshot', init), response);
  const [gate] = fetchImpl.stats().gates;
  assert.ok(gate.cooldownRemainingMs > 29_000 && gate.cooldownRemainingMs <= 30_000, `${gate.cooldownRemainingMs}`);
  assert.equal(gate.lastFeedback.retryAfterMs, 30_000);
  // A token is there, but the cooldown holds the next call: it never reaches fetch.
  await assert.rejects(
    fetchImpl('https://example.invalid/snapshot', { ...init, signal: AbortSignal.timeout(100) }),
    { name: 'TimeoutError' },
  );
  assert.equal(calls, 1);
  assert.equal((await response.json()).detail, 'Synthetic throttle');
});

test('missing or invalid delay headers do not become invented cooldowns', async () => {
  for (const raw of [null, 'later', '-1', '1.5']) {
    const headers = raw === null ? {} : { 'Retry-After': raw };
    const response = new Response(null, { status: 429, headers });
    const fetchImpl = createFetch({ rate, retry: false, fetch: async () => response });
    const init = { headers: { 'X-API-Key': freshKey() } };
    assert.equal(await fetchImpl('https://example.invalid/snapshot', init), response);
    const [gate] = fetchImpl.stats().gates;
    assert.equal(gate.cooldownUntil, 0, `Retry-After: ${raw}`);
    assert.equal(gate.throttled, 1);
    // The second token goes at once: nothing holds the gate.
    assert.equal(await fetchImpl('https://example.invalid/snapshot', init), response);
  }
});

test('an unrepresentable server delay fails instead of shortening the requested wait', async () => {
  const response = new Response('x'.repeat(100_000), {
    status: 429, headers: { 'Retry-After': '999999999999999999999' },
  });
  const fetchImpl = createFetch({ rate, retry: false, fetch: async () => response });
  await assert.rejects(
    fetchImpl('https://example.invalid/snapshot', { headers: { 'X-API-Key': freshKey() } }),
    { name: 'RangeError', message: /Retry-After exceeds the supported delay/ },
  );
  const [gate] = fetchImpl.stats().gates;
  assert.equal(gate.throttled, 1, 'the 429 is still counted');
  assert.equal(gate.lastFeedback.retryAfterMs, null);
  // The body nobody will read was cancelled, which frees its connection.
  await assert.rejects(response.text(), TypeError);
});

test("every combination of the article's options gives the article's own model's timeline", () => {
  let combinations = 0;
  for (const [shared, separateGates] of [[false, false], [true, false], [false, true]]) {
    for (const alwaysReject of [false, true]) {
      for (const maxAttempts of [1, 2, 3, 5, 10]) {
        for (const retryBudget of [null, 0, 4]) {
          const options = { shared, separateGates, alwaysReject, maxAttempts, retryBudget };
          const want = articleModel(options);
          const got = simulate(options);
          const name = JSON.stringify(options);
          for (const field of ['attempts', 'rejected', 'completed', 'abandoned', 'lastAttemptMs']) {
            assert.equal(got[field], want[field], `${name}: ${field}`);
          }
          assert.deepEqual(got.timeline, want.timeline, name);
          combinations++;
        }
      }
    }
  }
  assert.equal(combinations, 90);
});

test('processes sharing a store and threads sharing memory hold one allowance: no 429, the floor', () => {
  const allowance = { workers: 8, burst: 2, perSecond: 2 };
  const at = (r) => r.timeline.map((x) => x.at);
  const counts = (r) => [r.attempts, r.throttled, r.completed, r.abandoned];

  const threads = simulate({ ...allowance, threads: 2 });
  assert.deepEqual(counts(threads), [8, 0, 8, 0]);
  assert.equal(threads.lastAttemptMs, 3000);
  assert.deepEqual(at(threads), [0, 0, 500, 1000, 1500, 2000, 2500, 3000]);
  assert.deepEqual(threads.timeline.map((x) => x.worker), [0, 1, 2, 3, 4, 5, 6, 7]);

  // Admissions wait for the store (a round trip is 1 ms by default): the first two come 1 ms
  // after the article's times, the third 2 ms, the rest 3 ms (with 50 ms: 50, 100, 150).
  const fleet = simulate({ ...allowance, processes: 2 });
  assert.deepEqual(counts(fleet), [8, 0, 8, 0]);
  assert.equal(fleet.lastAttemptMs, 3003);
  assert.deepEqual(at(fleet), [1, 1, 502, 1003, 1503, 2003, 2503, 3003]);
  // An instant store gives the article's floor exactly.
  const instant = simulate({ ...allowance, processes: 2, storeLatencyMs: 0 });
  assert.deepEqual(counts(instant), [8, 0, 8, 0]);
  assert.deepEqual(at(instant), [0, 0, 500, 1000, 1500, 2000, 2500, 3000]);
  assert.equal(fleet.limiters, undefined);

  for (const options of [{ shared: true, processes: 2 }, { shared: true, threads: 2 }]) {
    const other = Object.keys(options)[1];
    assert.throws(() => simulate({ ...allowance, ...options }), (err) => err instanceof TypeError
      && err.message.includes('`shared`') && err.message.includes(`\`${other}\``), JSON.stringify(options));
  }
  assert.throws(() => simulate({ separateGates: 2, processes: 2 }), { name: 'TypeError', message: /`separateGates`.*`processes`/ });
});

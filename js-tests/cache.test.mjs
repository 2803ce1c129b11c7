// createFetch({ cache }) wired through the package, in one process (#36): identical GETs in
// flight share one request, fresh answers are served for their lifetime without a request,
// callers' aborts, bodies too big to keep, and the option's errors. The rules themselves are
// tested on the virtual clock (tests/cache.rs); these tests check the wiring against the fake API
// (a real node:http server on 127.0.0.1) and a stub inner fetch.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { randomUUID } from 'node:crypto';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import Redis from 'ioredis';
import { createFetch, redisStore, QuotaExhaustedError } from '../pkg/index.js';
import { startFakeOddsApi } from './support/fake-odds-api.mjs';
import { startRedis } from './support/redis-server.mjs';
import { group, processMember, threadMember } from './support/cache-group.mjs';

const run = promisify(execFile);
const MARK = 'x-odds-gate-cache';
const rate = { burst: 2, perSecond: 2 };
const marks = (responses) => responses.map((r) => r.headers.get(MARK));
// A credential of its own per test: one credential has one allowance in the process.
const key = () => ({ 'X-API-Key': randomUUID() });
const count = (list) => list.reduce((m, k) => ({ ...m, [k]: (m[k] ?? 0) + 1 }), {});

test('32 identical GETs at once make one request: the leader gets its own response, the others copies', async () => {
  const api = await startFakeOddsApi({ ...rate, ttlSeconds: 2 });
  try {
    const fetchImpl = createFetch({ rate, cache: true });
    const url = `${api.baseUrl}/events/e1/odds/snapshot`;
    const headers = key();
    const responses = await Promise.all(Array.from({ length: 32 }, () => fetchImpl(url, { headers })));
    const bodies = await Promise.all(responses.map((r) => r.text()));
    assert.equal(api.stats().attempts, 1);
    assert.deepEqual(count(marks(responses)), { null: 1, coalesced: 31 });
    assert.ok(responses.every((r) => r.status === 200));
    assert.equal(new Set(bodies).size, 1);
    assert.equal(JSON.parse(bodies[0]).ttl_seconds, 2);
    const { cache } = fetchImpl.stats();
    assert.deepEqual(cache, { entries: 1, bytes: Buffer.byteLength(bodies[0]), hits: 0, coalesced: 31, stale: 0, evictions: 0, requestsSaved: 31 });
  } finally {
    await api.close();
  }
});

test('a fresh answer is served for its ttl_seconds without a request, then asked for again', async () => {
  const api = await startFakeOddsApi({ ...rate, ttlSeconds: 1 });
  try {
    const fetchImpl = createFetch({ rate, cache: true });
    const url = `${api.baseUrl}/events/e1/odds/snapshot`;
    const init = { headers: key() };
    const first = await fetchImpl(url, init);
    const body = await first.text();
    // The copy of the answer is read after the caller has it: until then a call joins it.
    for (let i = 0; i < 100 && fetchImpl.stats().cache.entries === 0; i++) await new Promise((resolve) => setTimeout(resolve, 5));
    const hit = await fetchImpl(url, init);
    assert.equal(hit.headers.get(MARK), 'hit');
    assert.equal(hit.headers.get('age'), '0');
    assert.equal(await hit.text(), body);
    // A lane of the same wrapper reads the same cache.
    const lane = fetchImpl.lane({ name: 'live' });
    assert.equal((await lane(url, init)).headers.get(MARK), 'hit');
    assert.equal(api.stats().attempts, 1);
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const later = await fetchImpl(url, init);
    assert.equal(later.headers.get(MARK), null);
    assert.notEqual(await later.text(), body, 'a new snapshot');
    assert.equal(api.stats().attempts, 2);
    assert.equal(fetchImpl.stats().cache.hits, 2);
  } finally {
    await api.close();
  }
});

test('Cache-Control decides before ttl_seconds: no-store keeps nothing, max-age keeps longer', async () => {
  for (const [cacheControl, requests, answers, entries] of [['no-store', 3, [null, null, null], 0], ['max-age=60', 1, [null, 'hit', 'hit'], 1]]) {
    const api = await startFakeOddsApi({ ...rate, burst: 5, ttlSeconds: 0, cacheControl });
    try {
      const fetchImpl = createFetch({ rate: { burst: 5, perSecond: 2 }, cache: true });
      const headers = key();
      // The answer's copy is read after its caller has it, and a call made until then joins it
      // ('coalesced'): such a call settles only once the copy is read and kept or not, so the
      // call after it finds what the cache decided. Three answers that did not join: at most
      // one join after each of the first two.
      const seen = [];
      for (let calls = 0; seen.length < 3 && calls < 5; calls++) {
        const response = await fetchImpl(`${api.baseUrl}/events/e1/odds/snapshot`, { headers });
        await response.text();
        if (response.headers.get(MARK) !== 'coalesced') seen.push(response.headers.get(MARK));
      }
      assert.deepEqual(seen, answers, cacheControl);
      assert.equal(api.stats().attempts, requests, cacheControl);
      const { cache } = fetchImpl.stats();
      assert.deepEqual([cache.entries, cache.hits], [entries, 3 - requests], cacheControl);
    } finally {
      await api.close();
    }
  }
});

test('a credential never sees another credential\'s entry, an Accept another Accept\'s, and only GETs are cached', async () => {
  const sent = [];
  const fetch = async (input, init) => {
    sent.push(init.method ?? 'GET');
    return new Response('{"ttl_seconds":60}', { headers: { 'content-type': 'application/json' } });
  };
  const fetchImpl = createFetch({ rate: { burst: 10, perSecond: 10 }, fetch, cache: true });
  const url = 'http://127.0.0.1:9/v1/events/e1/odds/snapshot';
  const settled = async (response) => {
    await response.text();
    for (let i = 0; i < 100 && fetchImpl.stats().cache.entries < 1; i++) await new Promise((resolve) => setTimeout(resolve, 5));
    return response.headers.get(MARK);
  };
  const call = async (headers, method) => settled(await fetchImpl(url, { method, headers }));
  const [k1, k2] = [key(), key()];
  assert.equal(await call(k1), null);
  assert.equal(await call(k1), 'hit');
  assert.equal(await call(k2), null);
  assert.equal(await call({ ...k1, Accept: 'text/csv' }), null);
  assert.equal(await call(k1, 'DELETE'), null);
  assert.equal(await call(k1, 'DELETE'), null);
  assert.deepEqual(sent, ['GET', 'GET', 'GET', 'DELETE', 'DELETE']);
});

test('a caller that aborts leaves the others served; when all abort, the request is cancelled', async () => {
  const signals = [];
  let answer;
  const fetch = (input, init) => {
    signals.push(init.signal);
    return new Promise((resolve, reject) => {
      answer = () => resolve(new Response('{"ttl_seconds":60}', { headers: { 'content-type': 'application/json' } }));
      init.signal.addEventListener('abort', () => reject(init.signal.reason));
    });
  };
  const fetchImpl = createFetch({ rate: { burst: 10, perSecond: 10 }, fetch, cache: true });
  const url = 'http://127.0.0.1:9/v1/events/e1/odds/snapshot';
  const controllers = [0, 1, 2].map(() => new AbortController());
  const headers = key();
  const calls = controllers.map((c) => fetchImpl(url, { headers, signal: c.signal }));
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(signals.length, 1);
  controllers[0].abort(new Error('leader gone'));
  controllers[2].abort(new Error('third gone'));
  await assert.rejects(calls[0], /leader gone/);
  await assert.rejects(calls[2], /third gone/);
  assert.equal(signals[0].aborted, false, 'one caller still waits');
  answer();
  const served = await calls[1];
  assert.equal(served.headers.get(MARK), 'coalesced');
  assert.equal(await served.text(), '{"ttl_seconds":60}');
  // Every caller of another request aborts: it is cancelled.
  const other = 'http://127.0.0.1:9/v1/events/e2/odds/snapshot';
  const gone = [0, 1].map(() => new AbortController());
  const both = gone.map((c) => fetchImpl(other, { headers, signal: c.signal }));
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(signals.length, 2);
  gone.forEach((c) => c.abort(new Error('gone')));
  await Promise.all(both.map((p) => assert.rejects(p, /gone/)));
  assert.equal(signals[1].aborted, true);
});

test('a body larger than maxEntryBytes is not kept: the callers that joined its request send their own', async () => {
  const api = await startFakeOddsApi({ burst: 10, perSecond: 10, ttlSeconds: 60, snapshotBytes: 3_000 });
  try {
    const fetchImpl = createFetch({ rate: { burst: 10, perSecond: 10 }, cache: { maxEntryBytes: 1_000 } });
    const url = `${api.baseUrl}/events/e1/odds/snapshot`;
    const headers = key();
    const responses = await Promise.all(Array.from({ length: 4 }, () => fetchImpl(url, { headers })));
    const bodies = await Promise.all(responses.map((r) => r.text()));
    assert.ok(bodies.every((b) => b.length === 3_000));
    assert.deepEqual(marks(responses), [null, null, null, null]);
    assert.equal(api.stats().attempts, 4);
    assert.equal(fetchImpl.stats().cache.entries, 0);
  } finally {
    await api.close();
  }
});

test('callers that joined a request answered without a body (204) get their own 204', async () => {
  let sent = 0;
  const fetch = async () => {
    sent++;
    await new Promise((resolve) => setTimeout(resolve, 20));
    return new Response(null, { status: 204 });
  };
  const fetchImpl = createFetch({ rate: { burst: 10, perSecond: 10 }, fetch, cache: true });
  const headers = key();
  const responses = await Promise.all([0, 1, 2].map(() => fetchImpl('http://127.0.0.1:9/v1/events/e1/odds/snapshot', { headers })));
  assert.equal(sent, 1);
  assert.deepEqual(responses.map((r) => r.status), [204, 204, 204]);
  assert.deepEqual(marks(responses), [null, 'coalesced', 'coalesced']);
  assert.equal(responses[1].body, null);
});

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
// The copy of an answer is read after its caller has it: wait until the cache holds `n`.
const kept = async (fetchImpl, n) => {
  for (let i = 0; i < 200 && fetchImpl.stats().cache.entries < n; i++) await sleep(5);
  assert.equal(fetchImpl.stats().cache.entries, n);
};

test('stale instead of refused: once the quota is spent, a kept snapshot answers every GET of it, the others get the refusal', async () => {
  for (const typedErrors of [true, false]) {
    const api = await startFakeOddsApi({ ...rate, ttlSeconds: 1, creditLimit: 2 });
    try {
      const fetchImpl = createFetch({ rate, typedErrors, cache: true });
      const headers = key();
      const url = (n) => `${api.baseUrl}/events/e${n}/odds/snapshot`;
      const bodies = [await (await fetchImpl(url(1), { headers })).text(), await (await fetchImpl(url(2), { headers })).text()];
      await kept(fetchImpl, 2);
      await sleep(1_100); // past their ttl_seconds: no longer fresh
      // The credits are spent: the leaders' requests get the quota's 429, the gate finds the
      // quota spent and refuses them, and every caller waiting gets the stale copy instead.
      const first = await Promise.all([fetchImpl(url(1), { headers }), fetchImpl(url(1), { headers }), fetchImpl(url(2), { headers })]);
      assert.deepEqual(marks(first), ['stale', 'stale', 'stale'], `typedErrors ${typedErrors}`);
      assert.ok(first.every((r) => r.status === 200 && Number(r.headers.get('age')) >= 1));
      assert.deepEqual(await Promise.all(first.map((r) => r.text())), [bodies[0], bodies[0], bodies[1]]);
      const sent = api.stats().attempts;
      // From now on the gate knows: a kept snapshot is answered at once, without a request...
      const again = await fetchImpl(url(2), { headers });
      assert.equal(again.headers.get(MARK), 'stale');
      assert.equal(await again.text(), bodies[1]);
      // ...and one the cache never kept gets the refusal.
      if (typedErrors) await assert.rejects(fetchImpl(url(3), { headers }), QuotaExhaustedError);
      else {
        const refused = await fetchImpl(url(3), { headers });
        assert.equal(refused.status, 429);
        assert.equal(refused.headers.get('x-odds-gate'), 'quota-exhausted');
        assert.equal(refused.headers.get(MARK), null);
        await refused.text();
      }
      assert.equal(api.stats().attempts, sent, 'nothing more was sent');
      const { cache } = fetchImpl.stats();
      assert.equal(cache.stale, 4);
      assert.equal(cache.requestsSaved, cache.hits + cache.coalesced + 4);
    } finally {
      await api.close();
    }
  }
});

test('an error the inner fetch makes is never taken for the gate\'s refusal, whatever its name: no stale answer', async () => {
  const api = await startFakeOddsApi({ ...rate, ttlSeconds: 1 });
  try {
    // Once the entry is stale, the inner fetch fails with errors named as the gate's refusals.
    let failing = false;
    const named = [['QuotaExhaustedError', {}], ['GateAbandonedError', { reason: 'queue-wait' }]];
    const inner = (input, init) => {
      if (!failing) return fetch(input, init);
      const [name, fields] = named.shift();
      return Promise.reject(Object.assign(new Error('not the gate'), { name }, fields));
    };
    const fetchImpl = createFetch({ rate, typedErrors: false, retry: { maxAttempts: 1 }, cache: true, fetch: inner });
    const headers = key();
    const url = `${api.baseUrl}/events/e1/odds/snapshot`;
    await (await fetchImpl(url, { headers })).text();
    await kept(fetchImpl, 1);
    await sleep(1_100);
    failing = true;
    for (const name of ['QuotaExhaustedError', 'GateAbandonedError']) {
      await assert.rejects(fetchImpl(url, { headers }), (error) => error.name === name && error.message === 'not the gate');
    }
    assert.equal(fetchImpl.stats().cache.stale, 0);
  } finally {
    await api.close();
  }
});

test('stale instead of held: during a Retry-After cooldown a GET past its entry\'s ttl is answered at once, with no request', async () => {
  const api = await startFakeOddsApi({ ...rate, ttlSeconds: 1 });
  const stop = new AbortController();
  try {
    const fetchImpl = createFetch({ rate, cache: true });
    const headers = key();
    const url = (n) => `${api.baseUrl}/events/e${n}/odds/snapshot`;
    const body = await (await fetchImpl(url(1), { headers })).text();
    await kept(fetchImpl, 1);
    await sleep(1_100);
    // Another snapshot's answer is a 429 with Retry-After 30: the gate cools down for 30 s.
    api.inject({ status: 429, retryAfter: 30 });
    const cooling = fetchImpl(url(2), { headers, signal: stop.signal }).catch((error) => error);
    for (let i = 0; i < 200 && fetchImpl.stats().gates[0]?.throttled !== 1; i++) await sleep(5);
    assert.ok(fetchImpl.stats().gates[0].cooldownRemainingMs > 20_000);
    const sent = api.stats().attempts;
    const started = performance.now();
    const answer = await Promise.race([fetchImpl(url(1), { headers, signal: stop.signal }), sleep(3_000).then(() => 'held')]);
    const tookMs = performance.now() - started;
    assert.notEqual(answer, 'held', 'held for the cooldown');
    assert.equal(answer.headers.get(MARK), 'stale');
    assert.ok(Number(answer.headers.get('age')) >= 1);
    assert.equal(await answer.text(), body);
    assert.ok(tookMs < 1_000, `answered in ${tookMs} ms`);
    assert.equal(api.stats().attempts, sent, 'no request reached the API');
    assert.equal(fetchImpl.stats().cache.stale, 1);
    stop.abort();
    await cooling;
  } finally {
    stop.abort();
    await api.close();
  }
});

test('a credential never gets another credential\'s stale entry', async () => {
  const api = await startFakeOddsApi({ ...rate, ttlSeconds: 1, creditLimit: 1 });
  try {
    const fetchImpl = createFetch({ rate, typedErrors: true, cache: true });
    const [a, b] = [key(), key()];
    const url = (n) => `${api.baseUrl}/events/e${n}/odds/snapshot`;
    const body = await (await fetchImpl(url(1), { headers: a })).text();
    await (await fetchImpl(url(2), { headers: b })).text();
    await kept(fetchImpl, 2);
    await sleep(1_100);
    // Both keys' credits are spent. A's snapshot e1 is answered from A's entry...
    const stale = await fetchImpl(url(1), { headers: a });
    assert.equal(stale.headers.get(MARK), 'stale');
    assert.equal(await stale.text(), body);
    // ...B's e1 is refused: the same URL, but B never kept it.
    await assert.rejects(fetchImpl(url(1), { headers: b }), QuotaExhaustedError);
    await assert.rejects(fetchImpl(url(1), { headers: b }), QuotaExhaustedError);
    // B's own e2 is B's.
    assert.equal((await fetchImpl(url(2), { headers: b })).headers.get(MARK), 'stale');
    assert.equal(fetchImpl.stats().cache.stale, 2);
  } finally {
    await api.close();
  }
});

test('bad cache options get typed errors naming the option', () => {
  assert.throws(() => createFetch({ cache: 'yes' }), { name: 'TypeError', message: 'Expected `cache` to be a boolean or an object, got string' });
  assert.throws(() => createFetch({ cache: { maxBytes: 0 } }), { name: 'RangeError', message: '`cache.maxBytes` must be a finite number >= 1, got 0' });
  assert.throws(() => createFetch({ cache: { maxBytes: 10, maxEntryBytes: 20 } }), { name: 'RangeError', message: /`cache\.maxEntryBytes`/ });
  assert.throws(() => createFetch({ cache: { ttl: 5 } }), { name: 'TypeError', message: /^Unknown option `cache\.ttl`; known options: maxBytes, maxEntryBytes, defaultTtlMs, staleForMs/ });
  assert.throws(() => createFetch({ cache: { staleForMs: 'long' } }), { name: 'TypeError', message: 'Expected `cache.staleForMs` to be a number, got string' });
  assert.equal(createFetch({ cache: false }).stats().cache, undefined);
  assert.equal(createFetch().describe().cache, undefined);
  const { cache } = createFetch({ cache: { defaultTtlMs: 5_000, maxEntryBytes: 1_000 } }).describe();
  assert.match(cache, /else 5000 ms; bodies up to 1000 bytes kept, 16777216 in all/);
  assert.match(cache, /an entry answers for 600000 ms more the calls the gate would hold in a cooldown or refuse/);
  assert.match(createFetch({ cache: { staleForMs: 0 } }).describe().cache, /no stale answers/);
  // Who shares it: the threads by default, the fleet with a store, nobody with threads: false.
  assert.match(cache, /^one request per snapshot in this process, its worker threads included \(shared: threads\)/);
  assert.match(createFetch({ cache: true, threads: false }).describe().cache, /in this thread \(shared: no; threads: false\)/);
  const client = { scriptLoad: async () => '', evalSha: async () => [] };
  assert.match(createFetch({ cache: true, store: redisStore(client) }).describe().cache, /across the fleet sharing the store \(shared: the fleet\)/);
});

// 32 identical GETs over the group: one request; at once again: every one a hit; after the
// lifetime: one more; another key's identical GET: its own request.
async function sharesOneRequestPerSnapshot(g, api) {
  const url = `${api.baseUrl}/events/e1/odds/snapshot`;
  const [k1, k2] = [randomUUID(), randomUUID()];
  const round = async (apiKey) => {
    const replies = await g.all({ op: 'get', url, apiKey, n: 8 });
    assert.ok(replies.every((r) => r.statuses.every((s) => s === 200)), JSON.stringify(replies));
    return replies.flatMap((r) => r.marks);
  };
  const first = count(await round(k1));
  assert.equal(api.stats().attempts, 1);
  // The leader's own response is unmarked; every other caller's came from the cache.
  assert.equal(first.null, 1);
  assert.equal((first.hit ?? 0) + (first.coalesced ?? 0), 31);
  assert.deepEqual(count(await round(k1)), { hit: 32 });
  assert.equal(api.stats().attempts, 1);
  await sleep(1_100);
  assert.equal(count(await round(k1)).null, 1);
  assert.equal(api.stats().attempts, 2);
  assert.equal(count(await round(k2)).null, 1);
  assert.equal(api.stats().attempts, 3);
}

test('4 processes through Redis share one cache: 32 identical GETs make one request, entries expire, a key never sees another\'s', async () => {
  const redis = await startRedis();
  const api = await startFakeOddsApi({ ...rate, ttlSeconds: 1 });
  const g = await group(processMember, 4, { rate, redisPort: redis.port });
  const client = new Redis({ port: redis.port, host: '127.0.0.1' });
  try {
    await sharesOneRequestPerSnapshot(g, api);
    // Each key's entry in Redis, under the credential's hash tag, with no URL in its name,
    // kept for its lifetime (1 s) and staleForMs (10 min).
    const keys = await client.keys('og:*:cache:*');
    assert.equal(keys.length, 2);
    for (const k of keys) {
      assert.match(k, /^og:\{key:[0-9a-f]{32}\}:cache:[0-9a-f]{32}$/);
      const ttl = await client.pttl(k);
      assert.ok(ttl > 590_000 && ttl <= 601_000, `${k}: ${ttl} ms`);
    }
  } finally {
    await client.quit();
    await g.quit();
    await api.close();
    await redis.stop();
  }
});

test('4 processes through Redis: with Redis killed, every call is still answered', async () => {
  const redis = await startRedis();
  const api = await startFakeOddsApi({ ...rate, ttlSeconds: 1 });
  const g = await group(processMember, 4, { rate, redisPort: redis.port });
  try {
    await redis.kill();
    const replies = await g.all({ op: 'get', url: `${api.baseUrl}/events/e9/odds/snapshot`, apiKey: randomUUID(), n: 8 });
    assert.deepEqual(replies.map((r) => r.statuses.filter((s) => s === 200).length), [8, 8, 8, 8]);
    // Each process alone: its own request, its callers joined to it.
    assert.deepEqual(count(replies.flatMap((r) => r.marks)), { null: 4, coalesced: 28 });
  } finally {
    await g.quit();
    await api.close();
  }
});

test('4 worker threads share one cache: 32 identical GETs make one request, entries expire, a key never sees another\'s', async () => {
  const api = await startFakeOddsApi({ ...rate, ttlSeconds: 1 });
  const g = await group(threadMember, 4, { rate });
  try {
    await sharesOneRequestPerSnapshot(g, api);
  } finally {
    await g.quit();
    await api.close();
  }
});

test('threads on: what a thread holds of the threads\' entries counts against maxBytes: 32 URLs x 6 KB through 64 KiB', async () => {
  const api = await startFakeOddsApi({ burst: 64, perSecond: 64, ttlSeconds: 30, snapshotBytes: 6_000 });
  // A process of its own (this one's threads hold the entries of other tests' caches): threads
  // on, the default, so every answer is also posted to the threads and held there.
  const g = await group(processMember, 1, { rate: { burst: 64, perSecond: 64 }, cache: { maxBytes: 65_536 } });
  try {
    const apiKey = randomUUID();
    const pass = async () => {
      const got = [];
      for (let n = 0; n < 32; n++) {
        const [reply] = await g.all({ op: 'get', url: `${api.baseUrl}/events/e${n}/odds/snapshot`, apiKey, n: 1 });
        got.push(...reply.marks);
      }
      return got;
    };
    assert.deepEqual(count(await pass()), { null: 32 });
    await sleep(50);
    const later = count(await pass());
    // 10 bodies of 6 KB fit in 64 KiB: no more than that many answers can come from memory.
    assert.ok((later.hit ?? 0) + (later.coalesced ?? 0) <= 10, JSON.stringify(later));
    const [stats] = await g.all({ op: 'stats' });
    assert.ok(stats.entries <= 10 && stats.bytes <= 65_536, JSON.stringify(stats));
  } finally {
    await g.quit();
    await api.close();
  }
});

test('threads on: the threads\' entries count against maxBytes once for the whole process: 4 threads x 16 URLs x 6 KB through 64 KiB', async () => {
  const api = await startFakeOddsApi({ burst: 64, perSecond: 64, ttlSeconds: 30, snapshotBytes: 6_000 });
  try {
    const scenario = new URL('./support/ring-scenario.mjs', import.meta.url).pathname;
    const { stdout } = await run(process.execPath, [scenario, api.baseUrl, randomUUID()], { timeout: 60_000 });
    const { first, second, ring, bodiesMatch } = JSON.parse(stdout);
    assert.deepEqual(count(first), { null: 64 });
    // The ring is the one copy of the threads' entries: 64 KiB past its 64-byte head.
    assert.equal(ring, 64 + 65_536);
    // Thread 0 asks for its own 16 and then the others', each newest first: only what the
    // ring still holds answers, the newest 10 put (two rounds and a half of 4 threads). Of its
    // own, its last two or three; with copies of its own beside the threads' (before the
    // ring) it answered 10 of them, and 11 in all.
    const fromMemory = (list) => list.filter((m) => m === 'hit' || m === 'coalesced').length;
    const own = second.slice(0, 16);
    assert.deepEqual(own.slice(0, 2), ['hit', 'hit'], JSON.stringify(second));
    assert.ok(fromMemory(own) <= 3, `${fromMemory(own)} of its own answered from memory: ${JSON.stringify(second)}`);
    assert.ok(fromMemory(second) <= 10, `${fromMemory(second)} answered from memory: ${JSON.stringify(second)}`);
    assert.ok(bodiesMatch, 'every answer from memory is the body its URL was first fetched with');
  } finally {
    await api.close();
  }
});

test('a worker thread that starts late finds the entries the other threads already keep', async () => {
  const api = await startFakeOddsApi({ ...rate, ttlSeconds: 30 });
  const first = await group(threadMember, 1, { rate });
  try {
    const url = `${api.baseUrl}/events/e1/odds/snapshot`;
    const apiKey = randomUUID();
    const [a] = await first.all({ op: 'get', url, apiKey, n: 1 });
    assert.deepEqual(a.marks, [null]);
    await sleep(400); // long after the put: the bytes wait in the threads' ring, not in a message
    const late = await group(threadMember, 2, { rate });
    try {
      const replies = await late.all({ op: 'get', url, apiKey, n: 2 });
      assert.ok(replies.every((r) => r.statuses.every((s) => s === 200)), JSON.stringify(replies));
      assert.deepEqual(replies.map((r) => r.bodies), [a.bodies.concat(a.bodies), a.bodies.concat(a.bodies)]);
      assert.ok(replies.flatMap((r) => r.marks).every((m) => m === 'hit' || m === 'coalesced'), JSON.stringify(replies));
      assert.equal(api.stats().attempts, 1);
    } finally {
      await late.quit();
    }
  } finally {
    await first.quit();
    await api.close();
  }
});

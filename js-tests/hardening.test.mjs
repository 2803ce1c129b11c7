// Found by probing as a new user would: bodies that must be sent again, programming errors,
// credentials that cannot be sent, probes that must not flood /usage, a Redis that does not
// answer, and the module still serving after every kind of error.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { inspect } from 'node:util';
import { randomUUID } from 'node:crypto';
import { createFetch, redisStore, simulate, GateAbandonedError } from '../pkg/index.js';

const freshKey = () => `hard-${randomUUID()}`;
const fast = { baseMs: 1, capMs: 2 };
const busyThenOk = () => {
  let n = 0;
  return () => (++n === 1 ? new Response('busy', { status: 503 }) : new Response('{}'));
};

test('a POST Request with an Idempotency-Key sends the same body on every attempt', async () => {
  const bodies = [];
  const reply = busyThenOk();
  const fetchImpl = createFetch({
    rate: { burst: 5, perSecond: 100 }, retry: fast,
    fetch: async (input, init) => { bodies.push(await new Request(input, init).text()); return reply(); },
  });
  const request = new Request('http://127.0.0.1/bets', {
    method: 'POST', body: '{"stake":5}', headers: { 'X-API-Key': freshKey(), 'Idempotency-Key': 'bet-1' },
  });
  const response = await fetchImpl(request);
  assert.equal(response.status, 200);
  assert.deepEqual(bodies, ['{"stake":5}', '{"stake":5}']);
});

test('a stream body is teed, so a retry sends it again', async () => {
  const bodies = [];
  const reply = busyThenOk();
  const fetchImpl = createFetch({
    rate: { burst: 5, perSecond: 100 }, retry: fast,
    fetch: async (input, init) => { bodies.push(await new Response(init.body).text()); return reply(); },
  });
  const body = new ReadableStream({ start(c) { c.enqueue(new TextEncoder().encode('chunked')); c.close(); } });
  const response = await fetchImpl('http://127.0.0.1/x', { body, duplex: 'half', method: 'PUT', headers: { 'X-API-Key': freshKey() } });
  assert.equal(response.status, 200);
  assert.deepEqual(bodies, ['chunked', 'chunked']);
});

test('the last attempt a stream body can have sends it untouched: nothing is kept for a retry that cannot come', async () => {
  const tee = ReadableStream.prototype.tee;
  let tees = 0;
  ReadableStream.prototype.tee = function (...args) { tees++; return tee.apply(this, args); };
  try {
    const stream = () => new ReadableStream({ start(c) { c.enqueue(new TextEncoder().encode('chunked')); c.close(); } });
    const send = (fetchImpl) => fetchImpl('http://127.0.0.1/x', { body: stream(), duplex: 'half', method: 'PUT', headers: { 'X-API-Key': freshKey() } });
    const sent = [];
    const record = (reply) => async (input, init) => { sent.push(await new Response(init.body).text()); return reply(); };
    // Two attempts allowed: the first sends a copy and keeps one, the second (the last) sends the kept copy itself.
    const response = await send(createFetch({ rate: { burst: 5, perSecond: 100 }, retry: { ...fast, maxAttempts: 2 }, fetch: record(busyThenOk()) }));
    assert.equal(response.status, 200);
    assert.deepEqual(sent, ['chunked', 'chunked']);
    assert.equal(tees, 1);
    // One attempt allowed: the stream goes as it is.
    tees = 0;
    const once = await send(createFetch({ rate: { burst: 5, perSecond: 100 }, retry: { ...fast, maxAttempts: 1 }, fetch: record(() => new Response('{}')) }));
    assert.equal(once.status, 200);
    assert.deepEqual(sent, ['chunked', 'chunked', 'chunked']);
    assert.equal(tees, 0);
  } finally {
    ReadableStream.prototype.tee = tee;
  }
});

test('a body that can be read only once is sent once, and its response comes back as it is', async () => {
  let calls = 0;
  const fetchImpl = createFetch({
    rate: { burst: 5, perSecond: 100 }, retry: fast,
    fetch: async () => { calls++; return new Response('busy', { status: 503 }); },
  });
  async function* once() { yield new TextEncoder().encode('x'); }
  const response = await fetchImpl('http://127.0.0.1/x', { body: once(), duplex: 'half', method: 'PUT', headers: { 'X-API-Key': freshKey() } });
  assert.equal(response.status, 503);
  assert.equal(calls, 1);
});

test('a request the fetch refuses as written rejects at once with its TypeError, unretried', async () => {
  const fetchImpl = createFetch({ rate: { burst: 50, perSecond: 100 }, retry: { ...fast, baseMs: 1000, capMs: 1000 } });
  const key = freshKey();
  const cases = [
    [undefined, { headers: { 'X-API-Key': key } }],
    ['not a url', { headers: { 'X-API-Key': key } }],
    ['http://127.0.0.1:9/x', { headers: [['X-API-Key']] }],
    ['http://127.0.0.1:9/x', { headers: { 'X-API-Key': key, 'X-Note': 'a\r\nb' } }],
  ];
  for (const [input, init] of cases) {
    await assert.rejects(fetchImpl(input, init), (err) => err instanceof TypeError && !(err instanceof GateAbandonedError),
      inspect(init));
  }
  assert.equal(fetchImpl.stats().retries, 0, 'none retried as a network failure');
});

test('a credential with a line break is refused before it is sent, and no error repeats it', async () => {
  let calls = 0;
  const fetchImpl = createFetch({ rate: { burst: 5, perSecond: 5 }, fetch: async () => { calls++; return new Response('{}'); } });
  const secret = `sk-${randomUUID()}`;
  for (const header of ['X-API-Key', 'Authorization']) {
    await assert.rejects(fetchImpl('http://127.0.0.1/x', { headers: { [header]: `${secret}\r\nX-Evil: 1` } }), (err) => {
      assert.ok(err instanceof TypeError);
      assert.match(err.message, new RegExp(header));
      assert.ok(!inspect(err, { depth: 5 }).includes(secret), 'the key is not in the error');
      return true;
    });
  }
  assert.equal(calls, 0);
});

test('429s without Retry-After probe /usage once, then no faster than the backoff', async () => {
  let usage = 0;
  const started = performance.now();
  const fetchImpl = createFetch({
    rate: { burst: 20, perSecond: 200 }, retry: { baseMs: 20, capMs: 50, maxAttempts: 100, timeBudgetMs: 3_000 },
    fetch: async (input) => {
      if (String(input).endsWith('/usage')) { usage++; return new Response('no', { status: 500 }); }
      return new Response('{}', { status: 429 });
    },
  });
  const key = freshKey();
  await Promise.allSettled(Array.from({ length: 20 }, (_, i) =>
    fetchImpl(`http://127.0.0.1/v1/events/e${i}/odds/snapshot`, { headers: { 'X-API-Key': key } })));
  const seconds = (performance.now() - started) / 1000;
  // Spaced 2 s, then 4 s: at most three in the first 6 s, however many 429s (here thousands).
  assert.ok(usage >= 1 && usage <= 1 + Math.floor(seconds / 2), `${usage} probes in ${seconds.toFixed(1)} s`);
});

test('with Redis not answering, each process admits alone at its share of the allowance', async () => {
  let asked = 0;
  // A client whose calls never come back: every operation runs into the time limit.
  const hung = { evalsha: () => { asked++; return new Promise(() => {}); }, script: () => { asked++; return new Promise(() => {}); } };
  const events = [];
  const fetchImpl = createFetch({
    rate: { burst: 4, perSecond: 20 }, retry: false, fetch: async () => new Response('{}'),
    store: redisStore(hung, { timeoutMs: 100, retryMs: 500 }), onEvent: (e) => events.push(e.type),
  });
  const key = freshKey();
  const started = performance.now();
  const times = [];
  await Promise.all(Array.from({ length: 12 }, () =>
    fetchImpl('http://127.0.0.1/x', { headers: { 'X-API-Key': key } }).then(() => times.push(performance.now() - started))));
  // A quarter of 20/s is one every 200 ms, after the first time limit (100 ms): twelve in about
  // 2.3 s. Waiting for Redis each time would take far longer.
  const last = Math.max(...times);
  assert.ok(last < 6_000, `twelve calls took ${last.toFixed(0)} ms`);
  assert.ok(last >= 100 + 11 * 190, `twelve calls in ${last.toFixed(0)} ms: faster than the share`);
  assert.ok(events.includes('store-down'));
  assert.ok(asked >= 2, 'Redis is asked again now and then');
});

test('after every kind of error, the module keeps serving calls', async () => {
  const throwsTyped = (f) => assert.throws(f, (e) => e instanceof TypeError || e instanceof RangeError);
  throwsTyped(() => createFetch({ rate: 'fast' }));
  throwsTyped(() => createFetch({ rate: { burst: -1, perSecond: 1 } }));
  throwsTyped(() => createFetch({ rate: { burst: 1, perSecond: 1 }, retry: { statuses: [404] } }));
  throwsTyped(() => createFetch({ rate: { burst: 1, perSecond: 1 } }).batch({ deadlineMs: 'soon' }));
  throwsTyped(() => simulate({ workers: 0 }));
  throwsTyped(() => redisStore({}));
  const once = createFetch({
    rate: { burst: 1, perSecond: 1 },
    fetch: async () => new Response(null, { status: 429, headers: { 'Retry-After': '99999999999999999999' } }),
  });
  await assert.rejects(once('http://127.0.0.1/x', { headers: { 'X-API-Key': freshKey() } }), RangeError);
  await assert.rejects(once('http://127.0.0.1/x', { headers: { 'X-API-Key': freshKey() }, signal: AbortSignal.abort() }), { name: 'AbortError' });
  await assert.rejects(once('http://127.0.0.1/x', { headers: { 'X-API-Key': 'a\nb' } }), TypeError);
  // Still serving: a plain call, a simulation.
  const fine = createFetch({ rate: { burst: 1, perSecond: 1 }, fetch: async () => new Response('{}') });
  assert.equal((await fine('http://127.0.0.1/x', { headers: { 'X-API-Key': freshKey() } })).status, 200);
  assert.equal(simulate({ shared: true }).attempts, 8);
});

test('idle gates are forgotten as new keys come, and their figures stay in the totals', async () => {
  const fetchImpl = createFetch({ rate: { burst: 1, perSecond: 1000 }, fetch: async () => new Response('{}') });
  const wave = (n, label) => Promise.all(Array.from({ length: n }, (_, i) =>
    fetchImpl('http://127.0.0.1/x', { headers: { 'X-API-Key': `wave-${label}-${i}-${randomUUID()}` } })));
  await wave(200, 'a');
  assert.equal(fetchImpl.stats().gates.length, 200);
  await new Promise((r) => setTimeout(r, 50)); // every bucket refills: the first wave is idle
  await wave(200, 'b');
  const stats = fetchImpl.stats();
  // Each new gate looks at two old ones: the second wave forgot the first.
  assert.ok(stats.gates.length <= 200 + 20, `${stats.gates.length} gates kept`);
  assert.equal(stats.admitted, 400, 'forgotten gates still count in the totals');
});

test('with no new keys coming, idle gates are forgotten by the sweep every 10 s', async () => {
  const fetchImpl = createFetch({ rate: { burst: 1, perSecond: 1000 }, fetch: async () => new Response('{}') });
  await Promise.all(Array.from({ length: 50 }, (_, i) =>
    fetchImpl('http://127.0.0.1/x', { headers: { 'X-API-Key': `swept-${i}-${randomUUID()}` } })));
  assert.equal(fetchImpl.stats().gates.length, 50);
  // Wiring only (the timing is the core's, on the virtual clock): a sweep comes within 10 s and
  // looks at every gate while there are fewer than a few thousand. A wide bound.
  const started = performance.now();
  while (fetchImpl.stats().gates.length > 0 && performance.now() - started < 30_000) {
    await new Promise((r) => setTimeout(r, 250));
  }
  const stats = fetchImpl.stats();
  assert.equal(stats.gates.length, 0, 'no sweep forgot the idle gates');
  assert.equal(stats.admitted, 50, 'their figures stay in the totals');
});

test('a count too large for a JavaScript number blanks no figure: it reads as Number.MAX_SAFE_INTEGER', async () => {
  const huge = { 'Retry-After': '0', 'X-RateLimit-Limit': '9007199254740993', 'X-RateLimit-Remaining': '18446744073709551616' };
  for (const options of [{ rate: { burst: 5, perSecond: 100 } }, {}]) {
    const fetchImpl = createFetch({
      ...options, retry: false,
      fetch: async (input) => String(input).includes('/huge')
        ? new Response('{}', { status: 429, headers: huge })
        : new Response('{}'),
    });
    const [bad, good] = [freshKey(), freshKey()];
    assert.equal((await fetchImpl('http://127.0.0.1/huge', { headers: { 'X-API-Key': bad } })).status, 429);
    assert.equal((await fetchImpl('http://127.0.0.1/fine', { headers: { 'X-API-Key': good } })).status, 200);
    const stats = fetchImpl.stats();
    assert.equal(typeof stats, 'object', inspect(options));
    assert.notEqual(stats, null, inspect(options));
    assert.equal(stats.gates.length, 2, inspect(options));
    const feedback = stats.gates.map((g) => g.lastFeedback).find((f) => f?.limit != null);
    assert.equal(feedback.limit, Number.MAX_SAFE_INTEGER);
    assert.equal(feedback.remaining, Number.MAX_SAFE_INTEGER);
    assert.equal(typeof fetchImpl.describe(), 'object');
  }
});

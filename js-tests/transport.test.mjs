// createFetch as the SDK sees it: a drop-in fetchImpl in front of a real local server.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { randomUUID } from 'node:crypto';
import { createFetch, GateAbandonedError } from '../pkg/index.js';
import { startFakeOddsApi } from './support/fake-odds-api.mjs';
import { OddsApiClient } from './support/sdk-client.mjs';
import { runWorkers } from './support/workers.mjs';

const rate = { burst: 2, perSecond: 2 };
const freshKey = () => `test-${randomUUID()}`;
const ok = async () => new Response('{}', { status: 200 });
let api;

before(async () => { api = await startFakeOddsApi({ burst: 2, perSecond: 2, retryAfterSeconds: 1 }); });
after(() => api.close());

test('returns the very same Response, body unread, through the SDK-shaped client', async () => {
  let returned;
  const fetchImpl = createFetch({ rate, fetch: async (...args) => (returned = await fetch(...args)) });
  const apiKey = freshKey();
  const response = await fetchImpl(`${api.baseUrl}/events/e1/odds/snapshot`, { headers: { 'X-API-Key': apiKey } });
  assert.equal(response, returned);
  assert.equal(response.bodyUsed, false);
  assert.equal((await response.json()).event_id, 'e1');
  const client = new OddsApiClient({ apiKey, baseUrl: api.baseUrl, fetchImpl });
  assert.equal((await client.getOddsSnapshot('e2')).event_id, 'e2');
});

test('eight workers: plain fetch collides, the shared gate does not', async () => {
  const apiKey = freshKey();
  api.reset();
  const plain = await runWorkers({ fetchImpl: fetch, baseUrl: api.baseUrl, apiKey });
  const plainServer = api.stats();
  api.reset();
  const fetchImpl = createFetch({ rate });
  const gated = await runWorkers({ fetchImpl, baseUrl: api.baseUrl, apiKey });
  const gatedServer = api.stats();
  console.log(`plain: ${plainServer.attempts} attempts, ${plainServer.throttled} 429s; ` +
    `gated: ${gatedServer.attempts} attempts, ${gatedServer.throttled} 429s, ${gated.wallMs} ms`);
  assert.equal(plain.completed, 8);
  assert.ok(plainServer.attempts >= 20, `plain made ${plainServer.attempts} attempts`);
  assert.equal(gated.completed, 8);
  // The refill after the burst is timed from its first response, as the server's is from its
  // arrival: at the exact allowance, no 429 at all.
  assert.deepEqual([gatedServer.attempts, gatedServer.throttled], [8, 0]);
  assert.equal(fetchImpl.stats().throttled, 0);
});

test('two API keys keep independent allowances', async () => {
  api.reset();
  const fetchImpl = createFetch({ rate });
  const keys = [freshKey(), freshKey()];
  const calls = keys.flatMap((key) => [1, 2].map((n) =>
    fetchImpl(`${api.baseUrl}/events/${n}/odds/snapshot`, { headers: { 'X-API-Key': key } })));
  // Each key's burst of two goes at once; nobody waits for the other key's tokens.
  assert.equal(fetchImpl.stats().waiting, 0);
  const statuses = (await Promise.all(calls)).map((r) => r.status);
  assert.deepEqual(statuses, [200, 200, 200, 200]);
  assert.equal(fetchImpl.stats().gates.length, 2);
  assert.equal(api.stats().throttled, 0);
});

test('wrappers with the same allowance share one gate per credential; a different allowance is refused', async () => {
  const key = freshKey();
  const init = { headers: { 'X-API-Key': key } };
  const a = createFetch({ rate: { burst: 1, perSecond: 1 }, fetch: ok });
  const b = createFetch({ rate: { burst: 1, perSecond: 1 }, fetch: ok });
  await a('http://127.0.0.1/x', init);
  const waiting = b('http://127.0.0.1/x', { ...init, signal: AbortSignal.timeout(50) });
  assert.equal(b.stats().waiting, 1, 'b waits for the token a spent');
  await assert.rejects(waiting, { name: 'TimeoutError' });
  const c = createFetch({ rate: { burst: 5, perSecond: 1 }, fetch: ok });
  await assert.rejects(c('http://127.0.0.1/x', init), (err) => {
    assert.equal(err.name, 'RangeError');
    assert.match(err.message, /already enforces \{ burst: 1, perSecond: 1 \}/);
    assert.ok(!err.message.includes(key));
    return true;
  });
});

test('credentials are read from every header shape, case-insensitively, and from a Request', async () => {
  const key = freshKey();
  // A slow refill: a gate whose bucket is full again is idle, and forgotten when the next new
  // gate is made, which a loaded machine could reach between these calls.
  const fetchImpl = createFetch({ rate: { burst: 10, perSecond: 0.01 }, fetch: ok });
  await fetchImpl('http://127.0.0.1/x', { headers: { 'x-API-key': key } });
  await fetchImpl('http://127.0.0.1/x', { headers: new Headers({ 'X-Api-Key': key }) });
  await fetchImpl('http://127.0.0.1/x', { headers: [['X-API-KEY', key]] });
  await fetchImpl(new Request('http://127.0.0.1/x', { headers: { 'X-API-Key': key } }));
  await fetchImpl('http://127.0.0.1/x', { headers: { Authorization: `Bearer ${key}` } });
  await fetchImpl('http://127.0.0.1/x');
  const gates = fetchImpl.stats().gates;
  assert.deepEqual(gates.map((g) => g.admitted).sort(), [1, 1, 4]);
  assert.ok(gates.some((g) => g.scope === 'anonymous'));
  assert.ok(!JSON.stringify(gates).includes(key), 'the raw key is never kept');
});

test('10,000 concurrent calls all settle, in FIFO order, with one timer', async () => {
  const n = 10_000;
  const order = [];
  const fetchImpl = createFetch({
    rate: { burst: 10, perSecond: 20_000 },
    fetch: async (url) => { order.push(Number(url.slice(url.lastIndexOf('/') + 1))); return new Response(null); },
  });
  const init = { headers: { 'X-API-Key': freshKey() } };
  const timeouts = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
  const before = timeouts();
  const calls = Array.from({ length: n }, (_, i) => fetchImpl(`http://127.0.0.1/${i}`, init));
  // The burst went at once; tokens refilled while the loop ran let a few more through.
  assert.ok(fetchImpl.stats().waiting > n / 2, `${fetchImpl.stats().waiting} waiting`);
  // One timer for the whole queue, and one for the timeouts of every attempt in flight.
  assert.equal(timeouts() - before, 2, 'one timer for the queue, one for attempts in flight');
  const settled = await Promise.allSettled(calls);
  assert.equal(settled.filter((s) => s.status === 'fulfilled').length, n);
  assert.deepEqual(order, Array.from({ length: n }, (_, i) => i));
  const [gate] = fetchImpl.stats().gates;
  assert.equal(gate.admitted, n);
  assert.equal(gate.waiting, 0);
  assert.equal(gate.timerArmed, false);
  assert.equal(timeouts(), before, 'no timer left once nobody waits');
  console.log(`10,000 calls: ${gate.wakeups} wake-ups, peak queue ${gate.peakWaiting}`);
});

test('an already-aborted signal rejects before admission and spends no token', async () => {
  let calls = 0;
  const fetchImpl = createFetch({ rate: { burst: 1, perSecond: 1 }, fetch: async () => { calls++; return new Response(null); } });
  const key = freshKey();
  await assert.rejects(
    fetchImpl('http://127.0.0.1/x', { headers: { 'X-API-Key': key }, signal: AbortSignal.abort() }),
    { name: 'AbortError' },
  );
  assert.equal(calls, 0);
  // The one token is still there.
  await fetchImpl('http://127.0.0.1/x', { headers: { 'X-API-Key': key } });
  assert.equal(fetchImpl.stats().gates[0].admitted, 1);
});

test('aborting a waiting call rejects it at once, spends no token, and keeps the queue in order', async () => {
  const order = [];
  const fetchImpl = createFetch({
    rate: { burst: 1, perSecond: 20 },
    fetch: async (url) => { order.push(url); return new Response(null); },
  });
  const headers = { 'X-API-Key': freshKey() };
  const first = fetchImpl('http://127.0.0.1/1', { headers });
  const controller = new AbortController();
  const second = fetchImpl('http://127.0.0.1/2', { headers, signal: controller.signal });
  const third = fetchImpl('http://127.0.0.1/3', { headers });
  assert.equal(fetchImpl.stats().waiting, 2);
  const reason = new Error('caller gave up');
  controller.abort(reason);
  await assert.rejects(second, (err) => err === reason);
  assert.equal(fetchImpl.stats().waiting, 1);
  await Promise.all([first, third]);
  assert.deepEqual(order, ['http://127.0.0.1/1', 'http://127.0.0.1/3']);
  const [gate] = fetchImpl.stats().gates;
  assert.deepEqual([gate.admitted, gate.cancelled, gate.timerArmed], [2, 1, false]);
});

test('aborting the last waiter leaves no timer behind', async () => {
  // retry: false puts no deadline on the wait, so only the abort ends it.
  const fetchImpl = createFetch({ rate: { burst: 1, perSecond: 0.01 }, retry: false, fetch: ok });
  const headers = { 'X-API-Key': freshKey() };
  await fetchImpl('http://127.0.0.1/1', { headers });
  const controller = new AbortController();
  const waiting = fetchImpl('http://127.0.0.1/2', { headers, signal: controller.signal });
  assert.equal(fetchImpl.stats().gates[0].timerArmed, true);
  controller.abort();
  await assert.rejects(waiting, { name: 'AbortError' });
  assert.equal(fetchImpl.stats().gates[0].timerArmed, false);
});

test('without retries, a rejection of the inner fetch reaches the caller unchanged', async () => {
  const failure = new TypeError('fetch failed');
  const fetchImpl = createFetch({ rate, retry: false, fetch: async () => { throw failure; } });
  await assert.rejects(fetchImpl('http://127.0.0.1/x', { headers: { 'X-API-Key': freshKey() } }), (err) => err === failure);
  const throwsSync = createFetch({ rate, retry: false, fetch: () => { throw failure; } });
  await assert.rejects(throwsSync('http://127.0.0.1/x', { headers: { 'X-API-Key': freshKey() } }), (err) => err === failure);
});

test('the global fetch is looked up at call time', async () => {
  const fetchImpl = createFetch({ rate });
  const original = globalThis.fetch;
  const marker = new Response('stubbed');
  globalThis.fetch = async () => marker;
  try {
    assert.equal(await fetchImpl('http://127.0.0.1/x', { headers: { 'X-API-Key': freshKey() } }), marker);
  } finally {
    globalThis.fetch = original;
  }
});

test('bad options are refused with a typed error that names the field', () => {
  const cases = [
    [null, TypeError, /options/],
    [{ rate: 'fast' }, TypeError, /`rate` to be 'auto' or \{ burst, perSecond \}/],
    [{ rate: 2 }, TypeError, /`rate`/],
    [{ rate: { burst: 2, perSecond: 2, learn: 'yes' } }, TypeError, /rate\.learn/],
    [{ rate: { burst: 2 } }, TypeError, /rate\.perSecond/],
    [{ rate: { burst: '2', perSecond: 2 } }, TypeError, /rate\.burst/],
    [{ rate: { burst: 0, perSecond: 2 } }, RangeError, /rate\.burst/],
    [{ rate: { burst: -1, perSecond: 2 } }, RangeError, /rate\.burst/],
    [{ rate: { burst: 2, perSecond: 0 } }, RangeError, /rate\.perSecond/],
    [{ rate: { burst: 2, perSecond: NaN } }, RangeError, /rate\.perSecond/],
    [{ rate: { burst: Infinity, perSecond: 2 } }, RangeError, /rate\.burst/],
    [{ rate, fetch: 'fetch' }, TypeError, /`fetch`/],
    [{ rate, retry: 3 }, TypeError, /`retry`/],
    [{ rate, retry: { maxAttempts: 0 } }, RangeError, /retry\.maxAttempts/],
    [{ rate, retry: { baseMs: -1 } }, RangeError, /retry\.baseMs/],
    [{ rate, retry: { baseMs: 500, capMs: 100 } }, RangeError, /retry\.capMs/],
    [{ rate, retry: { statuses: [404] } }, RangeError, /retry\.statuses/],
    [{ rate, retry: { statuses: [429, '503'] } }, TypeError, /retry\.statuses/],
    [{ rate, retry: { budget: { capacity: 0 } } }, RangeError, /retry\.budget\.capacity/],
    [{ rate, retry: { maxAtempts: 2 } }, TypeError, /retry\.maxAtempts/],
    [{ rate, onEvent: 'log' }, TypeError, /`onEvent`/],
    [{ rate, retires: 3 }, TypeError, /options\.retires/],
  ];
  for (const [options, type, message] of cases) {
    assert.throws(() => createFetch(options), (err) => err instanceof type && message.test(err.message),
      `${JSON.stringify(options)} should throw ${type.name} ${message}`);
  }
  for (const retry of [false, true, undefined, {}]) {
    assert.equal(typeof createFetch({ rate, retry }), 'function');
  }
});

test('describe() summarises the configuration as an object and as text', () => {
  const summary = createFetch({ rate }).describe();
  assert.deepEqual(summary.rate, rate);
  assert.match(summary.store, /shared by every thread of the process.*one allowance per process/);
  assert.match(summary.text, /burst 2 at 2 per second/);
  for (const needle of ['429, 502, 503, 504', 'full jitter', '2000 ms', '60000 ms', '3 attempts', '60000 ms of retrying per call', '500 tokens', 'waits its turn']) {
    assert.ok(summary.text.includes(needle), `summary mentions ${needle}:\n${summary.text}`);
  }
  assert.match(createFetch({ rate, retry: false }).describe().retry, /^off/);
});

test('5,000 waiters sharing one AbortSignal are aborted at once, with one listener', async () => {
  const n = 5_000;
  const fetchImpl = createFetch({ rate: { burst: 1, perSecond: 1 }, retry: false, fetch: ok });
  const controller = new AbortController();
  const headers = { 'X-API-Key': freshKey() };
  const warnings = [];
  const onWarning = (w) => warnings.push(w.name);
  process.on('warning', onWarning);
  const calls = [];
  for (let i = 0; i < n; i++) calls.push(fetchImpl('http://127.0.0.1/x', { headers, signal: controller.signal }));
  controller.abort();
  const settled = await Promise.allSettled(calls);
  process.off('warning', onWarning);
  assert.equal(settled.filter((s) => s.status === 'rejected' && s.reason.name === 'AbortError').length, n - 1);
  assert.deepEqual(warnings, [], 'no MaxListenersExceededWarning: one listener for the whole queue');
  const [gate] = fetchImpl.stats().gates;
  assert.deepEqual([gate.waiting, gate.cancelled, gate.timerArmed], [0, n - 1, false]);
});

test('attempts in flight share one timer, and each still times out on time', async () => {
  // An inner fetch that never answers: only its signal ends it.
  const hang = (url, init) => new Promise((_, reject) => {
    init.signal.addEventListener('abort', () => reject(init.signal.reason), { once: true });
  });
  const timeouts = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
  const retry = { maxAttempts: 1 };
  const slow = createFetch({ rate: { burst: 100, perSecond: 100 }, retry: { ...retry, attemptTimeoutMs: 400 }, fetch: hang });
  const quick = createFetch({ rate: { burst: 100, perSecond: 100 }, retry: { ...retry, attemptTimeoutMs: 100 }, fetch: hang });
  const before = timeouts();
  const started = performance.now();
  const settledAt = (p) => p.then(() => assert.fail('a hung attempt resolved'), (err) => ({ err, ms: performance.now() - started }));
  const slowCalls = Array.from({ length: 50 }, () => settledAt(slow('http://127.0.0.1/x', { headers: { 'X-API-Key': freshKey() } })));
  assert.equal(timeouts() - before, 1, 'one timer for 50 attempts in flight');
  // A shorter timeout started later moves the one timer earlier.
  const quickCall = settledAt(quick('http://127.0.0.1/x', { headers: { 'X-API-Key': freshKey() } }));
  assert.equal(timeouts() - before, 1, 'still one timer');
  const q = await quickCall;
  // Abandoned as fetch with a timeout signal would have: with the attempt's TimeoutError.
  assert.equal(q.err.name, 'TimeoutError');
  assert.ok(q.ms >= 95, `the 100 ms attempt ended after ${q.ms.toFixed(0)} ms`);
  const slowEnds = await Promise.all(slowCalls);
  for (const s of slowEnds) {
    assert.equal(s.err.name, 'TimeoutError');
    // Never early; late only by what a loaded machine does to timers (a timer that missed its
    // turn and waited for another would be seconds late).
    assert.ok(s.ms >= 395 && s.ms < 2_000, `a 400 ms attempt ended after ${s.ms.toFixed(0)} ms`);
  }
  // The shorter timeout, set later, fired first: it moved the one timer earlier.
  assert.ok(q.ms < Math.min(...slowEnds.map((s) => s.ms)), 'the 100 ms attempt ended before the 400 ms ones');
  assert.equal(timeouts(), before, 'no timer holds the process once nothing is in flight');

  // A call that waited in the queue (the bindings' path) and one admitted at once (the package's
  // fast path) share that one timer too.
  const quickOrHang = (url, init) => (url.endsWith('quick') ? Promise.resolve(new Response('{}')) : hang(url, init));
  const paced = createFetch({ rate: { burst: 2, perSecond: 1000 }, retry: { ...retry, attemptTimeoutMs: 400 }, fetch: quickOrHang });
  const headers = { 'X-API-Key': freshKey() };
  await Promise.all([
    paced('http://127.0.0.1/quick', { headers }), // these two take the burst
    paced('http://127.0.0.1/quick', { headers }),
    settledAt(paced('http://127.0.0.1/waited', { headers })), // waits for the next, then hangs
    new Promise((r) => setTimeout(r, 50)).then(() => {
      const fast = settledAt(paced('http://127.0.0.1/at-once', { headers })); // a full bucket again
      const [gate] = paced.stats().gates;
      assert.equal(gate.admitted, 4, 'all four admitted');
      assert.equal(gate.waiting, 0, 'nobody waits in the queue');
      assert.equal(timeouts() - before, 1, 'one timer for the attempts of both paths');
      return fast;
    }),
  ]);
});

test('maxWaiting and maxWaitMs refuse at once, with their reasons, and spend no token', async () => {
  let calls = 0;
  const inner = async () => { calls++; return new Response('{}'); };
  const headers = { 'X-API-Key': freshKey() };
  const full = createFetch({ rate: { burst: 1, perSecond: 1 }, fetch: inner, maxWaiting: 1 });
  const first = full('http://127.0.0.1/a', { headers }); // admitted
  const second = full('http://127.0.0.1/b', { headers }); // waits: the queue holds one
  await assert.rejects(full('http://127.0.0.1/c', { headers }),
    (err) => err instanceof GateAbandonedError && err.reason === 'queue-full' && err.attempts === 0);
  await Promise.all([first, second]);
  assert.equal(calls, 2);
  assert.equal(full.stats().gates[0].abandoned['queue-full'], 1);

  const quick = createFetch({ rate: { burst: 1, perSecond: 0.5 }, fetch: inner, maxWaitMs: 100 });
  const key = { 'X-API-Key': freshKey() };
  await quick('http://127.0.0.1/d', { headers: key });
  // The next token is 2 s away: more than the 100 ms this wrapper waits.
  await assert.rejects(quick('http://127.0.0.1/e', { headers: key }),
    (err) => err instanceof GateAbandonedError && err.reason === 'queue-wait' && err.attempts === 0);
  assert.equal(calls, 3);
  assert.match(quick.describe().waiting, /more than 100 ms is refused at once/);
});

test('a Retry-After too large to hold fails the call, holds the gate, and clearCooldown ends it', async () => {
  let calls = 0;
  const inner = async () => (++calls === 1
    ? new Response('{"detail":"slow down"}', { status: 429, headers: { 'Retry-After': '99999999999999999999' } })
    : new Response('{}'));
  const fetchImpl = createFetch({ rate: { burst: 5, perSecond: 5 }, fetch: inner });
  const headers = { 'X-API-Key': freshKey() };
  await assert.rejects(fetchImpl('http://127.0.0.1/a', { headers }), RangeError);
  const [gate] = fetchImpl.stats().gates;
  assert.ok(gate.cooldownRemainingMs >= 2 ** 53 - 1e9, `${gate.cooldownRemainingMs} ms of cooldown`);
  const held = fetchImpl('http://127.0.0.1/b', { headers });
  assert.equal(fetchImpl.stats().gates[0].waiting, 1, 'the next call waits: never a shorter wait');
  fetchImpl.clearCooldown();
  assert.equal((await held).status, 200);
  assert.equal(calls, 2);
});

test('feedback headers are read from a Headers in one pass and from any object with get()', async () => {
  const names = { 'Retry-After': '7', 'x-RateLimit-Limit': '30', 'X-RATELIMIT-REMAINING': '0', 'X-RateLimit-Bucket': 'odds', 'Content-Type': 'text/plain' };
  const lower = Object.fromEntries(Object.entries(names).map(([k, v]) => [k.toLowerCase(), v]));
  const shapes = {
    Headers: () => new Response('{}', { status: 429, headers: names }),
    // A response from elsewhere (another fetch, a test double): headers only answer get(), as
    // fetch's contract says, case-insensitively.
    'get() only': () => ({ status: 429, ok: false, headers: { get: (name) => lower[name.toLowerCase()] ?? null } }),
  };
  for (const [shape, make] of Object.entries(shapes)) {
    const fetchImpl = createFetch({ rate: { burst: 5, perSecond: 5 }, retry: false, fetch: async () => make() });
    const response = await fetchImpl('http://127.0.0.1/x', { headers: { 'X-API-Key': freshKey() } });
    assert.equal(response.status, 429, shape);
    const [gate] = fetchImpl.stats().gates;
    assert.deepEqual(gate.lastFeedback, { retryAfterMs: 7000, limit: 30, remaining: 0, resetMs: null, limiter: 'odds' }, shape);
    assert.ok(gate.cooldownRemainingMs > 6000, `${shape}: ${gate.cooldownRemainingMs} ms of cooldown`);
    fetchImpl.clearCooldown();
  }
  // No header value holds a NUL: one that does is left out, and smuggles nothing in.
  const odd = { ...lower, 'x-ratelimit-bucket': 'odds\0B99' };
  const fetchImpl = createFetch({ rate: { burst: 5, perSecond: 5 }, retry: false, fetch: async () => ({ status: 429, headers: { get: (n) => odd[n] ?? null } }) });
  await fetchImpl('http://127.0.0.1/x', { headers: { 'X-API-Key': freshKey() } });
  const { limit, limiter } = fetchImpl.stats().gates[0].lastFeedback;
  assert.deepEqual({ limit, limiter }, { limit: 30, limiter: null });
  fetchImpl.clearCooldown();
});

test('a response whose headers or status throw when read still settles its call, and the gate goes on', async () => {
  const throwing = (what) => Object.defineProperty({ ok: true, status: 200, headers: new Headers() }, what, { get() { throw new Error(`no ${what}`); } });
  for (const what of ['headers', 'status']) {
    const made = [];
    const fetchImpl = createFetch({ rate: { burst: 1, perSecond: 1000 }, fetch: async () => { made.push(throwing(what)); return made.at(-1); } });
    const headers = { 'X-API-Key': freshKey() };
    for (let i = 0; i < 3; i++) assert.equal(await fetchImpl('http://127.0.0.1/x', { headers }), made[i], `${what}: call ${i + 1}`);
    assert.equal(fetchImpl.stats().gates[0].waiting, 0, what);
  }
});

test('options found wanting by probing are refused with errors that name them', () => {
  const rate = { burst: 1, perSecond: 1 };
  const cases = [
    [{ rate, maxWaitMs: -1 }, RangeError, 'maxWaitMs'],
    [{ rate, maxWaiting: 1.5 }, RangeError, 'maxWaiting'],
    [{ rate, usageUrl: 'not a url' }, TypeError, 'usageUrl'],
    [{ rate, usageUrl: 'ftp://x/usage' }, TypeError, 'usageUrl'],
    [{ rate, retry: { methods: ['G E T'] } }, TypeError, 'retry.methods'],
    [{ rate: { burst: 1, perSecond: 5e-324 } }, RangeError, 'rate.perSecond'],
  ];
  for (const [options, type, field] of cases) {
    assert.throws(() => createFetch(options), (err) => err instanceof type && err.message.includes(field), field);
  }
});

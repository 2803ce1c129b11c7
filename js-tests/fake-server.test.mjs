// Tests of the test support itself, with plain fetch only (no odds-gate),
// so the fake server is trusted before it's used to judge the gate.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { performance } from 'node:perf_hooks';
import { startFakeOddsApi } from './support/fake-odds-api.mjs';
import { OddsApiClient, OddsApiError } from './support/sdk-client.mjs';
import { runWorkers } from './support/workers.mjs';

const servers = [];
const start = async (opts) => { const s = await startFakeOddsApi(opts); servers.push(s); return s; };
after(() => Promise.all(servers.map((s) => s.close())));

// A near-zero refill keeps the bucket-level tests independent of timing.
const FROZEN = { burst: 2, perSecond: 0.001 };

test('eight naive workers collide: >= 20 attempts, >= 12 429s, all complete', { timeout: 20000 }, async () => {
  const api = await start({ burst: 2, perSecond: 2, retryAfterSeconds: 1 });
  const r = await runWorkers({ fetchImpl: fetch, baseUrl: api.baseUrl, apiKey: `test-${randomUUID()}`, timeoutMs: 15000 });
  assert.equal(r.completed, 8);
  assert.equal(r.failed, 0);
  assert.ok(r.attempts >= 20, `attempts ${r.attempts}`);
  assert.ok(r.throttled >= 12, `throttled ${r.throttled}`);
  const s = api.stats(); // server saw exactly what the client sent
  assert.equal(s.attempts, r.attempts);
  assert.equal(s.throttled, r.throttled);
  assert.equal(s.ok, 8);
});

test('different API keys keep independent buckets', async () => {
  const api = await start(FROZEN);
  const a = new OddsApiClient({ apiKey: 'key-a', baseUrl: api.baseUrl });
  const b = new OddsApiClient({ apiKey: 'key-b', baseUrl: api.baseUrl });
  await a.getOddsSnapshot('e1');
  await a.getOddsSnapshot('e2');
  await assert.rejects(a.getOddsSnapshot('e3'), { status: 429 });
  await b.getOddsSnapshot('e1'); // b still has its full burst
  await b.getOddsSnapshot('e2');
  await assert.rejects(b.getOddsSnapshot('e3'), { status: 429 });
  assert.deepEqual(api.stats().byKey, {
    'key#1': { attempts: 3, throttled: 1, ok: 2 },
    'key#2': { attempts: 3, throttled: 1, ok: 2 },
  });
  api.reset();
  assert.equal(api.stats().attempts, 0);
  await a.getOddsSnapshot('e4'); // reset refills buckets too
});

test('429 carries documented headers and body; OddsApiError hides headers', async () => {
  const api = await start(FROZEN);
  const url = `${api.baseUrl}/events/evt-1/odds/snapshot`;
  const headers = { 'X-API-Key': 'k' };
  const ok = await fetch(url, { headers });
  assert.equal(ok.status, 200);
  assert.equal(ok.headers.get('x-ratelimit-remaining'), '1');
  assert.equal(ok.headers.get('x-ratelimit-bucket'), 'snapshot');
  assert.equal((await ok.json()).event_id, 'evt-1');
  await (await fetch(url, { headers })).text();

  const res = await fetch(url, { headers });
  assert.equal(res.status, 429);
  assert.equal(res.headers.get('retry-after'), '1');
  assert.equal(res.headers.get('x-ratelimit-limit'), '2');
  assert.equal(res.headers.get('x-ratelimit-remaining'), '0');
  assert.equal(res.headers.get('x-ratelimit-bucket'), 'snapshot');
  assert.match(res.headers.get('content-type'), /^application\/json/);
  const body = await res.json();
  assert.equal(body.detail, 'Rate limit exceeded');
  assert.equal(body.code, 'rate_limited');
  assert.equal(typeof body.request_id, 'string');

  const client = new OddsApiClient({ apiKey: 'k', baseUrl: api.baseUrl });
  const err = await client.getOddsSnapshot('evt-1').then(() => assert.fail('expected 429'), (e) => e);
  assert.ok(err instanceof OddsApiError);
  assert.equal(err.name, 'OddsApiError');
  assert.equal(err.status, 429);
  assert.equal(err.body.code, 'rate_limited');
  assert.ok(!('headers' in err) && !JSON.stringify(err).includes('Retry-After'));

  const quiet = await start({ ...FROZEN, retryAfterSeconds: null });
  for (let i = 0; i < 2; i++) await (await fetch(`${quiet.baseUrl}/events/x/odds/snapshot`)).text();
  const noRetry = await fetch(`${quiet.baseUrl}/events/x/odds/snapshot`);
  assert.equal(noRetry.status, 429);
  assert.equal(noRetry.headers.get('retry-after'), null);
  await noRetry.text();
});

test('usage and 404 routes', async () => {
  const api = await start({ ...FROZEN, creditLimit: 500 });
  const client = new OddsApiClient({ apiKey: 'u', baseUrl: api.baseUrl });
  await client.getOddsSnapshot('e');
  const usage = await client.getUsage();
  assert.equal(usage.api_credits_used, 1);
  assert.equal(usage.api_credits_limit, 500);
  assert.ok(!Number.isNaN(Date.parse(usage.period_end_utc)));
  await client.getUsage(); // usage doesn't spend tokens: one left
  await client.getOddsSnapshot('e');
  await assert.rejects(client.post('/nope', { a: 1 }), { status: 404, body: { detail: 'Not found' } });
});

test('stats never contain raw key strings', async () => {
  const api = await start(FROZEN);
  const apiKey = `secret-${randomUUID()}`;
  const bearerToken = `tok-${randomUUID()}`;
  await new OddsApiClient({ apiKey, baseUrl: api.baseUrl }).getOddsSnapshot('e');
  await new OddsApiClient({ bearerToken, baseUrl: api.baseUrl }).getOddsSnapshot('e');
  await (await fetch(`${api.baseUrl}/events/e/odds/snapshot`)).text(); // anonymous
  const json = JSON.stringify(api.stats());
  assert.ok(!json.includes(apiKey) && !json.includes(bearerToken) && !json.includes('anonymous'));
  assert.deepEqual(Object.keys(api.stats().byKey), ['key#1', 'key#2', 'key#3']);
});

const rateLimitHeaderNames = (res) => [...res.headers.keys()].filter((h) => h.startsWith('x-ratelimit-'));

test('rateLimitHeaders: false sends no X-RateLimit-* on any route; a 429 keeps Retry-After', async () => {
  const api = await start({ ...FROZEN, rateLimitHeaders: false, events: { burst: 1, perSecond: 0.001 } });
  const headers = { 'X-API-Key': 'quiet' };
  const snapshot = `${api.baseUrl}/events/e1/odds/snapshot`;
  for (let i = 0; i < 2; i++) {
    const ok = await fetch(snapshot, { headers });
    assert.equal(ok.status, 200);
    assert.deepEqual(rateLimitHeaderNames(ok), []);
    assert.equal((await ok.json()).event_id, 'e1');
  }
  const limited = await fetch(snapshot, { headers });
  assert.equal(limited.status, 429);
  assert.deepEqual(rateLimitHeaderNames(limited), []);
  assert.equal(limited.headers.get('retry-after'), '1');
  assert.equal((await limited.json()).code, 'rate_limited');

  const event = `${api.baseUrl}/events/e1`;
  const found = await fetch(event, { headers });
  assert.equal(found.status, 200);
  assert.deepEqual(rateLimitHeaderNames(found), []);
  await found.text();
  const eventLimited = await fetch(event, { headers });
  assert.equal(eventLimited.status, 429);
  assert.deepEqual(rateLimitHeaderNames(eventLimited), []);
  assert.equal(eventLimited.headers.get('retry-after'), '1');
  await eventLimited.text();
  assert.deepEqual([api.stats().attempts, api.stats().throttled], [5, 2]);

  const defaults = await start(FROZEN); // headers on by default, on both routes
  for (const path of ['/events/e1/odds/snapshot', '/events/e1']) {
    const res = await fetch(`${defaults.baseUrl}${path}`, { headers });
    assert.deepEqual(rateLimitHeaderNames(res).sort(), ['x-ratelimit-bucket', 'x-ratelimit-limit', 'x-ratelimit-remaining']);
    await res.text();
  }
});

test("rateLimitHeaders: 'throttled' sends X-RateLimit-* on 429s only, as the API's OpenAPI documents them", async () => {
  const api = await start({ ...FROZEN, rateLimitHeaders: 'throttled', events: { burst: 1, perSecond: 0.001 } });
  const headers = { 'X-API-Key': 'throttled' };
  const snapshot = `${api.baseUrl}/events/e1/odds/snapshot`;
  for (let i = 0; i < 2; i++) {
    const ok = await fetch(snapshot, { headers });
    assert.equal(ok.status, 200);
    assert.deepEqual(rateLimitHeaderNames(ok), []);
    await ok.text();
  }
  const limited = await fetch(snapshot, { headers });
  assert.equal(limited.status, 429);
  assert.equal(limited.headers.get('x-ratelimit-limit'), '2');
  assert.equal(limited.headers.get('x-ratelimit-remaining'), '0');
  assert.equal(limited.headers.get('x-ratelimit-bucket'), 'snapshot');
  assert.equal(limited.headers.get('retry-after'), '1');
  assert.equal((await limited.json()).code, 'rate_limited');

  const event = `${api.baseUrl}/events/e1`;
  const found = await fetch(event, { headers });
  assert.equal(found.status, 200);
  assert.deepEqual(rateLimitHeaderNames(found), []);
  await found.text();
  const eventLimited = await fetch(event, { headers });
  assert.equal(eventLimited.status, 429);
  assert.deepEqual(
    ['limit', 'remaining', 'bucket'].map((h) => eventLimited.headers.get(`x-ratelimit-${h}`)),
    ['1', '0', 'events'],
  );
  await eventLimited.text();
  assert.deepEqual([api.stats().attempts, api.stats().throttled], [5, 2]);

  await assert.rejects(startFakeOddsApi({ rateLimitHeaders: 'sometimes' }), TypeError);
});

test('the events route draws from its own per-key bucket, with its own headers', async () => {
  const api = await start({ ...FROZEN, events: { burst: 3, perSecond: 0.001 } });
  const headers = { 'X-API-Key': 'k' };
  const snapshot = (id) => fetch(`${api.baseUrl}/events/${id}/odds/snapshot`, { headers });
  const lookup = (id) => fetch(`${api.baseUrl}/events/${id}`, { headers });

  // Snapshots exhausted: event lookups still have their whole burst.
  for (let i = 0; i < 2; i++) assert.equal((await (await snapshot('s')).json()).event_id, 's');
  const noSnapshot = await snapshot('s');
  assert.equal(noSnapshot.status, 429);
  assert.equal(noSnapshot.headers.get('x-ratelimit-bucket'), 'snapshot');
  await noSnapshot.text();

  for (let left = 2; left >= 0; left--) {
    const res = await lookup('evt-7');
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-ratelimit-bucket'), 'events');
    assert.equal(res.headers.get('x-ratelimit-limit'), '3');
    assert.equal(res.headers.get('x-ratelimit-remaining'), String(left));
    assert.match(res.headers.get('content-type'), /^application\/json/);
    const body = await res.json();
    assert.deepEqual(Object.keys(body).sort(), ['away_team', 'commence_time', 'home_team', 'id', 'sport_key']);
    assert.equal(body.id, 'evt-7');
    assert.equal(body.sport_key, 'soccer');
    assert.equal(typeof body.home_team, 'string');
    assert.equal(typeof body.away_team, 'string');
    assert.ok(!Number.isNaN(Date.parse(body.commence_time)));
  }
  const noEvent = await lookup('evt-7');
  assert.equal(noEvent.status, 429);
  assert.equal(noEvent.headers.get('x-ratelimit-bucket'), 'events');
  assert.equal(noEvent.headers.get('x-ratelimit-limit'), '3');
  assert.equal(noEvent.headers.get('x-ratelimit-remaining'), '0');
  assert.equal(noEvent.headers.get('retry-after'), '1');
  assert.equal((await noEvent.json()).code, 'rate_limited');

  // And the other way round, on a fresh key: event lookups exhausted, snapshots untouched.
  const other = { 'X-API-Key': 'k2' };
  for (let i = 0; i < 3; i++) await (await fetch(`${api.baseUrl}/events/e`, { headers: other })).text();
  const stillLimited = await fetch(`${api.baseUrl}/events/e`, { headers: other });
  assert.equal(stillLimited.status, 429);
  await stillLimited.text();
  const snap = await fetch(`${api.baseUrl}/events/e/odds/snapshot`, { headers: other });
  assert.equal(snap.status, 200);
  assert.equal(snap.headers.get('x-ratelimit-remaining'), '1');
  await snap.text();

  // Not an event route: deeper or other paths, and non-GET methods.
  for (const [method, path] of [['GET', '/events/e/odds'], ['POST', '/events/e'], ['GET', '/events']]) {
    const res = await fetch(`${api.baseUrl}${path}`, { method, headers });
    assert.equal(res.status, 404, `${method} ${path}`);
    await res.text();
  }
});

test('the events bucket defaults to burst 10 and shares the retryAfterSeconds', async () => {
  const headers = { 'X-API-Key': 'd' };
  const api = await start({ burst: 1, perSecond: 0.001, retryAfterSeconds: 7 });
  const first = await fetch(`${api.baseUrl}/events/e`, { headers });
  assert.equal(first.status, 200);
  assert.equal(first.headers.get('x-ratelimit-limit'), '10');
  assert.equal(first.headers.get('x-ratelimit-remaining'), '9'); // starts full, capped at the burst
  await first.text();

  const tight = await start({ ...FROZEN, retryAfterSeconds: 7, events: { burst: 1, perSecond: 0.001 } });
  await (await fetch(`${tight.baseUrl}/events/e`, { headers })).text();
  const limited = await fetch(`${tight.baseUrl}/events/e`, { headers });
  assert.equal(limited.status, 429);
  assert.equal(limited.headers.get('retry-after'), '7');
  await limited.text();
});

test('byBucket counts each route; byKey, totals and arrivals count both', async () => {
  const api = await start({ ...FROZEN, events: { burst: 1, perSecond: 0.001 } });
  assert.deepEqual(api.stats().byBucket, {
    snapshot: { attempts: 0, throttled: 0, ok: 0 },
    events: { attempts: 0, throttled: 0, ok: 0 },
  });
  const client = new OddsApiClient({ apiKey: 'b', baseUrl: api.baseUrl });
  const get = (path) => fetch(`${api.baseUrl}${path}`, { headers: { 'X-API-Key': 'b' } })
    .then(async (r) => { await r.text(); return r.status; });
  assert.deepEqual([await get('/events/e'), await get('/events/e')], [200, 429]);
  await client.getOddsSnapshot('e1');
  await client.getOddsSnapshot('e2');
  await assert.rejects(client.getOddsSnapshot('e3'), { status: 429 });
  await client.getUsage(); // not a bucket: counted in usageCalls only
  const s = api.stats();
  assert.deepEqual(s.byBucket, {
    snapshot: { attempts: 3, throttled: 1, ok: 2 },
    events: { attempts: 2, throttled: 1, ok: 1 },
  });
  assert.deepEqual(s.byKey, { 'key#1': { attempts: 5, throttled: 2, ok: 3 } });
  assert.deepEqual([s.attempts, s.throttled, s.ok, s.usageCalls], [5, 2, 3, 1]);
  assert.deepEqual(s.arrivals.map((a) => [a.bucket, a.status]),
    [['events', 200], ['events', 429], ['snapshot', 200], ['snapshot', 200], ['snapshot', 429]]);
  assert.ok(s.arrivals.every((a) => a.key === 'key#1' && typeof a.at === 'number'));
  assert.equal((await client.getUsage()).api_credits_used, 3, 'credits count the 200s of both routes');

  api.reset(); // counters start again and buckets refill
  assert.deepEqual(api.stats().byBucket.events, { attempts: 0, throttled: 0, ok: 0 });
  assert.equal(await get('/events/e'), 200);
});

test('the monthly credits stop both routes', async () => {
  const api = await start({ burst: 10, perSecond: 0.001, creditLimit: 3 });
  const headers = { 'X-API-Key': 'c' };
  const get = (path) => fetch(`${api.baseUrl}${path}`, { headers });
  for (const path of ['/events/e', '/events/e/odds/snapshot', '/events/e/odds/snapshot']) {
    const res = await get(path);
    assert.equal(res.status, 200, path);
    await res.text();
  }
  for (const path of ['/events/e', '/events/e/odds/snapshot']) {
    const res = await get(path);
    assert.equal(res.status, 429, path);
    assert.equal((await res.json()).code, 'quota_exceeded');
  }
  assert.deepEqual(api.stats().byBucket, {
    snapshot: { attempts: 3, throttled: 1, ok: 2 },
    events: { attempts: 2, throttled: 1, ok: 1 },
  });
});

test('missingFirst and unavailableEvery answer 404 / 503 with the counts, take no token, and are counted apart', async () => {
  const api = await start({ ...FROZEN, missingFirst: 2, unavailableEvery: 4 });
  const get = async (key) => {
    const res = await fetch(`${api.baseUrl}/events/e1/odds/snapshot`, { headers: { 'X-API-Key': key } });
    const body = await res.json();
    return { status: res.status, body, remaining: res.headers.get('x-ratelimit-remaining'), retryAfter: res.headers.get('retry-after') };
  };
  const a = [];
  for (let i = 0; i < 6; i++) a.push(await get('a'));
  // 1-2: 404s of the full bucket; 3: 200 (1 left); 4: 503, no token; 5: 200 (0 left); 6: 429.
  assert.deepEqual(a.map((r) => r.status), [404, 404, 200, 503, 200, 429]);
  assert.deepEqual(a.map((r) => r.remaining), ['2', '2', '1', '1', '0', '0']);
  assert.deepEqual(a[0].body, { detail: 'Event not found' });
  assert.equal(a[3].retryAfter, null);
  assert.equal((await get('b')).status, 404); // per key
  const s = api.stats();
  assert.deepEqual(s.byKey['key#1'], { attempts: 6, throttled: 1, ok: 2, missing: 2, unavailable: 1 });
  assert.deepEqual(s.byKey['key#2'], { attempts: 1, throttled: 0, ok: 0, missing: 1 });
  assert.equal(s.missing, 3);
  assert.equal(s.byBucket.snapshot.unavailable, 1);
  assert.ok(!('missing' in s.byBucket.events));
  // Event lookups are never missing nor unavailable.
  assert.equal((await fetch(`${api.baseUrl}/events/e1`, { headers: { 'X-API-Key': 'c' } })).status, 200);
});

test('counts: a quota, or a stuck remaining, in place of the bucket\'s; malformed options throw a TypeError naming them', async () => {
  const quota = await start({ ...FROZEN, counts: { quota: { limit: 100000, left: 90000 } } });
  const stuck = await start({ ...FROZEN, counts: { stuck: 100 }, rateLimitHeaders: 'throttled' });
  const get = async (api) => {
    const res = await fetch(`${api.baseUrl}/events/e1/odds/snapshot`, { headers: { 'X-API-Key': 'k' } });
    await res.arrayBuffer();
    return [res.status, res.headers.get('x-ratelimit-limit'), res.headers.get('x-ratelimit-remaining')];
  };
  const q = [];
  for (let i = 0; i < 3; i++) q.push(await get(quota));
  assert.deepEqual(q, [[200, '100000', '89999'], [200, '100000', '89998'], [429, '100000', '89998']]);
  const s = [];
  for (let i = 0; i < 3; i++) s.push(await get(stuck));
  assert.deepEqual(s, [[200, null, null], [200, null, null], [429, '2', '100']]);
  for (const [name, bad] of [['missingFirst', -1], ['missingFirst', 1.5], ['unavailableEvery', 0], ['counts', 'lies'],
    ['counts', { stuck: -1 }], ['counts', { quota: { limit: 10 } }], ['change', { atMs: 10, burst: 2 }], ['change', 5],
    ['outageMs', -1], ['outageMs', 'soon'], ['hangFirst', 1.5], ['claimRemaining', 9999], ['claimRemaining', { first: 1 }],
    ['claimRemaining', { first: 1, remaining: -1 }], ['claimRemaining', { first: 1, remaining: 5, limit: 5 }],
    ['bucketPerResource', 'yes']]) {
    await assert.rejects(startFakeOddsApi({ [name]: bad }), (err) => err instanceof TypeError && err.message.startsWith(`${name}:`), `${name}: ${JSON.stringify(bad)}`);
  }
});

test('change: from atMs the snapshot bucket has the new allowance, its tokens never above the new burst', { timeout: 10000 }, async () => {
  const api = await start({ burst: 4, perSecond: 0.001, change: { atMs: 300, burst: 1, perSecond: 0.001 }, events: { burst: 3, perSecond: 0.001 } });
  const get = async (path) => {
    const res = await fetch(`${api.baseUrl}${path}`, { headers: { 'X-API-Key': 'k' } });
    await res.arrayBuffer();
    return [res.status, res.headers.get('x-ratelimit-limit'), res.headers.get('x-ratelimit-remaining')];
  };
  assert.deepEqual(await get('/events/e1/odds/snapshot'), [200, '4', '3']); // 3 tokens left before the change
  await sleep(400);
  assert.deepEqual(await get('/events/e1/odds/snapshot'), [200, '1', '0']); // clamped to the new burst of 1
  assert.deepEqual(await get('/events/e1/odds/snapshot'), [429, '1', '0']);
  assert.deepEqual(await get('/events/e1'), [200, '3', '2']); // the lookups' bucket is unchanged
});

// status, Remaining and Bucket of one answer (body read), on key `key`.
const answer = async (api, path, key = 'k', init = {}) => {
  const res = await fetch(`${api.baseUrl}${path}`, { ...init, headers: { 'X-API-Key': key } });
  await res.arrayBuffer();
  return [res.status, res.headers.get('x-ratelimit-remaining'), res.headers.get('x-ratelimit-bucket')];
};

test('outageMs: snapshots answer a bare 503 until outageMs after start or reset, taking no token', { timeout: 10000 }, async () => {
  const began = performance.now();
  const api = await start({ ...FROZEN, outageMs: 1000 });
  const res = await fetch(`${api.baseUrl}/events/e1/odds/snapshot`, { headers: { 'X-API-Key': 'k' } });
  assert.equal(res.status, 503);
  assert.deepEqual(await res.json(), { detail: 'Service unavailable' });
  assert.equal(res.headers.get('retry-after'), null);
  assert.deepEqual(rateLimitHeaderNames(res), []);
  assert.deepEqual(await answer(api, '/events/e1/odds/snapshot', 'k2'), [503, null, null]); // every key
  assert.deepEqual(await answer(api, '/events/e1'), [200, '9', 'events']); // snapshots only
  await sleep(Math.max(0, 1000 - (performance.now() - began)) + 100);
  // The bucket is still full: the 503s took nothing.
  for (const left of ['1', '0']) assert.deepEqual(await answer(api, '/events/e1/odds/snapshot'), [200, left, 'snapshot']);
  assert.equal((await answer(api, '/events/e1/odds/snapshot'))[0], 429);
  const s = api.stats();
  assert.deepEqual(s.byKey['key#1'], { attempts: 5, throttled: 1, ok: 3, unavailable: 1 });
  assert.deepEqual(s.byKey['key#2'], { attempts: 1, throttled: 0, ok: 0, unavailable: 1 });
  api.reset(); // the outage starts again
  assert.deepEqual(await answer(api, '/events/e1/odds/snapshot'), [503, null, null]);
});

test('hangFirst: the first n snapshot requests per key are never answered; close() still ends at once', { timeout: 10000 }, async () => {
  const api = await start({ ...FROZEN, hangFirst: 1 });
  const url = `${api.baseUrl}/events/e1/odds/snapshot`;
  for (const key of ['a', 'b']) {
    await assert.rejects(fetch(url, { headers: { 'X-API-Key': key }, signal: AbortSignal.timeout(300) }), { name: 'TimeoutError' });
    assert.deepEqual(await answer(api, '/events/e1/odds/snapshot', key), [200, '1', 'snapshot']); // no token taken
  }
  const s = api.stats();
  assert.deepEqual(s.byKey['key#1'], { attempts: 2, throttled: 0, ok: 1, hung: 1 });
  assert.deepEqual(s.arrivals.map((a) => a.status), [null, 200, null, 200]);

  const held = await start({ ...FROZEN, hangFirst: 1 }); // closed here, and again (harmlessly) after all
  const pending = fetch(`${held.baseUrl}/events/e1/odds/snapshot`).then(() => 'answered', (err) => err.name);
  for (let i = 0; i < 100 && held.stats().attempts === 0; i++) await sleep(20);
  assert.equal(held.stats().byKey['key#1'].hung, 1);
  const closing = performance.now();
  await held.close();
  assert.ok(performance.now() - closing < 2000, `close took ${performance.now() - closing} ms`);
  assert.equal(await pending, 'TypeError'); // the client sees the socket closed, not an answer
});

test('claimRemaining: the first answers carrying X-RateLimit-* claim that Remaining, per key', async () => {
  const api = await start({ ...FROZEN, claimRemaining: { first: 2, remaining: 9999 } });
  const a = [];
  for (let i = 0; i < 3; i++) a.push(await answer(api, '/events/e1/odds/snapshot'));
  assert.deepEqual(a, [[200, '9999', 'snapshot'], [200, '9999', 'snapshot'], [429, '0', 'snapshot']]);
  assert.deepEqual(await answer(api, '/events/e1/odds/snapshot', 'other'), [200, '9999', 'snapshot']);
  assert.deepEqual(await answer(api, '/events/e1'), [200, '9', 'events']); // snapshots only

  const throttled = await start({ ...FROZEN, rateLimitHeaders: 'throttled', claimRemaining: { first: 1, remaining: 9999 } });
  const t = [];
  for (let i = 0; i < 4; i++) t.push(await answer(throttled, '/events/e1/odds/snapshot'));
  assert.deepEqual(t.map((x) => x.slice(0, 2)), [[200, null], [200, null], [429, '9999'], [429, '0']]);
});

test('bucketPerResource: a bucket per route and event id, named in X-RateLimit-Bucket', async () => {
  const api = await start({ ...FROZEN, bucketPerResource: true, events: { burst: 1, perSecond: 0.001 } });
  const snap = (id, key) => answer(api, `/events/${id}/odds/snapshot`, key);
  assert.deepEqual([await snap('e1'), await snap('e1'), await snap('e1')],
    [[200, '1', 'snapshot:e1'], [200, '0', 'snapshot:e1'], [429, '0', 'snapshot:e1']]);
  assert.deepEqual(await snap('e2'), [200, '1', 'snapshot:e2']); // its own full bucket
  assert.deepEqual(await snap('e1', 'other'), [200, '1', 'snapshot:e1']); // and per key
  assert.deepEqual(await snap('a b'), [200, '1', 'snapshot:a%20b']); // the id as the path spells it
  assert.deepEqual([await answer(api, '/events/e1'), await answer(api, '/events/e1'), await answer(api, '/events/e2')],
    [[200, '0', 'events:e1'], [429, '0', 'events:e1'], [200, '0', 'events:e2']]);
  const s = api.stats();
  assert.deepEqual(s.byBucket.snapshot, { attempts: 6, throttled: 1, ok: 5 }); // the route's, summed
  assert.ok(s.arrivals.every((a) => a.bucket === 'snapshot' || a.bucket === 'events'));
});

const snapshotOf = async (api, id = 'e1', key = 'k') => {
  const res = await fetch(`${api.baseUrl}/events/${id}/odds/snapshot`, { headers: { 'X-API-Key': key } });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, body: JSON.parse(text) };
};
const usageOf = async (api, key = 'k') => (await fetch(`${api.baseUrl}/usage`, { headers: { 'X-API-Key': key } })).json();
// Every malformed value of `name` makes startFakeOddsApi throw a TypeError naming it.
const rejectsEach = async (name, bads) => {
  for (const bad of bads) {
    await assert.rejects(startFakeOddsApi({ [name]: bad }), (err) => err instanceof TypeError && err.message.startsWith(`${name}:`), `${name}: ${String(bad)}`);
  }
};

test('ttlSeconds: every snapshot 200 carries ttl_seconds and as_of_ts_ms; nothing else does; malformed values throw', async () => {
  const api = await start({ ...FROZEN, ttlSeconds: 2.5, events: { burst: 1, perSecond: 0.001 } });
  const before = Date.now();
  const ok = await snapshotOf(api);
  assert.equal(ok.status, 200);
  assert.equal(ok.body.ttl_seconds, 2.5);
  assert.ok(Number.isSafeInteger(ok.body.as_of_ts_ms) && ok.body.as_of_ts_ms >= before && ok.body.as_of_ts_ms <= Date.now());
  assert.equal(ok.body.event_id, 'e1');
  assert.equal(ok.headers.get('cache-control'), null); // only with cacheControl
  assert.equal((await snapshotOf(api)).body.ttl_seconds, 2.5);
  const limited = await snapshotOf(api); // a 429 is no snapshot
  assert.equal(limited.status, 429);
  assert.ok(!('ttl_seconds' in limited.body) && !('as_of_ts_ms' in limited.body));
  const event = await (await fetch(`${api.baseUrl}/events/e1`)).json();
  assert.ok(!('ttl_seconds' in event));
  assert.equal((await snapshotOf(await start({ ...FROZEN, ttlSeconds: 0 }))).body.ttl_seconds, 0);

  const plain = await snapshotOf(await start(FROZEN)); // the default body is unchanged
  assert.deepEqual(Object.keys(plain.body), ['event_id', 'bookmakers', 'fetched_at']);
  await rejectsEach('ttlSeconds', [-1, Number.NaN, Infinity, '5', true]);
});

test('cacheControl: sent on snapshot 200s only; malformed values throw', async () => {
  const api = await start({ ...FROZEN, cacheControl: 'max-age=5, public', events: { burst: 1, perSecond: 0.001 } });
  const statuses = [];
  for (let i = 0; i < 3; i++) {
    const r = await snapshotOf(api);
    statuses.push([r.status, r.headers.get('cache-control')]);
  }
  assert.deepEqual(statuses, [[200, 'max-age=5, public'], [200, 'max-age=5, public'], [429, null]]);
  const event = await fetch(`${api.baseUrl}/events/e1`);
  assert.equal(event.status, 200);
  assert.equal(event.headers.get('cache-control'), null);
  await event.text();
  const usage = await fetch(`${api.baseUrl}/usage`);
  assert.equal(usage.headers.get('cache-control'), null);
  await usage.text();
  await rejectsEach('cacheControl', [5, '', ' max-age=5', 'max-age=5\r\nX-Evil: 1', ['max-age=5']]);
});

test('snapshotBytes: a filler pads the snapshot body to n bytes; malformed values throw', async () => {
  const big = await snapshotOf(await start({ ...FROZEN, snapshotBytes: 1 << 20, ttlSeconds: 5 }));
  assert.equal(big.status, 200);
  assert.equal(Buffer.byteLength(big.text), 1 << 20);
  assert.match(big.body.filler, /^x+$/);
  assert.deepEqual([big.body.event_id, big.body.ttl_seconds], ['e1', 5]);
  const small = await snapshotOf(await start({ ...FROZEN, snapshotBytes: 0 })); // no less than its fields
  assert.equal(small.body.filler, '');
  const plain = Buffer.byteLength((await snapshotOf(await start(FROZEN))).text);
  assert.ok(Buffer.byteLength(small.text) <= plain + 20);
  await rejectsEach('snapshotBytes', [-1, 1.5, '1000', Infinity]);
});

test('billingPeriodMs: credits per period; a spent key gets the quota 429 until period_end_utc, then has credits again', { timeout: 30000 }, async () => {
  const api = await start({ burst: 10, perSecond: 0.001, creditLimit: 2, billingPeriodMs: 1500, events: { burst: 10, perSecond: 0.001 } });
  const first = await usageOf(api);
  assert.equal(first.api_credits_used, 0);
  assert.equal(first.api_credits_limit, 2);
  assert.match(first.period_start_utc, /Z$/);
  assert.match(first.period_end_utc, /Z$/);
  // Spend the period: a snapshot and a lookup, then both routes refused as the quota.
  // The rollover may come between two calls on a loaded machine: try again in the next period.
  let spentIn = null;
  for (let tries = 0; tries < 5 && spentIn === null; tries++) {
    const { period_start_utc: from, period_end_utc: end } = await usageOf(api);
    assert.equal(Date.parse(end) - Date.parse(from), 1500);
    const statuses = [(await snapshotOf(api)).status, (await fetch(`${api.baseUrl}/events/e1`, { headers: { 'X-API-Key': 'k' } }).then((r) => r.text().then(() => r.status)))];
    const refused = await snapshotOf(api);
    const after = await usageOf(api);
    if (after.period_start_utc !== from) { await sleep(Math.max(0, Date.parse(after.period_end_utc) - Date.now()) + 50); continue; }
    assert.deepEqual(statuses, [200, 200]);
    assert.equal(refused.status, 429);
    assert.equal(refused.body.code, 'quota_exceeded');
    assert.equal(after.api_credits_used, 2);
    assert.equal((await usageOf(api, 'other')).api_credits_used, 0); // per key
    spentIn = after;
  }
  assert.ok(spentIn, 'spent within one period');
  // Wait until that period's end has passed: the key has its credits again.
  await sleep(Math.max(0, Date.parse(spentIn.period_end_utc) - Date.now()) + 200);
  const next = await usageOf(api);
  assert.ok(Date.parse(next.period_start_utc) >= Date.parse(spentIn.period_end_utc));
  assert.equal((Date.parse(next.period_start_utc) - Date.parse(first.period_start_utc)) % 1500, 0, 'periods back to back');
  assert.equal(next.api_credits_used, 0);
  const back = await snapshotOf(api);
  assert.equal(back.status, 200);
  assert.ok(!('credits' in api.stats().byKey['key#1'])); // no credits count without costs

  api.reset(); // a period starts again
  const fresh = await usageOf(api);
  assert.equal(fresh.api_credits_used, 0);
  assert.ok(Date.parse(fresh.period_start_utc) >= Date.parse(next.period_start_utc));
  await rejectsEach('billingPeriodMs', [999, 0, 1500.5, '1500', -1000]);
});

test('without billingPeriodMs /v1/usage says what it said, with period_start_utc: the server\'s start or reset', async () => {
  const began = Date.now();
  const api = await start({ burst: 10, perSecond: 0.001, creditLimit: 2 });
  for (let i = 0; i < 2; i++) assert.equal((await snapshotOf(api)).status, 200);
  const usage = await usageOf(api);
  assert.deepEqual(Object.keys(usage), ['api_credits_used', 'api_credits_limit', 'period_start_utc', 'period_end_utc']);
  assert.deepEqual([usage.api_credits_used, usage.api_credits_limit], [2, 2]);
  const periodStart = Date.parse(usage.period_start_utc);
  assert.ok(periodStart >= began && periodStart <= Date.now());
  const end = Date.parse(usage.period_end_utc) - Date.now();
  assert.ok(end > 30 * 86400e3 - 60e3 && end <= 30 * 86400e3, `period_end_utc ${usage.period_end_utc}`);
  assert.equal((await snapshotOf(api)).body.code, 'quota_exceeded');
  assert.equal((await usageOf(api)).api_credits_used, 2); // the 429 spent nothing
  assert.equal(api.stats().credits, undefined); // no credits count without costs
  assert.deepEqual(api.stats().byKey['key#1'], { attempts: 3, throttled: 1, ok: 2 });
  await sleep(20);
  api.reset();
  const after = await usageOf(api);
  assert.equal(after.api_credits_used, 0);
  assert.ok(Date.parse(after.period_start_utc) > periodStart);
});

test('costs: a 200 costs its route\'s credits; a call the credits left cannot pay gets the quota 429; malformed values throw', async () => {
  const api = await start({ burst: 10, perSecond: 0.001, creditLimit: 10, costs: { snapshot: 4 }, events: { burst: 10, perSecond: 0.001 } });
  const lookup = async (key = 'k') => {
    const res = await fetch(`${api.baseUrl}/events/e1`, { headers: { 'X-API-Key': key } });
    return [res.status, (await res.json()).code];
  };
  assert.equal((await snapshotOf(api)).status, 200); // 4
  assert.equal((await snapshotOf(api)).status, 200); // 8
  const refused = await snapshotOf(api); // 2 left: a snapshot's 4 can't be paid
  assert.deepEqual([refused.status, refused.body.code], [429, 'quota_exceeded']);
  assert.deepEqual(await lookup(), [200, undefined]); // an event lookup costs the default 1: 9
  assert.deepEqual(await lookup(), [200, undefined]); // 10
  assert.deepEqual(await lookup(), [429, 'quota_exceeded']);
  assert.equal((await usageOf(api)).api_credits_used, 10);
  assert.deepEqual(await lookup('other'), [200, undefined]);
  const s = api.stats();
  assert.deepEqual(s.byKey['key#1'], { attempts: 6, throttled: 2, ok: 4, credits: 10 });
  assert.deepEqual(s.byKey['key#2'], { attempts: 1, throttled: 0, ok: 1, credits: 1 });
  assert.deepEqual([s.ok, s.credits], [5, 11]);

  // Free calls never run out; fractional costs add up; a rate-limit 429 costs nothing.
  const free = await start({ ...FROZEN, creditLimit: 1, costs: { snapshot: 0, events: 0.5 } });
  assert.deepEqual([(await snapshotOf(free)).status, (await snapshotOf(free)).status, (await snapshotOf(free)).body.code], [200, 200, 'rate_limited']);
  for (let i = 0; i < 2; i++) assert.equal((await fetch(`${free.baseUrl}/events/e1`, { headers: { 'X-API-Key': 'k' } }).then((r) => r.text().then(() => r.status))), 200);
  assert.equal((await usageOf(free)).api_credits_used, 1);
  assert.deepEqual([free.stats().credits, free.stats().byKey['key#1'].credits], [1, 1]);
  free.reset(); // counters start again
  assert.equal(free.stats().credits, 0);
  await rejectsEach('costs', [5, [], { snapshot: -1 }, { events: '2' }, { snapshot: Infinity }, { search: 1 }]);
});

test('billingPeriodMs with costs: a period\'s credits come back whole; stats().credits counts over the server\'s life', { timeout: 30000 }, async () => {
  const api = await start({ burst: 10, perSecond: 0.001, creditLimit: 5, billingPeriodMs: 1500, costs: { snapshot: 5 } });
  let spent = null;
  for (let tries = 0; tries < 5 && spent === null; tries++) {
    const { period_start_utc: from } = await usageOf(api);
    const statuses = [(await snapshotOf(api)).status, (await snapshotOf(api)).status];
    const after = await usageOf(api);
    if (after.period_start_utc !== from) { await sleep(Math.max(0, Date.parse(after.period_end_utc) - Date.now()) + 50); continue; }
    assert.deepEqual(statuses, [200, 429]);
    assert.equal(after.api_credits_used, 5);
    spent = after;
  }
  assert.ok(spent, 'spent within one period');
  await sleep(Math.max(0, Date.parse(spent.period_end_utc) - Date.now()) + 200);
  assert.equal((await snapshotOf(api)).status, 200);
  assert.equal((await usageOf(api)).api_credits_used, 5);
  const s = api.stats();
  assert.equal(s.credits, 5 * s.ok);
  assert.ok(s.ok >= 2);
});

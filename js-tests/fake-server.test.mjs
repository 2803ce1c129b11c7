// Tests of the test support itself, with plain fetch only (no odds-gate),
// so the fake server is trusted before it's used to judge the gate.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
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
  assert.ok(r.rejected >= 12, `rejected ${r.rejected}`);
  const s = api.stats(); // server saw exactly what the client sent
  assert.equal(s.attempts, r.attempts);
  assert.equal(s.rejected, r.rejected);
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
    'key#1': { attempts: 3, rejected: 1, ok: 2 },
    'key#2': { attempts: 3, rejected: 1, ok: 2 },
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

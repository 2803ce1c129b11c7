// What a caller of the SDK catches, through every way the gate can give up: an SDK-shaped client
// (one fetchImpl call per request, the body read as text, a non-2xx thrown as
// OddsApiError(status, body)) over the gate, with a scripted inner fetch for each path. The
// README's table ("Giving up ...") says the same, case by case.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { randomUUID } from 'node:crypto';
import { createFetch, GateAbandonedError, QuotaExhaustedError } from '../pkg/index.js';
import { OddsApiClient, OddsApiError } from './support/sdk-client.mjs';

const fast = { baseMs: 1, capMs: 2 };
const json = (status, body, headers = {}) => new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json', ...headers } });
const client = (options) => new OddsApiClient({ apiKey: `sdk-${randomUUID()}`, baseUrl: 'http://127.0.0.1:9/v1', fetchImpl: createFetch({ rate: { burst: 5, perSecond: 100 }, ...options }) });
/** What `promise` settles to: `['ok', value]` or `['error', error]`. */
const outcome = (promise) => promise.then((v) => ['ok', v], (e) => ['error', e]);

test('retries spent after answers: the SDK throws its own error for the last one; typed: GateAbandonedError', async () => {
  const busy = () => json(503, { detail: 'busy' });
  const cases = [
    ['attempts', { retry: fast, fetch: async () => busy() }],
    ['retry-budget', { retry: { ...fast, budget: { capacity: 10, transientCost: 10 } }, fetch: async () => busy() }],
    ['retry-after-exceeds-deadline', { retry: { ...fast, timeBudgetMs: 5_000 }, fetch: async () => json(429, { detail: 'slow down' }, { 'Retry-After': '30' }) }],
  ];
  for (const [reason, options] of cases) {
    const sdk = client(options);
    const [kind, err] = await outcome(sdk.getOddsSnapshot('e1'));
    assert.equal(kind, 'error', reason);
    assert.ok(err instanceof OddsApiError, `${reason}: ${err?.name}`);
    assert.ok([429, 503].includes(err.status), reason);
    assert.ok(err.body.detail, `${reason}: the body as the server sent it`);
    const typed = client({ ...options, typedErrors: true });
    const [, typedErr] = await outcome(typed.getOddsSnapshot('e1'));
    assert.ok(typedErr instanceof GateAbandonedError, `${reason} typed: ${typedErr?.name}`);
    assert.equal(typedErr.reason, reason);
  }
});

test('retries spent after failures: the last rejection itself; typed: GateAbandonedError with it as the cause', async () => {
  const failure = new TypeError('fetch failed');
  const [, err] = await outcome(client({ retry: fast, fetch: async () => { throw failure; } }).getOddsSnapshot('e1'));
  assert.equal(err, failure);
  const hang = (url, init) => new Promise((_, reject) => init.signal.addEventListener('abort', () => reject(init.signal.reason)));
  const [, timeout] = await outcome(client({ retry: { ...fast, maxAttempts: 2, attemptTimeoutMs: 30 }, fetch: hang }).getOddsSnapshot('e1'));
  assert.equal(timeout.name, 'TimeoutError');
  const [, typed] = await outcome(client({ retry: fast, typedErrors: true, fetch: async () => { throw failure; } }).getOddsSnapshot('e1'));
  assert.ok(typed instanceof GateAbandonedError && typed.reason === 'attempts' && typed.cause === failure);
});

test('refused before any answer: GateAbandonedError, with or without typedErrors', async () => {
  const slowOk = () => new Promise((r) => setTimeout(() => r(json(200, {})), 20));
  for (const typedErrors of [false, true]) {
    // One token, then a queue of one: maxWaiting refuses the third at once, maxWaitMs a wait.
    const full = client({ rate: { burst: 1, perSecond: 5 }, maxWaiting: 1, typedErrors, fetch: slowOk });
    const ahead = [full.getOddsSnapshot('a'), full.getOddsSnapshot('b')];
    const [, queueFull] = await outcome(full.getOddsSnapshot('c'));
    assert.ok(queueFull instanceof GateAbandonedError && queueFull.reason === 'queue-full', queueFull?.name);
    await Promise.all(ahead);
    const waiting = client({ rate: { burst: 1, perSecond: 0.5 }, maxWaitMs: 100, typedErrors, fetch: slowOk });
    await waiting.getOddsSnapshot('a');
    const [, queueWait] = await outcome(waiting.getOddsSnapshot('b'));
    assert.ok(queueWait instanceof GateAbandonedError && queueWait.reason === 'queue-wait', queueWait?.name);
    // A batch's deadline.
    const fetchImpl = createFetch({ rate: { burst: 1, perSecond: 0.5 }, typedErrors, fetch: slowOk });
    const round = fetchImpl.batch({ deadlineMs: 500 });
    const sdk = new OddsApiClient({ apiKey: `sdk-${randomUUID()}`, baseUrl: 'http://127.0.0.1:9/v1', fetchImpl: round });
    const [one, two] = await Promise.all([outcome(sdk.getOddsSnapshot('a')), outcome(sdk.getOddsSnapshot('b'))]);
    assert.equal(one[0], 'ok');
    assert.ok(two[1] instanceof GateAbandonedError && two[1].reason === 'deadline', two[1]?.name);
  }
});

test('a spent quota: the server\'s quota 429 again, marked, and the account endpoints answer; typed: QuotaExhaustedError', async () => {
  for (const typedErrors of [false, true]) {
    let spent = false;
    let usageCalls = 0;
    const fetch = async (url) => {
      if (url.endsWith('/usage')) {
        usageCalls++;
        return json(200, { api_credits_used: spent ? 5 : 1, api_credits_limit: 5, period_end_utc: '2027-01-01T00:00:00Z' });
      }
      if (spent) return json(429, { code: 'quota_exceeded', detail: 'Monthly API credits exhausted' });
      spent = true;
      return json(200, { ok: true });
    };
    const sdk = client({ retry: fast, typedErrors, fetch });
    await sdk.getOddsSnapshot('spend');
    const settled = await Promise.all([1, 2, 3].map((i) => outcome(sdk.getOddsSnapshot(`e${i}`))));
    for (const [kind, err] of settled) {
      assert.equal(kind, 'error');
      if (typedErrors) {
        assert.ok(err instanceof QuotaExhaustedError, err?.name);
        // The period's end exactly as /usage said it.
        assert.equal(err.periodEnd.toISOString(), '2027-01-01T00:00:00.000Z');
      } else {
        assert.ok(err instanceof OddsApiError, err?.name);
        assert.deepEqual([err.status, err.body.code], [429, 'quota_exceeded']);
      }
    }
    // How one checks the quota is never refused for it.
    const usage = await sdk.getUsage();
    assert.equal(usage.api_credits_used, 5);
    assert.equal(usageCalls, 2, 'the probe, then the caller\'s own');
  }
});

test('the caller\'s abort: its own reason, with or without typedErrors', async () => {
  for (const typedErrors of [false, true]) {
    const fetchImpl = createFetch({ rate: { burst: 1, perSecond: 0.1 }, typedErrors, fetch: async () => json(200, {}) });
    const headers = { 'X-API-Key': `sdk-${randomUUID()}` };
    await fetchImpl('http://127.0.0.1:9/v1/events/a/odds/snapshot', { headers });
    const controller = new AbortController();
    const waiting = outcome(fetchImpl('http://127.0.0.1:9/v1/events/b/odds/snapshot', { headers, signal: controller.signal }));
    const reason = new Error('no longer needed');
    controller.abort(reason);
    assert.equal((await waiting)[1], reason);
  }
});

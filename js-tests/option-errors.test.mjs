// The exact error, class and message, for each option whose meaning the core decides and the
// bindings only read (simulate(), createFetch(), lane(), batch(), Gate, redisStore()): the words a caller
// reads must not change when a decision moves between the two.
import assert from 'node:assert/strict';
import test from 'node:test';
import { Redis as Upstash } from '@upstash/redis';
import { Gate, simulate, createFetch, redisStore } from '../pkg/index.js';

const whole = (field, from, to, got) => `Expected \`${field}\` to be an integer from ${from} to ${to}, got ${got}`;
const lane = (more) => ({ lanes: [{ workers: 1, ...more }] });

test("simulate()'s errors name the field in the caller's words, as a TypeError or a RangeError", () => {
  const cases = [
    [{ snapshots: 0 }, 'RangeError', whole('snapshots', 1, 100000, 0)],
    [{ workers: 1.5 }, 'RangeError', whole('workers', 1, 100000, 1.5)],
    [{ ...lane(), workers: -1 }, 'RangeError', whole('workers', 0, 100000, -1)],
    [{ maxAttempts: 1001 }, 'RangeError', whole('maxAttempts', 1, 1000, 1001)],
    [{ retryBudget: -1 }, 'RangeError', whole('retryBudget', 0, 1000000000, -1)],
    [{ retryBudget: '1' }, 'TypeError', 'Expected `retryBudget` to be a number or null, got string'],
    [{ separateGates: 0 }, 'RangeError', whole('separateGates', 1, 1000, 0)],
    [{ separateGates: '2' }, 'TypeError', 'Expected `separateGates` to be a boolean or a number, got string'],
    [{ processes: 1.5 }, 'RangeError', whole('processes', 1, 1000, 1.5)],
    [{ threads: 1001 }, 'RangeError', whole('threads', 1, 1000, 1001)],
    [{ headers: 'always' }, 'TypeError', "Expected `headers` to be a boolean or 'throttled', got string"],
    [{ headers: null }, 'TypeError', "Expected `headers` to be a boolean or 'throttled', got null"],
    [{ lookups: 3 }, 'TypeError', 'Expected `lookups` to be an object, got number'],
    [{ lookups: { burst: 1, perSecond: 1 } }, 'TypeError', '`lookups.calls` is required'],
    [{ lookups: { calls: 1, perSecond: 1 } }, 'TypeError', '`lookups.burst` is required'],
    [{ lookups: { calls: 1, burst: 1 } }, 'TypeError', '`lookups.perSecond` is required'],
    [{ lookups: { calls: -1, burst: 1, perSecond: 1 } }, 'RangeError', whole('lookups.calls', 0, 100000, -1)],
    [{ lookups: { calls: 1, burst: 0, perSecond: 1 } }, 'RangeError', '`lookups.burst` must be a finite number >= 1, got 0'],
    [{ lookups: { calls: 1, burst: 1, perSecond: '1' } }, 'TypeError', 'Expected `lookups.perSecond` to be a number, got string'],
    [{ lookups: { calls: 1, burst: 1, perSecond: 1, name: 'x' } }, 'TypeError', 'Unknown option `lookups.name`; known options: calls, burst, perSecond'],
    [{ burst: 0 }, 'RangeError', '`burst` must be a finite number >= 1, got 0'],
    [{ perSecond: -1 }, 'RangeError', '`perSecond` must be a finite number > 0 (at least 1.2e-13: one token per 2^53 ms), got -1'],
    [{ retryAfterMs: -1 }, 'RangeError', '`retryAfterMs` must be a finite number >= 0, got -1'],
    [{ lanes: 3 }, 'TypeError', 'Expected `lanes` to be an array, got number'],
    [{ lanes: [3] }, 'TypeError', 'Expected `lanes[0]` to be an object, got number'],
    [{ lanes: [{}] }, 'TypeError', '`lanes[0].workers` is required'],
    [{ lanes: [{ workers: 1 }, { workers: 0 }] }, 'RangeError', whole('lanes[1].workers', 1, 100000, 0)],
    [lane({ snapshots: 1.5 }), 'RangeError', whole('lanes[0].snapshots', 1, 100000, 1.5)],
    [lane({ weight: 0 }), 'RangeError', '`lanes[0].weight` must be a finite number greater than 0, got 0'],
    [lane({ startMs: -1 }), 'RangeError', '`lanes[0].startMs` must be a finite number >= 0, got -1'],
    [lane({ weight: '2' }), 'TypeError', 'Expected `lanes[0].weight` to be a number, got string'],
    [lane({ wieght: 2 }), 'TypeError', 'Unknown option `lanes[0].wieght`; known options: name, weight, workers, snapshots, startMs'],
    [{ ...lane(), threads: 2 }, 'TypeError', "`lanes` wait in one shared gate's queue: leave out `shared: false`, `separateGates`, `processes` and `threads`"],
    [{ ...lane(), lookups: { calls: 1, burst: 1, perSecond: 1 } }, 'TypeError', 'Choose one of `lanes` and `lookups`'],
    [{ shared: true, separateGates: true }, 'TypeError', 'Choose one of `shared`, `separateGates`, `processes` and `threads`: one gate, one per process, processes sharing a store, or threads sharing memory'],
    [{ cache: 1 }, 'TypeError', 'Expected `cache` to be a boolean or an object, got number'],
    [{ cache: { ttlMs: -1 } }, 'RangeError', '`cache.ttlMs` must be a finite number >= 0, got -1'],
    [{ cache: { ttlMs: '5' } }, 'TypeError', 'Expected `cache.ttlMs` to be a number, got string'],
    [{ cache: { ttl: 5 } }, 'TypeError', 'Unknown option `cache.ttl`; known options: ttlMs, staleForMs'],
    [{ cache: { staleForMs: -1 } }, 'RangeError', '`cache.staleForMs` must be a finite number >= 0, got -1'],
    [{ quota: 5 }, 'TypeError', 'Expected `quota` to be an object, got number'],
    [{ quota: {} }, 'TypeError', '`quota.limit` is required'],
    [{ quota: { limit: 0 } }, 'RangeError', '`quota.limit` must be a finite number greater than 0, got 0'],
    [{ quota: { limit: '5' } }, 'TypeError', 'Expected `quota.limit` to be a number, got string'],
    [{ quota: { limit: 5, days: -1 } }, 'RangeError', '`quota.days` must be a finite number greater than 0, got -1'],
    [{ quota: { limit: 5, days: 1, periodMs: 1 } }, 'TypeError', 'Choose one of `quota.periodMs` and `quota.days`'],
    [{ quota: { limit: 5, used: -1 } }, 'RangeError', '`quota.used` must be a finite number >= 0, got -1'],
    [{ quota: { limit: 5, periods: 1.5 } }, 'RangeError', '`quota.periods` must be a whole number from 1 to 12, got 1.5'],
    [{ quota: { limit: 5, periods: 13 } }, 'RangeError', '`quota.periods` must be a whole number from 1 to 12, got 13'],
    [{ quota: { limit: 5, reserve: 1 } }, 'RangeError', '`quota.reserve` must be a number from 0 up to (not including) 1, got 1'],
    [{ quota: { limit: 5, costs: 3 } }, 'TypeError', 'Expected `quota.costs` to be an object of route patterns to credits, got number'],
    [{ quota: { limit: 5, month: 1 } }, 'TypeError', 'Unknown option `quota.month`; known options: limit, periodMs, days, used, periods, spread, reserve, burstMs, refreshMs, costs'],
    [{ quota: { limit: 5, spread: true }, threads: 2 }, 'RangeError', '`quota.spread` is for one process for now: not with `processes` or `threads`'],
    [{ polls: 0 }, 'RangeError', whole('polls', 1, 100000, 0)],
    [{ workers: 100, snapshots: 100, polls: 11 }, 'RangeError', '`polls` must be an integer from 1 with workers x snapshots x polls at most 100000, got 11'],
    [{ pollEveryMs: -1 }, 'RangeError', '`pollEveryMs` must be a finite number >= 0, got -1'],
  ];
  for (const [options, name, message] of cases) {
    assert.throws(() => simulate(options), { name, message }, JSON.stringify(options));
  }
});

test("simulate()'s forms mean what they say: separateGates true is two processes, retryBudget null is none, headers 'throttled' only on 429s", () => {
  const strip = ({ timeline, ...r }) => r;
  const split = (separateGates) => strip(simulate({ separateGates, workers: 8 }));
  assert.deepEqual(split(true), split(2));
  assert.notDeepEqual(split(3), split(2), 'a number is that many processes');
  assert.deepEqual(split(false), strip(simulate({ workers: 8 })));
  assert.deepEqual(strip(simulate({ retryBudget: null, alwaysReject: true })), strip(simulate({ alwaysReject: true })));
  assert.notDeepEqual(strip(simulate({ retryBudget: 0, alwaysReject: true })), strip(simulate({ alwaysReject: true })), 'a budget of 0 is one');
  const learned = (headers) => strip(simulate({ learn: true, headers, workers: 32, snapshots: 8 }));
  assert.notDeepEqual(learned('throttled'), learned(true), 'headers on 429s only learn otherwise than on every answer');
});

test("createFetch(), lane(), batch() and Gate word their whole numbers and required fields the same way", () => {
  const cases = [
    [() => createFetch({ usageUrl: '/usage' }), 'TypeError', 'Expected `usageUrl` to be an absolute http: or https: URL, got one that does not start with http:// or https://'],
    [() => createFetch({ usageUrl: 'https://a b/usage' }), 'TypeError', 'Expected `usageUrl` to be an absolute http: or https: URL, got one with no host, or with a space or control character'],
    [() => createFetch({ maxWaitMs: -1 }), 'RangeError', '`maxWaitMs` must be a finite number >= 0, got -1'],
    [() => createFetch({ maxWaiting: 1.5 }), 'RangeError', whole('maxWaiting', 0, 1000000000, 1.5)],
    [() => createFetch({ retry: { maxAttempts: 0 } }), 'RangeError', whole('retry.maxAttempts', 1, 100, 0)],
    [() => createFetch({ rate: { burst: 2 } }), 'TypeError', '`rate.perSecond` is required'],
    [() => createFetch({ rate: { perSecond: 2 } }), 'TypeError', '`rate.burst` is required'],
    [() => createFetch().lane({ maxWaiting: -1 }), 'RangeError', whole('lane.maxWaiting', 0, 1000000000, -1)],
    [() => createFetch().lane({ weight: 0 }), 'RangeError', 'Expected `lane.weight` to be a positive finite number, got 0'],
    [() => createFetch().batch({ deadlineMs: 10, retryBudget: 0.5 }), 'RangeError', whole('batch.retryBudget', 0, 1000000000, 0.5)],
    [() => createFetch().batch({ retryBudget: 1 }), 'TypeError', '`batch.deadlineMs` is required'],
    [() => createFetch().lane({ weight: Infinity }), 'RangeError', 'Expected `lane.weight` to be a positive finite number, got Infinity'],
    [() => new Gate({ burst: 2, perSecond: 2 }).admitAt(NaN), 'RangeError', 'Expected `now` to be a finite number, got NaN'],
    [() => new Gate({ burst: 2, perSecond: 2 }).defer(-Infinity, 1), 'RangeError', 'Expected `now` to be a finite number, got -Infinity'],
    [() => new Gate({ burst: 2, perSecond: 2 }).defer(0, -1), 'RangeError', '`delayMs` must be a finite number >= 0, got -1'],
    [() => new Gate({ burst: 2 }), 'TypeError', '`rate.perSecond` is required'],
    [() => new Gate({ burst: 2, perSecond: 2, learn: true }), 'TypeError', "`rate.learn` is for createFetch's `rate` only"],
  ];
  for (const [make, name, message] of cases) {
    assert.throws(make, { name, message }, make.toString());
  }
});

test("redisStore()'s options are refused in the same words", () => {
  const client = { evalsha() {}, script() {} };
  const cases = [
    [{ prefix: '' }, 'TypeError', 'Expected `prefix` to be a non-empty string without braces'],
    [{ prefix: 'a{b}' }, 'TypeError', 'Expected `prefix` to be a non-empty string without braces'],
    [{ prefix: 3 }, 'TypeError', 'Expected `prefix` to be a string, got number'],
    [{ onFailure: 'maybe' }, 'TypeError', "Expected `onFailure` to be 'local' or 'closed'"],
    [{ timeoutMs: 0 }, 'RangeError', '`timeoutMs` must be a finite number greater than 0, got 0'],
    [{ retryMs: -1 }, 'RangeError', '`retryMs` must be a finite number greater than 0, got -1'],
    [{ localShare: 2 }, 'RangeError', '`localShare` must be a number greater than 0 and at most 1, got 2'],
    [{ ttl: 1 }, 'TypeError', 'Unknown option `redisStore options.ttl`; known options: prefix, timeoutMs, onFailure, localShare, retryMs'],
  ];
  for (const [options, name, message] of cases) {
    assert.throws(() => redisStore(client, options), { name, message }, JSON.stringify(options));
  }
  // What it got, never silently taken: a node-redis client never connected would fail every
  // command and leave each process admitting alone.
  const expected = 'Expected an ioredis, node-redis or @upstash/redis client (with script loading and evalsha), got ';
  for (const [given, got] of [
    [{}, 'an object without `script` and `evalsha` (ioredis) or `scriptLoad` and `evalSha` (node-redis)'],
    [null, 'null'],
    [undefined, 'undefined'],
    ['redis://127.0.0.1', 'string'],
    [{ evalSha() {}, scriptLoad() {}, isOpen: false }, 'a node-redis client that is not connected (call `await client.connect()` first)'],
    // @upstash/redis parses replies that read as JSON unless told not to.
    [new Upstash({ url: 'http://127.0.0.1:9', token: 't' }), 'an @upstash/redis client that parses replies (make it with `automaticDeserialization: false`)'],
  ]) {
    assert.throws(() => redisStore(given), { name: 'TypeError', message: expected + got }, got);
  }
  redisStore({ evalSha() {}, scriptLoad() {}, isOpen: true });
  redisStore(new Upstash({ url: 'http://127.0.0.1:9', token: 't', automaticDeserialization: false }));
});

test('retry, retry.budget and cache: what a flag means, and what is refused', () => {
  const off = 'off: observe and admit only; the response goes back as it is';
  const said = (options) => {
    const d = createFetch(options).describe();
    return [d.retry === off ? 'off' : 'on', d.retryBudget.startsWith('shared per gate: ') ? d.retryBudget.split(' ')[3] : d.retryBudget, d.cache === undefined ? 'no cache' : 'cache'];
  };
  assert.deepEqual(said({}), ['on', '500', 'no cache']);
  assert.deepEqual(said({ retry: true, cache: false }), ['on', '500', 'no cache']);
  assert.deepEqual(said({ retry: false, cache: true }), ['off', 'none', 'cache']);
  assert.deepEqual(said({ retry: {}, cache: {} }), ['on', '500', 'cache']);
  assert.deepEqual(said({ retry: { budget: false } }), ['on', 'none', 'no cache']);
  assert.deepEqual(said({ retry: { budget: { capacity: 5 } } }), ['on', '5', 'no cache']);
  const cases = [
    [{ retry: 'yes' }, 'TypeError', 'Expected `retry` to be a boolean or an object, got string'],
    [{ retry: null }, 'TypeError', 'Expected `retry` to be a boolean or an object, got null'],
    [{ retry: { budget: true } }, 'TypeError', 'Expected `retry.budget` to be false or an object, got boolean'],
    [{ retry: { budget: 3 } }, 'TypeError', 'Expected `retry.budget` to be false or an object, got number'],
    [{ retry: { budget: { capacity: 0 } } }, 'RangeError', '`retry.budget.capacity` must be a finite number >= 1, got 0'],
    [{ retry: { baseMs: -1 } }, 'RangeError', /^`retry\.baseMs`/],
    [{ cache: [] }, 'TypeError', 'Expected `cache` to be a boolean or an object, got an array'],
  ];
  for (const [options, name, message] of cases) {
    assert.throws(() => createFetch(options), { name, message }, JSON.stringify(options));
  }
  assert.throws(() => createFetch().lane({ retry: { budget: false } }), {
    name: 'TypeError',
    message: "A lane's retries draw on its wrapper's retry budget: set `retry.budget` in createFetch, not in lane()",
  });
  assert.throws(() => createFetch().lane({ retry: 1 }), { name: 'TypeError', message: 'Expected `lane.retry` to be a boolean or an object, got number' });
});

test("the main module's options reader: unknown keys, wrong types and list items in serde's words, the first bad key in the object's own order", () => {
  const client = { evalsha() {}, script() {} };
  const known = {
    options: 'rate, fetch, retry, onEvent, usageUrl, store, maxWaitMs, maxWaiting, meter, threads, typedErrors, cache, quota',
    retry: 'maxAttempts, timeBudgetMs, attemptTimeoutMs, baseMs, capMs, statuses, methods, budget',
    'retry.budget': 'capacity, throttleCost, transientCost, successRefill',
    rate: 'burst, perSecond, learn',
    quota: 'spread, reserve, burstMs, refreshMs, costs',
    cache: 'maxBytes, maxEntryBytes, defaultTtlMs, staleForMs, keyHeaders',
    lane: 'name, weight, reserve, retry, maxWaitMs, maxWaiting',
    'lane.retry': 'maxAttempts, timeBudgetMs, attemptTimeoutMs, baseMs, capMs, statuses, methods, budget',
    batch: 'deadlineMs, retryBudget',
  };
  const unknown = (what, key) => `Unknown option \`${what}.${key}\`; known options: ${known[what]}`;
  const statuses = 'Expected `retry.statuses` to hold HTTP status codes (integers from 100 to 599)';
  const methods = 'Expected `retry.methods` to hold HTTP method names (tokens)';
  const cases = [
    // Unknown keys, each object's known ones in their order; a key spelled in snake case is one.
    [() => createFetch({ burst: 2 }), 'TypeError', unknown('options', 'burst')],
    [() => createFetch({ max_wait_ms: 5 }), 'TypeError', unknown('options', 'max_wait_ms')],
    [() => createFetch({ 1: 2 }), 'TypeError', unknown('options', '1')],
    [() => createFetch({ retry: { attempts: 3 } }), 'TypeError', unknown('retry', 'attempts')],
    [() => createFetch({ retry: { budget: { size: 5 } } }), 'TypeError', unknown('retry.budget', 'size')],
    [() => createFetch({ rate: { burst: 2, perSecond: 2, perMinute: 1 } }), 'TypeError', unknown('rate', 'perMinute')],
    [() => createFetch({ quota: { limit: 5 } }), 'TypeError', unknown('quota', 'limit')],
    [() => createFetch({ cache: { maxbytes: 5 } }), 'TypeError', unknown('cache', 'maxbytes')],
    [() => createFetch().lane({ wieght: 2 }), 'TypeError', unknown('lane', 'wieght')],
    [() => createFetch().lane({ retry: { cap: 5 } }), 'TypeError', unknown('lane.retry', 'cap')],
    [() => createFetch().batch({ deadlineMs: 10, budget: 1 }), 'TypeError', unknown('batch', 'budget')],
    [() => new Gate({ burst: 2, perSecond: 2, rate: 1 }), 'TypeError', unknown('rate', 'rate')],
    // Wrong types: what the field takes and the type given, never the value.
    [() => createFetch({ maxWaitMs: '5' }), 'TypeError', 'Expected `maxWaitMs` to be a number, got string'],
    [() => createFetch({ maxWaiting: 5n }), 'TypeError', 'Expected `maxWaiting` to be a number, got bigint'],
    [() => createFetch({ usageUrl: new URL('https://x.test/usage') }), 'TypeError', 'Expected `usageUrl` to be a string, got object'],
    [() => createFetch({ threads: 1 }), 'TypeError', 'Expected `threads` to be a boolean, got number'],
    [() => createFetch({ typedErrors: null }), 'TypeError', 'Expected `typedErrors` to be a boolean, got null'],
    [() => createFetch({ fetch: {} }), 'TypeError', 'Expected `fetch` to be a function, got object'],
    [() => createFetch({ onEvent: [] }), 'TypeError', 'Expected `onEvent` to be a function, got an array'],
    [() => createFetch({ rate: { burst: 2, perSecond: Symbol('s') } }), 'TypeError', 'Expected `rate.perSecond` to be a number, got symbol'],
    [() => createFetch({ rate: { burst: 2, perSecond: 2, learn: 'yes' } }), 'TypeError', 'Expected `rate.learn` to be a boolean, got string'],
    [() => createFetch({ rate: null }), 'TypeError', "Expected `rate` to be 'auto' or { burst, perSecond }, got null"],
    [() => createFetch({ rate: 'fast' }), 'TypeError', "Expected `rate` to be 'auto' or { burst, perSecond }, got string"],
    [() => createFetch({ retry: { maxAttempts: '3' } }), 'TypeError', 'Expected `retry.maxAttempts` to be a number, got string'],
    [() => createFetch({ retry: { budget: { capacity: null } } }), 'TypeError', 'Expected `retry.budget.capacity` to be a number, got null'],
    [() => createFetch({ quota: { spread: 1 } }), 'TypeError', 'Expected `quota.spread` to be a boolean, got number'],
    [() => createFetch({ quota: { costs: { '/a': '2' } } }), 'TypeError', 'Expected `quota.costs` to be an object of route patterns to credits, got string'],
    [() => createFetch({ quota: [] }), 'TypeError', 'Expected `quota` to be an object, got an array'],
    [() => createFetch({ cache: { staleForMs: () => 1 } }), 'TypeError', 'Expected `cache.staleForMs` to be a number, got function'],
    [() => createFetch().lane({ name: 3 }), 'TypeError', 'Expected `lane.name` to be a string, got number'],
    [() => createFetch().lane({ reserve: 'yes' }), 'TypeError', 'Expected `lane.reserve` to be a boolean, got string'],
    [() => createFetch().batch({ deadlineMs: '10' }), 'TypeError', 'Expected `batch.deadlineMs` to be a number, got string'],
    [() => createFetch().batch(), 'TypeError', 'Expected `batch options` to be an object, got undefined'],
    [() => createFetch(null), 'TypeError', 'Expected `options` to be an object, got null'],
    [() => createFetch().lane([]), 'TypeError', 'Expected `lane options` to be an object, got an array'],
    [() => redisStore(client, () => 1), 'TypeError', 'Expected `redisStore options` to be an object, got function'],
    [() => redisStore(client, { localShare: '1' }), 'TypeError', 'Expected `localShare` to be a number, got string'],
    // Lists: an array, each item of its kind.
    [() => createFetch({ retry: { statuses: 429 } }), 'TypeError', 'Expected `retry.statuses` to be an array, got number'],
    [() => createFetch({ retry: { statuses: [429, 600] } }), 'TypeError', statuses],
    [() => createFetch({ retry: { statuses: [429.5] } }), 'TypeError', statuses],
    [() => createFetch({ retry: { statuses: ['429'] } }), 'TypeError', statuses],
    [() => createFetch({ retry: { methods: 'GET' } }), 'TypeError', 'Expected `retry.methods` to be an array, got string'],
    [() => createFetch({ retry: { methods: ['GET', 'GET POST'] } }), 'TypeError', methods],
    [() => createFetch({ cache: { keyHeaders: 'X-Odds-Key' } }), 'TypeError', 'Expected `cache.keyHeaders` to be an array, got string'],
    [() => createFetch({ cache: { keyHeaders: ['X-Odds-Key', 'X Odds'] } }), 'TypeError', 'Expected `cache.keyHeaders` to hold header names (tokens)'],
    [() => createFetch({ cache: { keyHeaders: [7] } }), 'TypeError', 'Expected `cache.keyHeaders` to hold header names (tokens)'],
    [() => createFetch().lane({ retry: { methods: [1] } }), 'TypeError', 'Expected `lane.retry.methods` to hold HTTP method names (tokens)'],
    // Unknown keys are found first, wherever they are; then the first bad key in the object's order.
    [() => createFetch({ maxWaitMs: null, bogus: 1 }), 'TypeError', unknown('options', 'bogus')],
    [() => createFetch({ retry: { maxAttempts: null, bogus: 1 } }), 'TypeError', unknown('retry', 'bogus')],
    [() => createFetch({ maxWaitMs: null, threads: 1 }), 'TypeError', 'Expected `maxWaitMs` to be a number, got null'],
    [() => createFetch({ threads: 1, maxWaitMs: null }), 'TypeError', 'Expected `threads` to be a boolean, got number'],
    [() => createFetch({ retry: { statuses: [1], baseMs: 'x' } }), 'TypeError', statuses],
    [() => createFetch({ retry: { baseMs: 'x', statuses: [1] } }), 'TypeError', 'Expected `retry.baseMs` to be a number, got string'],
    [() => createFetch().lane({ maxWaiting: null, name: 1 }), 'TypeError', 'Expected `lane.maxWaiting` to be a number, got null'],
    [() => createFetch().lane({ name: 1, maxWaiting: null }), 'TypeError', 'Expected `lane.name` to be a string, got number'],
    [() => redisStore(client, { retryMs: null, prefix: 1 }), 'TypeError', 'Expected `retryMs` to be a number, got null'],
  ];
  for (const [make, name, message] of cases) {
    assert.throws(make, { name, message }, make.toString());
  }
  // A key whose value is undefined is left out: an unknown one too.
  const left = { rate: undefined, bogus: undefined, retry: { baseMs: undefined, nope: undefined }, cache: { maxBytes: undefined } };
  assert.equal(createFetch(left).describe().rate, null);
  assert.match(createFetch().lane({ weight: undefined, other: undefined }).describe().lane, /^lane "lane-\d+", of weight 1:/);
  assert.equal(typeof createFetch().batch({ deadlineMs: 10, retryBudget: undefined, other: undefined }), 'function');
  assert.equal(new Gate({ burst: 2, perSecond: 2, learn: undefined, other: undefined }).blockedUntil, 0);
  // What was read is what the gate uses: lists, the budget's fields left out at their defaults.
  const d = createFetch({ retry: { statuses: [429], methods: ['GET', 'PATCH'], budget: { capacity: 40 } } }).describe();
  assert.match(d.retry, /^on for 429 and network failures/);
  assert.match(d.retry, /methods GET, PATCH/);
  assert.match(d.retryBudget, /^shared per gate: 40 tokens, a 429 retry costs 5, a transient one 10/);
});

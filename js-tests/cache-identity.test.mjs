// Never a wrong answer (#48), wired through the package: the cache answers a caller only with
// bytes fetched under its own credentials, honours Vary, and lets a caller that asks to go
// upstream go. The rules are tested on the virtual clock (tests/cache_identity.rs); here each
// row of the issue runs against a fake API that says who asked (a real node:http server on
// 127.0.0.1), and calls drawn at random check the same live in one thread, across 4 threads and
// across 4 processes through a real redis-server.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createFetch } from '../pkg/index.js';
import { startIdentityApi, seenIdentity, identity, seeded, drawCalls, makeCalls } from './support/identity-api.mjs';
import { startRedis } from './support/redis-server.mjs';
import { group, processMember, threadMember } from './support/cache-group.mjs';

const MARK = 'x-odds-gate-cache';
const rate = { burst: 200, perSecond: 200 };
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
// A landed answer is kept once its copy is read, after the caller has it: wait until `n`
// entries are (5 ms steps, 1 s at most).
async function kept(fetchImpl, n) {
  for (let i = 0; i < 200 && fetchImpl.stats().cache.entries < n; i++) await sleep(5);
}

// Caller A then caller B on one URL, one after the other (B could find A's entry) and at once
// (B could join A's request): what B's answer says of who asked, and how it came.
async function twoCallers(api, fetchImpl, path, initA, initB) {
  const url = `${api.baseUrl}${path}`;
  const a = await fetchImpl(url, initA);
  await a.text();
  await sleep(20); // the copy is kept once read
  const b = await fetchImpl(url, initB);
  const later = { seen: JSON.parse(await b.text()), mark: b.headers.get(MARK) };
  const [a2, b2] = await Promise.all([fetchImpl(`${url}&again`, initA), fetchImpl(`${url}&again`, initB)]);
  await a2.text();
  const atOnce = { seen: JSON.parse(await b2.text()), mark: b2.headers.get(MARK) };
  return { later, atOnce };
}

const rows = [
  ['X-API-Key \'\' + Authorization: Bearer A, then Bearer B',
    { headers: { 'X-API-Key': '', Authorization: 'Bearer A' } }, { headers: { 'X-API-Key': '', Authorization: 'Bearer B' } }],
  ['the same X-API-Key, another Authorization',
    { headers: { 'X-API-Key': 'k', Authorization: 'Bearer A' } }, { headers: [['x-api-key', 'k'], ['authorization', 'Bearer B']] }],
  ['Cookie: session=A / session=B only',
    { headers: { Cookie: 'session=A' } }, { headers: new Headers({ cookie: 'session=B' }) }],
  ['the same X-API-Key, another Cookie',
    { headers: { 'X-API-Key': 'k', Cookie: 'session=A' } }, { headers: { 'x-api-key': 'k', COOKIE: 'session=B' } }],
  ['a custom credential header only (X-Odds-Key: A / B)',
    { headers: { 'X-Odds-Key': 'A' } }, { headers: { 'X-Odds-Key': 'B' } }],
];

test('a caller never gets an answer fetched under another credential, in every place a request carries one', async () => {
  const api = await startIdentityApi();
  try {
    for (const [row, initA, initB] of rows) {
      const fetchImpl = createFetch({ rate, cache: true });
      const { later, atOnce } = await twoCallers(api, fetchImpl, '/v1/odds?ttl=30', initA, initB);
      const mine = identity(new Headers(initB.headers).entries(), null);
      for (const [when, got] of Object.entries({ later, atOnce })) {
        assert.equal(seenIdentity(JSON.stringify(got.seen)), mine, `${row}, ${when}`);
        assert.equal(got.mark, null, `${row}, ${when}: B's own request`);
      }
    }
    // The same caller again is answered from the cache: the rows above kept what they could.
    const fetchImpl = createFetch({ rate, cache: true });
    const init = { headers: { Cookie: 'session=A' } };
    await (await fetchImpl(`${api.baseUrl}/v1/odds?ttl=30`, init)).text();
    await kept(fetchImpl, 1);
    assert.equal((await fetchImpl(`${api.baseUrl}/v1/odds?ttl=30`, init)).headers.get(MARK), 'hit');
  } finally {
    await api.close();
  }
});

test('cache.keyHeaders names a custom credential header: each value its own entry', async () => {
  const api = await startIdentityApi();
  try {
    const fetchImpl = createFetch({ rate, cache: { keyHeaders: ['X-Odds-Key'] } });
    const url = `${api.baseUrl}/v1/odds?ttl=30`;
    const [initA, initB] = [{ headers: { 'X-Odds-Key': 'A' } }, { headers: { 'x-odds-key': 'B' } }];
    const { later } = await twoCallers(api, fetchImpl, '/v1/odds?ttl=30', initA, initB);
    assert.equal(later.seen.seen['x-odds-key'], 'B');
    await kept(fetchImpl, 4);
    assert.equal((await fetchImpl(url, initA)).headers.get(MARK), 'hit');
    assert.throws(() => createFetch({ cache: { keyHeaders: ['X Odds'] } }), (e) => e instanceof TypeError && /cache\.keyHeaders/.test(e.message));
    assert.throws(() => createFetch({ cache: { keyHeaders: 'x-odds-key' } }), TypeError);
  } finally {
    await api.close();
  }
});

test('Vary: the headers it names must match, and Vary: * is never reused', async () => {
  const api = await startIdentityApi();
  try {
    const fetchImpl = createFetch({ rate, cache: true });
    const headers = (language, cookie = 'session=A') => ({ headers: { 'X-API-Key': 'k', 'Accept-Language': language, Cookie: cookie } });
    const get = async (path, init) => {
      const r = await fetchImpl(`${api.baseUrl}${path}`, init);
      return { body: JSON.parse(await r.text()), mark: r.headers.get(MARK) };
    };
    // Vary: Accept-Language: an English answer is not a German caller's, at once or later.
    const path = '/v1/odds?ttl=30&vary=Accept-Language';
    const [en, de] = await Promise.all([get(path, headers('en')), get(path, headers('de'))]);
    assert.deepEqual([en.body.language, de.body.language], ['en', 'de']);
    await kept(fetchImpl, 1);
    const again = await get(path, headers('en'));
    assert.deepEqual([again.body.language, again.mark], ['en', 'hit']);
    const fr = await get(path, headers('fr'));
    assert.deepEqual([fr.body.language, fr.mark], ['fr', null]);
    // Vary: Cookie, the same key.
    const cookies = '/v1/odds?ttl=30&vary=Cookie';
    await (await fetchImpl(`${api.baseUrl}${cookies}`, headers('en', 'session=A'))).text();
    await sleep(20);
    const other = await get(cookies, headers('en', 'session=B'));
    assert.deepEqual([other.body.seen.cookie, other.mark], ['session=B', null]);
    // Vary: *: every call its own request, at once and later.
    const star = '/v1/odds?ttl=30&vary=*';
    const before = api.requests();
    const both = await Promise.all([get(star, headers('en')), get(star, headers('en'))]);
    await sleep(20);
    const third = await get(star, headers('en'));
    assert.deepEqual([...both, third].map((r) => r.mark), [null, null, null]);
    assert.equal(api.requests() - before, 3);
  } finally {
    await api.close();
  }
});

test('a caller that asks to go upstream goes: no-store, no-cache, max-age=0, Range, conditionals', async () => {
  const api = await startIdentityApi();
  try {
    const fetchImpl = createFetch({ rate, cache: true });
    const url = `${api.baseUrl}/v1/odds?ttl=30`;
    const key = { 'X-API-Key': 'k' };
    await (await fetchImpl(url, { headers: key })).text();
    await kept(fetchImpl, 1);
    assert.equal((await fetchImpl(url, { headers: key })).headers.get(MARK), 'hit');
    const asks = [
      { headers: key, cache: 'no-store' },
      { headers: key, cache: 'no-cache' },
      { headers: key, cache: 'reload' },
      { headers: { ...key, 'Cache-Control': 'no-cache' } },
      { headers: { ...key, 'Cache-Control': 'max-age=0' } },
      { headers: { ...key, 'If-None-Match': '"v1"' } },
    ];
    for (const init of asks) {
      const before = api.requests();
      const r = await fetchImpl(url, init);
      await r.text();
      assert.equal(r.headers.get(MARK), null, JSON.stringify(init));
      assert.equal(api.requests() - before, 1, JSON.stringify(init));
    }
    // A Request that says no-store, and a Range: the server's own partial answer.
    const request = new Request(url, { headers: key, cache: 'no-store' });
    assert.equal((await fetchImpl(request)).headers.get(MARK), null);
    const part = await fetchImpl(url, { headers: { ...key, Range: 'bytes=0-3' } });
    assert.deepEqual([part.status, await part.text(), part.headers.get(MARK)], [206, '{"n"', null]);
    // Two callers with no-cache at once: each its own request (never joined).
    const before = api.requests();
    await Promise.all([1, 2].map(async () => (await fetchImpl(url, { headers: key, cache: 'no-cache' })).text()));
    assert.equal(api.requests() - before, 2);
  } finally {
    await api.close();
  }
});

// Calls drawn at random (support/identity-api.mjs), in rounds 50 ms apart so later rounds find
// entries and requests in flight: every answer is the caller's own; some came from the cache.
function checkDraws(results, where) {
  const wrong = results.filter((r) => !r.mine);
  assert.equal(wrong.length, 0, `${where}: ${wrong.length} answers fetched under other credentials`);
  assert.ok(results.every((r) => r.status === 200), where);
  const cached = results.filter((r) => r.mark !== null).length;
  console.log(`${where}: ${cached} of ${results.length} from the cache`);
  assert.ok(cached >= results.length / 10, `${where}: only ${cached} of ${results.length} from the cache`);
}

const NAMED = ['x-odds-key'];
const ROUNDS = 4;

test('drawn calls, one thread: no caller ever gets bytes fetched under other credentials', async () => {
  const api = await startIdentityApi();
  try {
    for (const seed of [1, 2, 3]) {
      const random = seeded(seed);
      const fetchImpl = createFetch({ rate, cache: { keyHeaders: NAMED } });
      const results = [];
      for (let round = 0; round < ROUNDS; round++) {
        results.push(...await makeCalls(fetchImpl, api.baseUrl, drawCalls(random, `/v1/s${seed}`, 60), NAMED));
        await sleep(50);
      }
      checkDraws(results, `seed ${seed}`);
    }
  } finally {
    await api.close();
  }
});

async function drawAcross(g, api, where) {
  const random = seeded(7);
  const results = [];
  for (let round = 0; round < ROUNDS; round++) {
    const replies = await g.all({ op: 'draw', baseUrl: api.baseUrl, calls: drawCalls(random, '/v1/shared', 30), named: NAMED });
    results.push(...replies.flat());
    await sleep(50);
  }
  checkDraws(results, where);
}

test('drawn calls across 4 threads sharing the cache: no caller gets bytes fetched under other credentials', async () => {
  const api = await startIdentityApi();
  const g = await group(threadMember, 4, { rate, cache: { keyHeaders: NAMED } });
  try {
    await drawAcross(g, api, '4 threads');
  } finally {
    await g.quit();
    await api.close();
  }
});

test('drawn calls across 4 processes sharing the cache through Redis: no caller gets bytes fetched under other credentials', async () => {
  const redis = await startRedis();
  const api = await startIdentityApi();
  const g = await group(processMember, 4, { rate, redisPort: redis.port, cache: { keyHeaders: NAMED } });
  try {
    await drawAcross(g, api, '4 processes');
  } finally {
    await g.quit();
    await api.close();
    await redis.stop();
  }
});

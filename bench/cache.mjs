// One request per snapshot (#36), measured: `workers` workers poll the same `snapshots` snapshots
// every `everyMs` for `forMs` against the fake Odds API (burst 2 at 2/s, ttl_seconds 5), side by
// side in one run: odds-gate without a cache, odds-gate with `cache: true`, and a hand-written
// Map cache (what users write today: a Map of answers with their ttl_seconds, in front of
// odds-gate, no sharing of requests in flight). Prints requests upstream against the ideal (one
// per snapshot per lifetime), 429s, calls answered and given up (every call still waiting 5 s
// after the run is aborted), and the answered callers' waits (p50, p99; odds-gate's cache also
// the p99 of the calls a fresh entry answered, marked `hit`). Then the same with the cache
// shared: the 32 workers split over 4 processes through a real redis-server, and over 4 worker
// threads of one process (bench/cache-member.mjs is one of them).
// `node bench/run.mjs --only cache` writes its table into BENCHMARKS.md; `node bench/cache.mjs
// [forMs]` prints it (default 60,000 ms a row; CI runs none of it).
import { setMaxListeners } from 'node:events';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';
import { Worker, isMainThread } from 'node:worker_threads';
import { Agent, fetch as undiciFetch, interceptors } from 'undici';
import { createFetch } from '../pkg/index.js';
import { startFakeOddsApi } from '../js-tests/support/fake-odds-api.mjs';
import { startRedis } from '../js-tests/support/redis-server.mjs';
import { fix, percentile, textTable } from './lib/util.mjs';

export const workers = 32;
const snapshots = 10;
const everyMs = 500;
const ttlSeconds = 5;
export const rate = { burst: 2, perSecond: 2 };

/** A Map of answers by URL, each kept for its body's ttl_seconds, in front of `fetchImpl`. */
function mapCache(fetchImpl) {
  const kept = new Map();
  return async (url, init) => {
    const hit = kept.get(url);
    if (hit && hit.until > performance.now()) return new Response(hit.body, { status: 200 });
    const response = await fetchImpl(url, init);
    if (response.status !== 200) return response;
    const body = await response.text();
    const ttl = JSON.parse(body).ttl_seconds ?? 0;
    kept.set(url, { body, until: performance.now() + ttl * 1000 });
    return new Response(body, { status: 200 });
  };
}

/** odds-gate whose inner fetch is undici's, through an Agent with undici's cache interceptor. */
function undiciCache() {
  const agent = new Agent().compose(interceptors.cache());
  return createFetch({ rate, fetch: (input, init) => undiciFetch(input, { ...init, dispatcher: agent }) });
}

/**
 * Workers `first` to `first + count - 1` (of `workers`) polling through `fetchImpl` for `forMs`:
 * the answered callers' waits, the waits of those a fresh entry answered (`hit`), the calls given
 * up (still waiting 5 s after the run).
 */
export async function poll({ fetchImpl, baseUrl, label, forMs, first = 0, count = workers }) {
  const headers = { 'X-API-Key': `bench-${label}` };
  const waits = [];
  const hits = [];
  let gaveUp = 0;
  const started = performance.now();
  const stop = new AbortController();
  setMaxListeners(0, stop.signal); // every call of the run listens to it
  const stopping = setTimeout(() => stop.abort(), forMs + 5_000);
  const worker = async (w) => {
    // Each worker starts at its own offset and polls every `everyMs` until `forMs` is up.
    await new Promise((resolve) => setTimeout(resolve, (w * everyMs) / workers));
    for (let next = performance.now(); next - started < forMs; next += everyMs) {
      const delay = next - performance.now();
      if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
      if (stop.signal.aborted) break;
      await Promise.all(Array.from({ length: snapshots }, async (_, s) => {
        const asked = performance.now();
        try {
          const response = await fetchImpl(`${baseUrl}/events/e${s}/odds/snapshot`, { headers, signal: stop.signal });
          await response.text();
          const waited = performance.now() - asked;
          waits.push(waited);
          if (response.headers.get('x-odds-gate-cache') === 'hit') hits.push(waited);
        } catch {
          gaveUp++;
        }
      }));
    }
  };
  await Promise.all(Array.from({ length: count }, (_, w) => worker(first + w)));
  clearTimeout(stopping);
  return { waits, hits, gaveUp };
}

/** A row: the server's counts and the callers' waits. */
function row(label, forMs, s, { waits, hits, gaveUp }) {
  const ideal = snapshots * Math.ceil(forMs / (ttlSeconds * 1000));
  return { label, requests: s.attempts, ideal, throttled: s.throttled, answered: waits.length, gaveUp, p50: percentile(waits, 50), p99: percentile(waits, 99), hitP99: percentile(hits, 99), hits: hits.length };
}

async function runRow(forMs, label, make, fake = {}) {
  const api = await startFakeOddsApi({ ...rate, ttlSeconds, ...fake });
  const polled = await poll({ fetchImpl: make(), baseUrl: api.baseUrl, label, forMs });
  const s = api.stats();
  await api.close();
  return row(label, forMs, s, polled);
}

const MEMBER = new URL('./cache-member.mjs', import.meta.url);

/** The workers split over 4 members sharing one cache: processes through Redis, or threads. */
async function runGroup(forMs, label, kind) {
  const api = await startFakeOddsApi({ ...rate, ttlSeconds });
  const redis = kind === 'processes' ? await startRedis() : null;
  const n = 4;
  const members = Array.from({ length: n }, (_, i) => {
    const job = { baseUrl: api.baseUrl, label, forMs, first: (i * workers) / n, count: workers / n, rate, redisPort: redis?.port };
    return kind === 'processes' ? processMember(job) : threadMember(job);
  });
  try {
    await Promise.all(members.map((m) => m.ready));
    const results = await Promise.all(members.map((m) => m.go()));
    const s = api.stats();
    const all = { waits: results.flatMap((r) => r.waits), hits: results.flatMap((r) => r.hits), gaveUp: results.reduce((a, r) => a + r.gaveUp, 0) };
    return row(label, forMs, s, all);
  } finally {
    await Promise.all(members.map((m) => m.end()));
    await api.close();
    await redis?.stop();
  }
}

/** A member answering once: `ready`, then `go()` (its results), then `end()`. */
function member(send, onMessage, end) {
  const queue = [];
  onMessage((message) => queue.shift()?.(message));
  const ready = new Promise((resolve) => queue.push(resolve));
  const go = () => new Promise((resolve) => {
    queue.push(resolve);
    send('go');
  });
  return { ready, go, end };
}

function processMember(job) {
  const proc = spawn(process.execPath, [MEMBER.pathname, JSON.stringify(job)], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: proc.stdout });
  const exited = new Promise((resolve) => proc.once('exit', resolve));
  return member((m) => proc.stdin.write(`${m}\n`), (on) => lines.on('line', (l) => on(JSON.parse(l))), () => (proc.kill(), exited));
}

function threadMember(job) {
  const worker = new Worker(MEMBER, { workerData: job });
  return member((m) => worker.postMessage(m), (on) => worker.on('message', on), () => worker.terminate());
}

const HEAD = ['strategy', 'requests', 'ideal', 'x ideal', '429s', 'answered', 'given up', 'wait p50 (ms)', 'wait p99 (ms)', 'fresh hits', 'their p99 (ms)'];

/** The rows, side by side in one run, each `forMs` long. */
async function measure(forMs) {
  const rows = [];
  rows.push(await runRow(forMs, 'no cache', () => createFetch({ rate })));
  rows.push(await runRow(forMs, 'cache: true', () => createFetch({ rate, cache: true })));
  rows.push(await runRow(forMs, 'hand-written Map', () => mapCache(createFetch({ rate }))));
  rows.push(await runRow(forMs, 'undici cache', undiciCache));
  rows.push(await runRow(forMs, 'undici, max-age=5', undiciCache, { cacheControl: `max-age=${ttlSeconds}` }));
  rows.push(await runGroup(forMs, 'cache, 4 processes, Redis', 'processes'));
  rows.push(await runGroup(forMs, 'cache, 4 worker threads', 'threads'));
  return rows.map((r) => [r.label, r.requests, r.ideal, fix(r.requests / r.ideal), r.throttled, r.answered, r.gaveUp,
    fix(r.p50, 0), fix(r.p99, 0), r.hits || '-', r.hits ? fix(r.hitP99, 0) : '-']);
}

/** bench/run.mjs's entry: one table (`quick`: 20 s a row). */
export async function run({ quick }) {
  const forMs = quick ? 20_000 : 60_000;
  const rows = await measure(forMs);
  const ours = ['cache: true', 'cache, 4 processes, Redis', 'cache, 4 worker threads'].map((label) => rows.find((r) => r[0] === label));
  const meets = (r) => Number(r[3]) <= 1.1 && r[4] === 0 && Number(r[10]) < 50;
  const met = ours.every(meets);
  return [{
    id: 'cache',
    title: 'One request per snapshot: 32 workers polling 10 snapshots (#36)',
    what: `${workers} workers poll the same ${snapshots} snapshots every ${everyMs} ms for ${forMs / 1000} s against the fake ` +
      `Odds API (burst ${rate.burst} at ${rate.perSecond}/s, every snapshot's body says ttl_seconds ${ttlSeconds}), one row ` +
      `after another: odds-gate without a cache; with cache: true; a hand-written Map cache of answers by URL for their ` +
      `ttl_seconds in front of odds-gate (what users write today); undici's cache interceptor (undici from npm, ` +
      `Agent().compose(interceptors.cache())) as odds-gate's inner fetch, where fetchImpl lets it go, once against the ` +
      `API's shape (ttl_seconds only) and once with the fake also sending Cache-Control: max-age=${ttlSeconds}. Requests ` +
      `and 429s are the server's; ideal = one request per snapshot per lifetime (${snapshots} x ` +
      `ceil(${forMs / 1000} / ${ttlSeconds})); a call still waiting 5 s after the run is aborted is given up; waits from ` +
      `each call to its body read; fresh hits are the calls odds-gate's cache answered from a fresh entry (marked hit). ` +
      `Then cache: true shared: the ${workers} workers split over 4 processes, each with a Redis store (a real ` +
      `redis-server), and over 4 worker threads of one process`,
    target: 'cache: true, in one process, over 4 processes through Redis and over 4 worker threads (the issue\'s): requests within 1.1 x the ideal, 0 429s, a fresh hit\'s p99 wait under 50 ms',
    verdict: `${met ? 'met' : 'MISSED'} (${ours.map((r) => `${r[0]}: ${r[3]} x the ideal, ${r[4]} 429s, fresh hits' p99 ${r[10]} ms`).join('; ')})`,
    head: HEAD,
    rows,
    notes: ['undici\'s cache sits below the gate, so each of its hits still waits for a token; it ' +
      'finds entries by origin, method and path (and the request headers an answer\'s Vary names), so two ' +
      'keys share them unless the API sends Vary: X-API-Key'],
  }];
}

if (isMainThread && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const forMs = Number(process.argv[2] ?? 60_000);
  console.log(`${workers} workers polling ${snapshots} snapshots every ${everyMs} ms for ${forMs / 1000} s; ttl_seconds ${ttlSeconds}; burst ${rate.burst} at ${rate.perSecond}/s`);
  console.log(textTable(HEAD, await measure(forMs)));
}

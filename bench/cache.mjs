// One request per snapshot (#36), measured: `workers` workers poll the same `snapshots` snapshots
// every `everyMs` for `forMs` against the fake Odds API (burst 2 at 2/s, ttl_seconds 5), side by
// side in one run: odds-gate without a cache, odds-gate with `cache: true`, and a hand-written
// Map cache (what users write today: a Map of answers with their ttl_seconds, in front of
// odds-gate, no sharing of requests in flight). Prints requests upstream against the ideal (one
// per snapshot per lifetime), 429s, calls answered and given up (every call still waiting 5 s
// after the run is aborted), and the answered callers' waits (p50, p99).
// `node bench/cache.mjs [forMs]` (default 60,000; CI runs none of it).
import { setMaxListeners } from 'node:events';
import { createFetch } from '../pkg/index.js';
import { startFakeOddsApi } from '../js-tests/support/fake-odds-api.mjs';
import { percentile } from './lib/util.mjs';

const forMs = Number(process.argv[2] ?? 60_000);
const workers = 32;
const snapshots = 10;
const everyMs = 500;
const ttlSeconds = 5;
const rate = { burst: 2, perSecond: 2 };

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

async function run(label, make) {
  const api = await startFakeOddsApi({ ...rate, ttlSeconds });
  const fetchImpl = make();
  const headers = { 'X-API-Key': `bench-${label}` };
  const waits = [];
  let polls = 0;
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
          const response = await fetchImpl(`${api.baseUrl}/events/e${s}/odds/snapshot`, { headers, signal: stop.signal });
          await response.text();
          waits.push(performance.now() - asked);
        } catch {
          gaveUp++;
        }
      }));
      polls++;
    }
  };
  await Promise.all(Array.from({ length: workers }, (_, w) => worker(w)));
  clearTimeout(stopping);
  const s = api.stats();
  await api.close();
  const ideal = snapshots * Math.ceil(forMs / (ttlSeconds * 1000));
  return { label, requests: s.attempts, ideal, throttled: s.throttled, answered: waits.length, gaveUp, p50: percentile(waits, 50), p99: percentile(waits, 99) };
}

const rows = [];
rows.push(await run('no cache', () => createFetch({ rate })));
rows.push(await run('cache: true', () => createFetch({ rate, cache: true })));
rows.push(await run('hand-written Map', () => mapCache(createFetch({ rate }))));
console.log(`${workers} workers polling ${snapshots} snapshots every ${everyMs} ms for ${forMs / 1000} s; ttl_seconds ${ttlSeconds}; burst ${rate.burst} at ${rate.perSecond}/s`);
console.log('strategy            requests  ideal  x ideal  429s  answered  given up  wait p50 ms  wait p99 ms');
for (const r of rows) {
  console.log(`${r.label.padEnd(18)}  ${String(r.requests).padStart(8)}  ${String(r.ideal).padStart(5)}  ${(r.requests / r.ideal).toFixed(2).padStart(7)}  ${String(r.throttled).padStart(4)}  ${String(r.answered).padStart(8)}  ${String(r.gaveUp).padStart(8)}  ${r.p50.toFixed(0).padStart(11)}  ${r.p99.toFixed(0).padStart(11)}`);
}

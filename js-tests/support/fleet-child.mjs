// One process of a fleet: N workers fetching snapshots through createFetch, with the gate in
// Redis or in this process's memory. Prints one JSON line of counts and exits.
import Redis from 'ioredis';
import { createFetch, redisStore } from '../../pkg/index.js';
import { runWorkers } from './workers.mjs';

const job = JSON.parse(process.argv[2]);
const client = job.store === 'redis' ? new Redis({ port: job.redisPort, host: '127.0.0.1' }) : null;
const fetchImpl = createFetch({
  rate: job.rate,
  ...(client && { store: redisStore(client) }),
  ...(job.fetch === 'hang' && { fetch: () => new Promise(() => {}) }),
});

if (job.fetch === 'hang') {
  // Get admitted from a full bucket (which pauses the shared refill until the response) and
  // then wait to be killed, response never seen.
  fetchImpl(`${job.baseUrl}/events/x/odds/snapshot`, { headers: { 'X-API-Key': job.apiKey } });
  setTimeout(() => console.log(JSON.stringify({ admitted: fetchImpl.stats().admitted })), 300);
} else if (job.recall) {
  // A snapshot, a pause (what the fleet learned arrives meanwhile), an event lookup, a pause
  // (what this process learned reaches Redis): which gates admitted what.
  const headers = { 'X-API-Key': job.apiKey };
  const pause = () => new Promise((resolve) => setTimeout(resolve, 300));
  await (await fetchImpl(`${job.baseUrl}/events/a/odds/snapshot`, { headers })).text();
  await pause();
  await (await fetchImpl(`${job.baseUrl}/events/b`, { headers })).text();
  await pause();
  const gates = fetchImpl.stats().gates.map((g) => ({ scope: g.scope, admitted: g.admitted, learned: g.learned }));
  console.log(JSON.stringify({ gates }));
  await client?.quit();
} else if (job.lanes) {
  // Lanes through Redis: a background lane (weight 1) and a live lane (weight 9), made in that
  // order; once told to go (a line on stdin), job.lanes.background and job.lanes.live calls at
  // once; prints when each was done (performance.timeOrigin-based ms, comparable across
  // processes on one machine).
  // job.oneQueue: both kinds in the wrapper's own queue (the benchmark's comparison).
  const lanes = job.oneQueue ? { background: fetchImpl, live: fetchImpl } : {
    background: fetchImpl.lane({ weight: 1, name: 'background' }),
    live: fetchImpl.lane({ weight: 9, name: 'live' }),
  };
  await (await fetch(`${job.baseUrl}/warm-up`)).text();
  console.log('ready');
  await new Promise((resolve) => process.stdin.once('data', resolve));
  process.stdin.pause();
  const headers = { 'X-API-Key': job.apiKey };
  const kinds = ['live', 'background'].flatMap((kind) => Array.from({ length: job.lanes[kind] ?? 0 }, () => kind));
  const done = await Promise.all(kinds.map(async (kind, n) => {
    const response = await lanes[kind](`${job.baseUrl}/events/${kind}-${n}/odds/snapshot`, { headers });
    await response.text();
    return { kind, status: response.status, at: performance.timeOrigin + performance.now() };
  }));
  console.log(JSON.stringify({ done }));
  await client?.quit();
} else if (job.single) {
  const started = performance.now();
  const response = await fetchImpl(`${job.baseUrl}/events/one/odds/snapshot`, { headers: { 'X-API-Key': job.apiKey } });
  console.log(JSON.stringify({ status: response.status, waitedMs: performance.now() - started }));
  await client?.quit();
} else {
  if (job.barrier) {
    // Warm up (module loading, the HTTP connection) on a route that spends no token, then
    // start with the rest of the fleet: the test measures the gate, not process start-up.
    await (await fetch(`${job.baseUrl}/warm-up`)).text();
    console.log('ready');
    await new Promise((resolve) => process.stdin.once('data', resolve));
    process.stdin.pause();
  }
  const counts = await runWorkers({ fetchImpl, baseUrl: job.baseUrl, apiKey: job.apiKey, workers: job.workers, timeoutMs: 120_000 });
  console.log(JSON.stringify({ ...counts, gate: fetchImpl.stats().gates[0] }));
  await client?.quit();
}

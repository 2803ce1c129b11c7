// One process, or one worker thread, spreading one key's credits (#37): `job.workers` workers
// calling a snapshot in a loop through createFetch({ quota: { spread } }), the gate in Redis
// (`job.redisPort`) or in the memory the process's threads share. Says "ready" once loaded (a
// line on stdout, or a message to the parent thread); goes at the first line on stdin (or
// message), stops at the second (its calls aborted) or after `job.calls` calls; then says what
// it saw, and what its stats() say of the key's credits, as JSON.
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { createFetch, redisStore, QuotaExhaustedError } from '../../pkg/index.js';

const job = isMainThread ? JSON.parse(process.argv[2]) : workerData;
const client = job.redisPort ? new (await import('ioredis')).default({ port: job.redisPort, host: '127.0.0.1' }) : null;
const fetchImpl = createFetch({
  rate: job.rate,
  // A cold process's first operations (the script's load) may take longer than the default.
  ...(client && { store: redisStore(client, { timeoutMs: 2000 }) }),
  typedErrors: true,
  quota: { spread: true, refreshMs: job.refreshMs },
});
const say = (m) => (isMainThread ? console.log(JSON.stringify(m)) : parentPort.postMessage(m));
const stop = new AbortController();
let go;
const started = new Promise((resolve) => { go = resolve; });
let heard = 0;
const hear = (n) => {
  heard += n;
  if (heard >= 1) go();
  if (heard >= 2) stop.abort();
};
if (isMainThread) process.stdin.on('data', (d) => hear(d.toString().split('\n').length - 1));
else parentPort.on('message', () => hear(1));
say('ready');
await started;

let sent = 0;
let ok = 0;
const failures = [];
const headers = { 'X-API-Key': job.apiKey };
const worker = async () => {
  while (sent < job.calls && !stop.signal.aborted) {
    sent++;
    try {
      const response = await fetchImpl(`${job.baseUrl}/events/e1/odds/snapshot`, { headers, signal: stop.signal });
      await response.text();
      if (response.status === 200) ok++;
      else failures.push(`status ${response.status}`);
    } catch (err) {
      if (err.name === 'AbortError') return;
      failures.push(err instanceof QuotaExhaustedError ? 'QuotaExhaustedError' : String(err));
      return;
    }
  }
};
await Promise.all(Array.from({ length: job.workers }, worker));
if (!stop.signal.aborted) await new Promise((resolve) => stop.signal.addEventListener('abort', resolve));
// What this member's stats() say of the key's credits: the fleet's, read by whichever member read.
const { used, limit, periodEnd } = fetchImpl.stats().gates[0]?.quota ?? {};
say({ ok, failures, quota: { used, limit, periodEnd: periodEnd?.getTime() ?? null } });
if (isMainThread) process.stdin.pause();
else parentPort.close();
await client?.quit();

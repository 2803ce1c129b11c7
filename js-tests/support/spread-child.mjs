// One process of a fleet spreading one key's credits through Redis (#37): `job.workers` workers
// calling a snapshot in a loop, through createFetch({ store, quota: { spread } }). Prints
// "ready" once loaded; goes on a line on stdin; stops at the next line (its calls aborted), or
// after `job.calls` calls; then prints one JSON line of what it saw.
import Redis from 'ioredis';
import { createFetch, redisStore, QuotaExhaustedError } from '../../pkg/index.js';

const job = JSON.parse(process.argv[2]);
const client = new Redis({ port: job.redisPort, host: '127.0.0.1' });
const fetchImpl = createFetch({
  rate: job.rate,
  store: redisStore(client),
  typedErrors: true,
  quota: { spread: true, refreshMs: job.refreshMs },
});
const stop = new AbortController();
let go;
const started = new Promise((resolve) => { go = resolve; });
let lines = 0;
process.stdin.on('data', (d) => {
  lines += d.toString().split('\n').length - 1;
  if (lines >= 1) go();
  if (lines >= 2) stop.abort();
});
console.log('ready');
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
process.stdin.pause();
console.log(JSON.stringify({ ok, failures, quota: fetchImpl.stats().gates[0]?.quota }));
await client.quit();

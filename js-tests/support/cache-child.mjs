// One member of a cache-sharing group (js-tests/cache.test.mjs): a process of a fleet sharing a
// store, or a worker thread of one process. It makes createFetch({ cache: true }) (with
// job.redisPort: { store } too, through ioredis; job.cache instead of true when given) and answers commands, one at a time, on stdin
// (a process: JSON lines in, JSON lines out) or its parentPort (a thread):
//   { op: 'get', url, apiKey, n }  n identical GETs at once: { statuses, marks, bodies }
//   { op: 'draw', baseUrl, calls, named }  drawn calls at once (support/identity-api.mjs):
//                                  each one's { status, mark, mine }
//   { op: 'stats' }                this member's stats().cache
//   { op: 'quit' }                 closes its Redis client and ends (a process: at once)
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { createInterface } from 'node:readline';
import Redis from 'ioredis';
import { createFetch, redisStore } from '../../pkg/index.js';
import { makeCalls } from './identity-api.mjs';

const job = isMainThread ? JSON.parse(process.argv[2]) : workerData;
// No retries by the client while Redis is down: the store's own timeout decides.
const client = job.redisPort ? new Redis({ port: job.redisPort, host: '127.0.0.1', maxRetriesPerRequest: 0, enableOfflineQueue: false }) : null;
client?.on('error', () => {});
// Commands fail at once while the client is not connected (no offline queue): connect first.
if (client) await new Promise((resolve) => client.once('ready', resolve));
const fetchImpl = createFetch({ rate: job.rate, cache: job.cache ?? true, ...(client && { store: redisStore(client, { timeoutMs: 200 }) }) });

async function run(command) {
  switch (command.op) {
    case 'get': {
      const headers = { 'X-API-Key': command.apiKey };
      const responses = await Promise.all(Array.from({ length: command.n }, () => fetchImpl(command.url, { headers })));
      const bodies = await Promise.all(responses.map((r) => r.text()));
      return { statuses: responses.map((r) => r.status), marks: responses.map((r) => r.headers.get('x-odds-gate-cache')), bodies };
    }
    case 'draw':
      return makeCalls(fetchImpl, command.baseUrl, command.calls, command.named);
    case 'stats':
      return fetchImpl.stats().cache;
    case 'quit':
      await client?.quit().catch(() => {});
      return {};
    default:
      throw new Error(`unknown command ${command.op}`);
  }
}

const answer = (command, say) => run(command).then(say, (e) => say({ error: String(e?.message ?? e) }));
if (isMainThread) {
  const lines = createInterface({ input: process.stdin });
  const say = (reply) => process.stdout.write(`${JSON.stringify(reply)}\n`);
  lines.on('line', (line) => {
    const command = JSON.parse(line);
    answer(command, (reply) => {
      say(reply);
      if (command.op === 'quit') process.exit(0);
    });
  });
  say({ ready: true });
} else {
  parentPort.on('message', (command) => answer(command, (reply) => parentPort.postMessage(reply)));
  parentPort.postMessage({ ready: true });
}

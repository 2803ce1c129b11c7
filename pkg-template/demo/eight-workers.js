// The eight-worker demo: the same eight naive workers, first with plain fetch and a fixed 1 s
// retry, then through odds-gate's shared gate, against a local fake Odds API (127.0.0.1 only).
// `odds-gate demo` and the repository's demo/eight-workers.mjs both run runDemo().
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { createFetch } from '../index.js';
import { startFakeOddsApi } from './fake-odds-api.js';
import { runWorkers } from './workers.js';

const SERVER = { burst: 2, perSecond: 2, retryAfterSeconds: 1 };
const HEAD = ['', 'attempts', '429s', 'completed', 'wall (s)'];

/**
 * Runs both scenarios one after the other and returns one row per scenario:
 * `{ label, attempts, throttled, completed, wallMs }` (attempts and 429s as the server counted
 * them). Prints the table through `log` unless `log` is null.
 */
export async function runDemo({ workers = 8, log = console.log } = {}) {
  const api = await startFakeOddsApi(SERVER);
  const apiKey = `demo-${randomUUID()}`; // throwaway key: nothing real is ever sent
  const rows = [];

  const run = async (label, fetchImpl) => {
    api.reset();
    const r = await runWorkers({ fetchImpl, baseUrl: api.baseUrl, apiKey, workers, retryDelayMs: 1000 });
    const s = api.stats(); // server-side: what actually hit the API
    rows.push({ label, attempts: s.attempts, throttled: s.throttled, completed: r.completed, wallMs: r.wallMs });
  };

  try {
    await run('plain fetch + fixed 1 s retry', fetch);
    await run('odds-gate shared gate', createFetch({ rate: { burst: SERVER.burst, perSecond: SERVER.perSecond } }));
  } finally {
    await api.close();
  }

  if (log) log(formatTable(rows));
  return rows;
}

/** The rows as the demo prints them. */
export function formatTable(rows) {
  const cells = rows.map((r) => [r.label, r.attempts, r.throttled, r.completed, (r.wallMs / 1000).toFixed(2)]);
  const widths = HEAD.map((h, i) => Math.max(h.length, ...cells.map((c) => String(c[i]).length)));
  const line = (c) => c.map((v, i) => (i === 0 ? String(v).padEnd(widths[i]) : String(v).padStart(widths[i]))).join('  ');
  return [
    line(HEAD),
    ...cells.map(line),
    '',
    `attempts and 429s are counted by the server (burst ${SERVER.burst}, ${SERVER.perSecond}/s, Retry-After: ${SERVER.retryAfterSeconds}).`,
  ].join('\n');
}

// `node demo/eight-workers.js` from the package runs it too.
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await runDemo();

// Main demo: the same eight naive workers, first with plain fetch, then with
// odds-gate's shared gate, against a local fake Odds API (127.0.0.1 only).
import { randomUUID } from 'node:crypto';
import { startFakeOddsApi } from '../js-tests/support/fake-odds-api.mjs';
import { runWorkers } from '../js-tests/support/workers.mjs';

// Load the built package first so a missing build fails fast, before any 3 s run.
let createFetch;
try {
  ({ createFetch } = await import('../pkg/index.js'));
  if (typeof createFetch !== 'function') throw new Error('pkg/index.js does not export createFetch');
} catch (err) {
  console.error('odds-gate package not found or unusable at pkg/index.js.');
  console.error('Build it first with: bash scripts/build.sh');
  console.error(`(${err.code ?? 'error'}: ${err.message})`);
  process.exit(1);
}

const api = await startFakeOddsApi({ burst: 2, perSecond: 2, retryAfterSeconds: 1 });
const apiKey = `demo-${randomUUID()}`; // throwaway key: nothing real is ever sent
const rows = [];

const run = async (label, fetchImpl) => {
  api.reset();
  const r = await runWorkers({ fetchImpl, baseUrl: api.baseUrl, apiKey, workers: 8, retryDelayMs: 1000 });
  const s = api.stats(); // server-side: what actually hit the API
  rows.push([label, s.attempts, s.rejected, r.completed, (r.wallMs / 1000).toFixed(2)]);
};

try {
  await run('plain fetch + fixed 1 s retry', fetch);
  await run('odds-gate shared gate', createFetch({ rate: { burst: 2, perSecond: 2 } }));
} finally {
  await api.close();
}

const head = ['', 'attempts', '429s', 'completed', 'wall (s)'];
const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
const line = (cells) => cells.map((c, i) => (i === 0 ? String(c).padEnd(widths[i]) : String(c).padStart(widths[i]))).join('  ');
console.log(line(head));
for (const r of rows) console.log(line(r));
console.log('\nattempts and 429s are counted by the server (burst 2, 2/s, Retry-After: 1).');

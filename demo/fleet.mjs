// Several processes, one key: 4 processes x 8 workers against the local fake Odds API (burst 2,
// 2/s), first with a gate per process (in memory), then with one gate shared through Redis.
// Needs redis-server on PATH (Debian: apt-get install redis-server); it runs on a free
// loopback port and is stopped at the end.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { startFakeOddsApi } from '../js-tests/support/fake-odds-api.mjs';
import { startRedis } from '../js-tests/support/redis-server.mjs';

const processes = Number(process.argv[2] ?? 4);
const child = fileURLToPath(new URL('../js-tests/support/fleet-child.mjs', import.meta.url));
const rate = { burst: 2, perSecond: 2 };
const redis = await startRedis();
const api = await startFakeOddsApi(rate);

const runChild = (job) => new Promise((resolve, reject) => {
  const proc = spawn(process.execPath, [child, JSON.stringify(job)], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  proc.stdout.on('data', (d) => { out += d; });
  proc.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out.trim().split('\n').at(-1))) : reject(new Error(`exit ${code}`))));
});

const rows = [];
try {
  for (const store of ['memory', 'redis']) {
    api.reset();
    const apiKey = `demo-${randomUUID()}`;
    const started = performance.now();
    const runs = await Promise.all(Array.from({ length: processes }, () =>
      runChild({ store, redisPort: redis.port, baseUrl: api.baseUrl, apiKey, rate, workers: 8 })));
    const s = api.stats();
    rows.push({
      gate: store === 'redis' ? 'one gate through Redis' : 'a gate per process',
      jobs: processes * 8,
      completed: runs.reduce((n, r) => n + r.completed, 0),
      attempts: s.attempts,
      '429s': s.throttled,
      'wall (s)': ((performance.now() - started) / 1000).toFixed(1),
    });
  }
} finally {
  await api.close();
  await redis.stop();
}
console.log(`${processes} processes x 8 workers, one key, burst 2 at 2/s (server-side counts):`);
console.table(rows);

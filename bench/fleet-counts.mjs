// A fleet at the floor when the API sends counts (issue #34 item 4): 8 processes x 8 workers
// (64 calls, each worker's one after another with its retries) share one key through Redis at a
// fixed rate, burst 2 at 2/s, against the fake Odds API with X-RateLimit-Limit/-Remaining on
// every answer, and on 429s only ('throttled', as the API documents them). At the floor every
// answer says 0 left, which the pacing rule must not read as someone else draining the key.
// Through one redis-server, and through a local Redis Cluster of three masters (ioredis's
// Cluster client) when redis-cli can make one.
// ODDS_GATE_BEFORE_PKG=<dir> (an older build's pkg/) runs the same rows with it too,
// interleaved: before and after, side by side.
import { fork } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { startFakeOddsApi } from '../js-tests/support/fake-odds-api.mjs';
import { startRedis } from '../js-tests/support/redis-server.mjs';
import { startRedisCluster } from './support/redis-cluster.mjs';
import { fix, median, rotate } from './lib/util.mjs';

const RATE = { burst: 2, perSecond: 2 };
const PROCESSES = 8;
const WORKERS = 8;
const CALLS = PROCESSES * WORKERS;
const FLOOR_S = (CALLS - RATE.burst) / RATE.perSecond;

if (process.argv[2] === '--child') {
  const job = JSON.parse(process.argv[3]);
  const { default: Redis } = await import('ioredis');
  const { createFetch, redisStore } = await import(pathToFileURL(`${job.pkg}/index.js`).href);
  const { runWorkers } = await import('../js-tests/support/workers.mjs');
  const client = job.nodes ? new Redis.Cluster(job.nodes) : new Redis({ port: job.port, host: '127.0.0.1' });
  await client.ping();
  const fetchImpl = createFetch({ rate: RATE, store: redisStore(client) });
  // The HTTP connection, on a route that spends no token.
  await (await fetch(`${job.baseUrl}/warm-up`)).text();
  process.send('ready');
  await new Promise((resolve) => process.once('message', resolve));
  const counts = await runWorkers({ fetchImpl, baseUrl: job.baseUrl, apiKey: job.apiKey, workers: WORKERS, timeoutMs: 180_000 });
  process.send(counts);
  await client.quit();
  process.exit(0);
}

/** One run: the fleet's 64 calls, from the go to the last answer; the server's counts. */
async function once({ store, headers, pkg }) {
  const api = await startFakeOddsApi({ ...RATE, retryAfterSeconds: 1, rateLimitHeaders: headers });
  try {
    const job = { ...store.job, pkg: pkg.dir, baseUrl: api.baseUrl, apiKey: `bench-fleet-counts-${randomUUID()}` };
    const children = Array.from({ length: PROCESSES }, () =>
      fork(new URL(import.meta.url), ['--child', JSON.stringify(job)], { stdio: 'inherit' }));
    await Promise.all(children.map((c) => new Promise((resolve) => c.once('message', resolve))));
    const started = performance.now();
    const runs = await Promise.all(children.map((c) => { c.send('go'); return new Promise((r) => c.once('message', r)); }));
    const wallS = (performance.now() - started) / 1000;
    await Promise.all(children.map((c) => new Promise((r) => (c.exitCode === null ? c.once('exit', r) : r()))));
    const s = api.stats();
    return { wallS, completed: runs.reduce((n, r) => n + r.completed, 0), attempts: s.attempts, throttled: s.throttled };
  } finally {
    await api.close();
  }
}

const stamp = (dir) => createHash('sha256').update(readFileSync(`${dir}/odds_gate_bg.wasm`)).digest('hex').slice(0, 12);

export async function run({ quick }) {
  const rounds = quick ? 1 : 2;
  const thisDir = new URL('../pkg', import.meta.url).pathname;
  const pkgs = [{ name: 'this build', dir: thisDir }];
  if (process.env.ODDS_GATE_BEFORE_PKG) {
    const dir = process.env.ODDS_GATE_BEFORE_PKG.replace(/\/$/, '');
    pkgs.push({ name: `before (wasm ${stamp(dir)})`, dir });
  }
  const redis = await startRedis();
  const notes = [];
  let cluster = null;
  try {
    cluster = await startRedisCluster();
  } catch (err) {
    notes.push(`no Redis Cluster row: ${String(err.message ?? err).split('\n')[0]}`);
  }
  const stores = [
    { name: 'one redis-server', job: { port: redis.port } },
    ...(cluster ? [{ name: 'Redis Cluster, 3 masters', job: { nodes: cluster.nodes } }] : []),
  ];
  const cases = stores.flatMap((store) => ['every answer', 'throttled'].flatMap((counts) =>
    pkgs.map((pkg) => ({ store, counts, headers: counts === 'every answer' ? true : 'throttled', pkg }))));
  const results = new Map(cases.map((c) => [c, []]));
  try {
    for (let r = 0; r < rounds; r++) {
      for (const c of rotate(cases, r)) {
        const result = await once(c);
        results.get(c).push(result);
        console.error(`  ${c.store.name}, counts on ${c.counts}, ${c.pkg.name}: ${fix(result.wallS)} s, ` +
          `${result.attempts} attempts, ${result.throttled} 429s`);
      }
    }
  } finally {
    await cluster?.stop();
    await redis.stop();
  }
  const rows = cases.map((c) => {
    const runs = results.get(c);
    const walls = runs.map((x) => x.wallS);
    const m = (f) => median(runs.map(f));
    const ratios = walls.map((w) => w / FLOOR_S);
    return [c.store.name, c.counts === 'every answer' ? 'every answer' : '429s only', c.pkg.name,
      walls.map((w) => fix(w, 1)).join(' / '), fix(FLOOR_S, 0), ratios.map((x) => fix(x)).join(' / '),
      `${m((x) => x.completed)} / ${CALLS}`, fix(m((x) => x.attempts), 0), fix(m((x) => x.throttled), 0)];
  });
  const worst = (pick) => Math.max(...cases.filter(pick).flatMap((c) => results.get(c).map((x) => x.wallS / FLOOR_S)));
  const counted = worst((c) => c.counts === 'every answer' && c.pkg === pkgs[0]);
  const throttled = worst((c) => c.counts === 'throttled' && c.pkg === pkgs[0]);
  const throttledPerRun = cases.filter((c) => c.pkg === pkgs[0]).flatMap((c) => results.get(c).map((x) => x.throttled));
  const ok = counted <= 1.05 && Math.max(...throttledPerRun) === 0;
  return [{
    id: 'fleet-counts',
    title: 'A fleet at the floor when the API sends counts',
    what: `${PROCESSES} processes x ${WORKERS} workers (${CALLS} calls, each worker's one after another with its ` +
      `retries) share one key through createFetch({ rate: { burst: 2, perSecond: 2 }, store: redisStore(ioredis) }) ` +
      `against the fake Odds API (burst 2 at 2/s, Retry-After: 1), with X-RateLimit-Limit/-Remaining on every answer ` +
      `or on 429s only ('throttled'); each process warms up (module, Redis, HTTP connection) before the go. Wall from ` +
      `the go to the last answer, ${rounds} round(s) interleaved (each figure one run); the floor is the allowance's ` +
      `own time for ${CALLS} calls, ${FLOOR_S} s; attempts and 429s as the server counted them (medians)` +
      (pkgs.length > 1 ? '; "before" is the build before the pacing rule knew where an answer\'s request stood' : ''),
    target: 'with counts on every answer: within 1.05 x the floor (1.03 x hoped), as on 429s only, and no 429s',
    verdict: `${ok ? 'met' : 'MISSED'} (this build: counts on every answer ${fix(counted)} x at worst, on 429s only ` +
      `${fix(throttled)} x, ${Math.max(...throttledPerRun)} 429s at most in a run)`,
    head: ['store', 'counts on', 'package', 'wall (s)', 'floor (s)', 'x floor', 'completed', 'attempts', '429s'],
    rows,
    notes,
  }];
}

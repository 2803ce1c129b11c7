// Fleet-mode throughput: admissions per second through one Redis gate for 1, 4 and 8
// processes, and Redis calls per admission. A benchmark, not a test: it prints figures.
// Each process sends `calls` requests on one key through createFetch({ store: redisStore })
// with an inner fetch that answers at once, at an allowance high enough that Redis, not the
// bucket, is the limit. Usage: node bench/fleet.mjs [callsPerProcess=2000]
import { fork } from 'node:child_process';
import net from 'node:net';
import { randomUUID } from 'node:crypto';
import { startRedis } from '../js-tests/support/redis-server.mjs';

if (process.argv[2] === '--child') {
  const { default: Redis } = await import('ioredis');
  const { createFetch, redisStore } = await import('../pkg/index.js');
  const job = JSON.parse(process.argv[3]);
  const client = new Redis({ port: job.port, host: '127.0.0.1' });
  const response = new Response(null);
  const fetchImpl = createFetch({ rate: { burst: 1000, perSecond: 1e6 }, store: redisStore(client), fetch: async () => response });
  const headers = { 'X-API-Key': job.key };
  process.send('ready');
  await new Promise((resolve) => process.once('message', resolve));
  const started = performance.now();
  // 32 calls in flight at a time, like a worker pool.
  let next = 0;
  const worker = async () => { while (next++ < job.calls) await fetchImpl('http://127.0.0.1/x', { headers }); };
  await Promise.all(Array.from({ length: 32 }, worker));
  const ms = performance.now() - started;
  process.send({ ms, admitted: fetchImpl.stats().admitted, redisCalls: fetchImpl.stats().gates[0].store.calls });
  await client.quit();
  process.exit(0);
}

const callsPerProcess = Number(process.argv[2] ?? 2000);
const redis = await startRedis();
const info = (section) => new Promise((resolve) => {
  const socket = net.connect(redis.port, '127.0.0.1', () => socket.write(`INFO ${section}\r\n`));
  let out = '';
  socket.on('data', (d) => { out += d; if (out.includes('\r\n\r\n') || out.length > 4096) { socket.destroy(); resolve(out); } });
  setTimeout(() => { socket.destroy(); resolve(out); }, 1000);
});
const evalshaCalls = async () => Number(/cmdstat_evalsha:calls=(\d+)/.exec(await info('commandstats'))?.[1] ?? 0);

const rows = [];
try {
  for (const processes of [1, 4, 8]) {
    const key = `bench-${randomUUID()}`;
    const children = Array.from({ length: processes }, () =>
      fork(new URL(import.meta.url), ['--child', JSON.stringify({ port: redis.port, key, calls: callsPerProcess })], { stdio: 'inherit' }));
    await Promise.all(children.map((c) => new Promise((r) => c.once('message', r))));
    const before = await evalshaCalls();
    const started = performance.now();
    const results = await Promise.all(children.map((c) => { c.send('go'); return new Promise((r) => c.once('message', r)); }));
    const wallS = (performance.now() - started) / 1000;
    const admitted = results.reduce((n, r) => n + r.admitted, 0);
    const evalsha = (await evalshaCalls()) - before;
    rows.push({
      processes,
      admissions: admitted,
      'admissions/s': Math.round(admitted / wallS),
      'Redis calls/admission': (evalsha / admitted).toFixed(2),
      'wall (s)': wallS.toFixed(2),
    });
  }
} finally {
  await redis.stop();
}
console.log(`fleet mode, one key through one redis-server (${callsPerProcess} calls per process, 32 in flight each):`);
console.table(rows);

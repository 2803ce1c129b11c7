// Fleet mode: admissions per second for one key through one redis-server, from 1, 4 and 8
// processes, and what bounds them. Each process sends calls on one key through
// createFetch({ store: redisStore }) with an inner fetch that answers at once, at an allowance
// high enough that the bucket never is the limit; a call sent as soon as the previous one of its
// worker settled. Redis calls are counted by Redis (EVALSHA), CPU is read from each process
// (process.cpuUsage) and from Redis (INFO cpu), over the timed part only.
import { fork } from 'node:child_process';
import net from 'node:net';
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import { startRedis } from '../js-tests/support/redis-server.mjs';
import { median, fix, int } from './lib/util.mjs';

if (process.argv[2] === '--child') {
  const { default: Redis } = await import('ioredis');
  const { createFetch, redisStore } = await import('../pkg/index.js');
  const job = JSON.parse(process.argv[3]);
  const client = new Redis({ port: job.port, host: '127.0.0.1' });
  const response = new Response(null);
  const fetchImpl = createFetch({ rate: { burst: 1000, perSecond: 1e6 }, store: redisStore(client), fetch: async () => response });
  const headers = { 'X-API-Key': job.key };
  await fetchImpl('http://127.0.0.1/x', { headers }); // the script is loaded, the connection open
  process.send('ready');
  await new Promise((resolve) => process.once('message', resolve));
  const cpu = process.cpuUsage();
  const started = performance.now();
  let next = 0;
  const worker = async () => { while (next++ < job.calls) await fetchImpl('http://127.0.0.1/x', { headers }); };
  await Promise.all(Array.from({ length: job.inFlight }, worker));
  const ms = performance.now() - started;
  const used = process.cpuUsage(cpu);
  process.send({ ms, cpuUs: used.user + used.system, admitted: fetchImpl.stats().admitted - 1 });
  await client.quit();
  process.exit(0);
}

const info = (port, section) => new Promise((resolve) => {
  const socket = net.connect(port, '127.0.0.1', () => socket.write(`INFO ${section}\r\n`));
  let out = '';
  socket.on('data', (d) => { out += d; if (out.includes('\r\n\r\n') || out.length > 8192) { socket.destroy(); resolve(out); } });
  setTimeout(() => { socket.destroy(); resolve(out); }, 1000);
});
const evalshaCalls = async (port) => Number(/cmdstat_evalsha:calls=(\d+)/.exec(await info(port, 'commandstats'))?.[1] ?? 0);
const redisCpuS = async (port) => {
  const text = await info(port, 'cpu');
  const read = (name) => Number(new RegExp(`${name}:([\\d.]+)`).exec(text)?.[1] ?? NaN);
  return read('used_cpu_user') + read('used_cpu_sys');
};

async function once(port, processes, inFlight, calls) {
  const key = `bench-${randomUUID()}`;
  const children = Array.from({ length: processes }, () =>
    fork(new URL(import.meta.url), ['--child', JSON.stringify({ port, key, calls, inFlight })], { stdio: 'inherit' }));
  await Promise.all(children.map((c) => new Promise((r) => c.once('message', r))));
  const [calls0, cpu0] = [await evalshaCalls(port), await redisCpuS(port)];
  const started = performance.now();
  const results = await Promise.all(children.map((c) => { c.send('go'); return new Promise((r) => c.once('message', r)); }));
  const wallS = (performance.now() - started) / 1000;
  const [calls1, cpu1] = [await evalshaCalls(port), await redisCpuS(port)];
  await Promise.all(children.map((c) => new Promise((r) => (c.exitCode === null ? c.once('exit', r) : r()))));
  const admitted = results.reduce((n, r) => n + r.admitted, 0);
  const clientUs = results.reduce((n, r) => n + r.cpuUs, 0);
  return {
    admitted,
    perS: admitted / wallS,
    callsPer: (calls1 - calls0) / admitted,
    clientUs: clientUs / admitted,
    redisUs: ((cpu1 - cpu0) * 1e6) / admitted,
    busy: (clientUs / 1e6 + (cpu1 - cpu0)) / (wallS * os.availableParallelism()),
    wallS,
  };
}

export async function run({ quick }) {
  const calls = quick ? 500 : 5000;
  const rounds = quick ? 1 : 3;
  const cases = [[1, 32], [4, 32], [8, 32], [8, 1]];
  const redis = await startRedis();
  const rows = [];
  let met = null;
  try {
    for (const [processes, inFlight] of cases) {
      const runs = [];
      for (let r = 0; r < rounds; r++) runs.push(await once(redis.port, processes, inFlight, calls));
      const m = (f) => median(runs.map(f));
      rows.push([processes, inFlight, int(m((x) => x.admitted)), int(m((x) => x.perS)), fix(m((x) => x.callsPer)),
        fix(m((x) => x.clientUs), 0), fix(m((x) => x.redisUs), 0), `${fix(m((x) => x.busy) * 100, 0)}%`, fix(m((x) => x.wallS))]);
      if (processes === 8 && inFlight === 32) met = { perS: m((x) => x.perS), callsPer: m((x) => x.callsPer) };
    }
  } finally {
    await redis.stop();
  }
  const ok = met.perS >= 5000 && met.callsPer <= 1.1;
  return [{
    id: 'fleet',
    title: 'Fleet: admissions per second for one key through Redis',
    what: `each process admits ${int(calls)} calls on one key through createFetch({ store: redisStore(ioredis) }) ` +
      `(burst 1000 at 1e6/s, so the bucket never limits; the inner fetch answers at once), from the number of ` +
      `workers shown, each sending its next call when the last settled; ${rounds} round(s), medians. Redis calls = EVALSHA ` +
      `counted by Redis; CPU per admission from process.cpuUsage() of the clients and INFO cpu of Redis over the timed ` +
      `part; busy = (client + Redis CPU) / (wall x ${os.availableParallelism()} cores). A line waiting on the store is ` +
      `admitted by one round trip for up to 64 calls`,
    target: '8 processes (32 in flight each): >= 5,000 admissions/s, <= 1.1 Redis calls per admission',
    verdict: `${ok ? 'met' : 'MISSED'} (${int(met.perS)} admissions/s, ${fix(met.callsPer)} Redis calls per admission)`,
    head: ['processes', 'in flight each', 'admissions', 'admissions/s', 'Redis calls/admission', 'client CPU us/admission',
      'Redis CPU us/admission', 'busy', 'wall (s)'],
    rows,
  }];
}

// A bounded soak with faults: `node bench/soak.mjs [calls]` (default 100,000 per phase; a few
// minutes). Calls across 500 keys, at most 200 in flight, against a server in a process of its
// own that answers with 503 bursts (some with Retry-After: 1), connection resets and slow
// responses; one caller in ten aborts at a random point. Three phases in one client process:
// plain fetch (a control for what Node's own networking does to memory), odds-gate in memory,
// and odds-gate through Redis with redis-server killed and restarted twice. Reports whether
// every call settled (none hung), what they came to, memory (RSS, JS heap, wasm) after each
// phase, the sockets open at the server at the end, and whether the client exits on its own.
// Printed, never asserted; not part of CI.
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROLE = process.argv[2];

if (ROLE === '--server') {
  const http = await import('node:http');
  let open = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    const r = Math.random();
    if (r < 0.02) return req.socket.destroy();
    const answer = () => {
      if (r < 0.10) {
        res.writeHead(503, r < 0.04 ? { 'Retry-After': '1' } : {});
        return res.end('{"detail":"unavailable"}');
      }
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end('{"event_id":"e"}');
    };
    if (r > 0.96) setTimeout(answer, 200 + Math.random() * 1800);
    else answer();
  });
  server.on('connection', (socket) => { open++; socket.on('close', () => open--); });
  server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }));
  process.on('message', (m) => {
    if (m === 'sockets') process.send({ open });
    if (m === 'stop') { server.close(); server.closeAllConnections(); process.disconnect(); }
  });
} else if (ROLE === '--client') {
  const { default: Redis } = await import('ioredis');
  // Through loadPkg, which watches the module's instance for its memory.
  const { createFetch, redisStore, wasmMemoryBytes } = await import('./lib/util.mjs').then((u) => u.loadPkg());
  const { startRedis } = await import('../js-tests/support/redis-server.mjs');
  const [calls, port] = [Number(process.argv[3]), Number(process.argv[4])];
  const base = `http://127.0.0.1:${port}/v1`;
  const mb = (n) => Math.round(n / 1e5) / 10;
  const memory = async () => {
    for (let i = 0; i < 3; i++) { globalThis.gc?.(); await new Promise((r) => setTimeout(r, 50)); }
    const m = process.memoryUsage();
    return { rss: mb(m.rss), heap: mb(m.heapUsed), wasm: mb(wasmMemoryBytes()) };
  };
  const memoryStart = await memory();

  async function phase(name, fetchImpl, during) {
    const outcomes = new Map();
    const count = (k) => outcomes.set(k, (outcomes.get(k) ?? 0) + 1);
    let settled = 0;
    const inFlight = new Set();
    const started = performance.now();
    const one = (i) => {
      const ac = Math.random() < 0.1 ? new AbortController() : null;
      const abort = ac && setTimeout(() => ac.abort(), Math.random() * 1500);
      const p = fetchImpl(`${base}/events/e${i}/odds/snapshot`, {
        headers: { 'X-API-Key': `soak-${name}-${i % 500}` }, signal: ac?.signal,
      }).then(
        async (r) => { await r.text(); count(`status ${r.status}`); },
        (e) => count(e?.name === 'GateAbandonedError' ? `abandoned: ${e.reason}` : e?.name ?? 'error'),
      ).then(() => { clearTimeout(abort); settled++; inFlight.delete(p); });
      inFlight.add(p);
    };
    const faults = during?.();
    for (let i = 0; i < calls; i++) {
      one(i);
      while (inFlight.size >= 200) await Promise.race(inFlight);
    }
    let limit;
    const deadline = new Promise((resolve) => { limit = setTimeout(resolve, 180_000, 'timeout'); });
    const hung = await Promise.race([Promise.all(inFlight), deadline]) === 'timeout' ? inFlight.size : 0;
    clearTimeout(limit);
    await faults;
    const seconds = (performance.now() - started) / 1000;
    const table = [...outcomes].sort((a, b) => b[1] - a[1]).map(([outcome, n]) => ({ outcome, calls: n }));
    table.push({ outcome: 'settled', calls: settled }, { outcome: 'hung', calls: hung });
    return { name, table, seconds: seconds.toFixed(0), memory: await memory() };
  }

  const retry = { baseMs: 20, capMs: 200, timeBudgetMs: 10_000, attemptTimeoutMs: 3_000 };
  const phases = [];
  phases.push(await phase('plain fetch (control)', (input, init) => fetch(input, init)));
  phases.push(await phase('odds-gate in memory', createFetch({ rate: { burst: 20, perSecond: 2_000 }, retry })));

  const redis = await startRedis();
  const client = new Redis({ port: redis.port, host: '127.0.0.1', maxRetriesPerRequest: 1, retryStrategy: () => 100 });
  client.on('error', () => {});
  const shared = createFetch({
    rate: { burst: 20, perSecond: 2_000 }, retry, store: redisStore(client, { timeoutMs: 200, retryMs: 500 }),
  });
  const kills = async () => {
    for (let k = 0; k < 2; k++) {
      await new Promise((r) => setTimeout(r, 3_000));
      await redis.kill();
      await new Promise((r) => setTimeout(r, 2_000));
      await redis.restart();
    }
  };
  phases.push(await phase('odds-gate through Redis (killed and restarted twice)', shared, kills));
  client.disconnect();
  await redis.stop();
  process.send({ phases, memoryStart }, () => process.disconnect());
} else {
  const calls = Number(process.argv[2] ?? 100_000);
  const self = fileURLToPath(import.meta.url);
  const started = Date.now();
  const server = fork(self, ['--server']);
  const { port } = await new Promise((resolve) => server.once('message', resolve));
  const client = fork(self, ['--client', String(calls), String(port)], { execArgv: ['--expose-gc'] });
  let report;
  let reportedAt;
  client.on('message', (m) => { report = m; reportedAt = Date.now(); });
  const killer = setTimeout(() => { console.log('the soak did not end in 20 minutes: killed'); client.kill('SIGKILL'); }, 20 * 60_000);
  const [code, signal] = await new Promise((resolve) => client.on('exit', (...a) => resolve(a)));
  clearTimeout(killer);
  server.send('sockets');
  const { open } = await new Promise((resolve) => server.once('message', resolve));
  server.send('stop');
  if (!report) {
    console.log(`the soak died (code ${code}, signal ${signal}) before reporting`);
    process.exitCode = 1;
  } else {
    const exitMs = Date.now() - reportedAt;
    console.log(`soak: ${calls.toLocaleString('en-US')} calls per phase, ${((Date.now() - started) / 1000).toFixed(0)} s in all`);
    const m = report.memoryStart;
    console.log(`memory at the start: RSS ${m.rss} MB, JS heap ${m.heap} MB, wasm ${m.wasm} MB`);
    for (const phase of report.phases) {
      console.log(`\n${phase.name}: ${phase.seconds} s; after it (gc): RSS ${phase.memory.rss} MB, JS heap ${phase.memory.heap} MB, wasm ${phase.memory.wasm} MB`);
      console.table(phase.table);
    }
    console.log(`\nsockets open at the server once the client has gone: ${open}`);
    console.log(`the client ${code === 0 && exitMs < 10_000 ? `exited on its own ${exitMs} ms after its last report` : `exited with ${code}/${signal} ${exitMs} ms after its last report`}`);
  }
}

// A bounded soak with faults: `node bench/soak.mjs [calls]` (default 100,000; a few minutes).
// Calls across many keys through one wrapper in memory and one through Redis, against a local
// server that answers with 503 bursts, connection resets and slow responses; callers abort at
// random points; redis-server is killed and restarted twice during the Redis phase. Reports
// whether every call settled (none hung), what they came to, RSS at the start and the end, the
// sockets still open at the end, and whether the process exits on its own. Printed, never
// asserted; not part of CI. The work runs in a child process, so its exit can be watched.
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const CHILD = process.argv[2] === '--child';

if (!CHILD) {
  const calls = Number(process.argv[2] ?? 100_000);
  const started = Date.now();
  const child = fork(fileURLToPath(import.meta.url), ['--child', String(calls)], { execArgv: ['--expose-gc'] });
  let report;
  child.on('message', (m) => { report = m; });
  let finishedAt;
  child.on('message', () => { finishedAt = Date.now(); });
  const killer = setTimeout(() => { console.log('the soak did not end in 20 minutes: killed'); child.kill('SIGKILL'); }, 20 * 60_000);
  child.on('exit', (code, signal) => {
    clearTimeout(killer);
    if (!report) {
      console.log(`the soak died (code ${code}, signal ${signal}) before reporting`);
      process.exitCode = 1;
      return;
    }
    const exitMs = Date.now() - finishedAt;
    console.log(`soak: ${calls.toLocaleString('en-US')} calls per phase, ${((Date.now() - started) / 1000).toFixed(0)} s`);
    for (const phase of report.phases) {
      console.log(`\n${phase.name}:`);
      console.table(phase.table);
    }
    console.log(`\nRSS: ${report.rssStartMB} MB at the start, ${report.rssEndMB} MB at the end (after GC)`);
    console.log(`sockets open at the server at the end: ${report.openSockets}`);
    console.log(`the process ${code === 0 && exitMs < 10_000 ? `exited on its own ${exitMs} ms after its last report` : `exited with ${code}/${signal} after ${exitMs} ms`}`);
  });
} else {
  const { default: Redis } = await import('ioredis');
  const http = await import('node:http');
  const { createFetch, redisStore } = await import('../pkg/index.js');
  const { startRedis } = await import('../js-tests/support/redis-server.mjs');
  const calls = Number(process.argv[3]);

  // A server that misbehaves at random: 8% 503 (half with Retry-After: 1), 2% resets, 4% slow
  // (0.2 to 2 s), the rest a small JSON snapshot.
  let open = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    const r = Math.random();
    if (r < 0.02) return req.socket.destroy();
    const answer = () => {
      if (r < 0.10) {
        res.writeHead(503, r < 0.06 ? { 'Retry-After': '1' } : {});
        return res.end('{"detail":"unavailable"}');
      }
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end('{"event_id":"e"}');
    };
    if (r > 0.96) setTimeout(answer, 200 + Math.random() * 1800);
    else answer();
  });
  server.on('connection', (socket) => { open++; socket.on('close', () => open--); });
  server.keepAliveTimeout = 1000;
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${server.address().port}/v1`;

  const rss = () => Math.round(process.memoryUsage().rss / 1e6);
  globalThis.gc?.();
  const rssStartMB = rss();

  async function phase(name, fetchImpl, during) {
    const outcomes = new Map();
    const count = (k) => outcomes.set(k, (outcomes.get(k) ?? 0) + 1);
    let settled = 0;
    const keys = 500;
    const inFlight = new Set();
    const started = performance.now();
    let hung = 0;
    const one = (i) => {
      const ac = Math.random() < 0.1 ? new AbortController() : null;
      if (ac) setTimeout(() => ac.abort(), Math.random() * 1500);
      const p = fetchImpl(`${base}/events/e${i}/odds/snapshot`, {
        headers: { 'X-API-Key': `soak-${name}-${i % keys}` }, signal: ac?.signal,
      }).then(
        async (r) => { await r.text(); count(`status ${r.status}`); },
        (e) => count(e?.name === 'GateAbandonedError' ? `abandoned: ${e.reason}` : e?.name ?? 'error'),
      ).then(() => { settled++; inFlight.delete(p); });
      inFlight.add(p);
    };
    const stop = during?.();
    for (let i = 0; i < calls; i++) {
      one(i);
      // At most 1,000 in flight: the soak measures faults, not an unbounded queue.
      while (inFlight.size >= 1_000) await Promise.race(inFlight);
    }
    const deadline = new Promise((resolve) => setTimeout(resolve, 180_000, 'timeout'));
    if (await Promise.race([Promise.all(inFlight), deadline]) === 'timeout') hung = inFlight.size;
    await stop;
    const table = [...outcomes].sort((a, b) => b[1] - a[1]).map(([outcome, n]) => ({ outcome, calls: n }));
    table.push({ outcome: 'settled', calls: settled }, { outcome: 'hung', calls: hung },
      { outcome: 'wall (s)', calls: ((performance.now() - started) / 1000).toFixed(0) });
    return { name, table };
  }

  const memory = createFetch({ rate: { burst: 20, perSecond: 2_000 }, retry: { baseMs: 20, capMs: 200, timeBudgetMs: 10_000, attemptTimeoutMs: 3_000 } });
  const phases = [await phase('memory', memory)];

  const redis = await startRedis();
  const client = new Redis({ port: redis.port, host: '127.0.0.1', maxRetriesPerRequest: 1, retryStrategy: () => 100 });
  client.on('error', () => {});
  const shared = createFetch({
    rate: { burst: 20, perSecond: 2_000 }, retry: { baseMs: 20, capMs: 200, timeBudgetMs: 10_000, attemptTimeoutMs: 3_000 },
    store: redisStore(client, { timeoutMs: 200, retryMs: 500 }),
  });
  const faults = async () => {
    for (let k = 0; k < 2; k++) {
      await new Promise((r) => setTimeout(r, 4_000));
      await redis.kill();
      await new Promise((r) => setTimeout(r, 2_000));
      await redis.restart();
    }
  };
  phases.push(await phase('redis (killed and restarted twice)', shared, faults));
  client.disconnect();
  await redis.stop();

  globalThis.gc?.();
  await new Promise((r) => setTimeout(r, 1_500)); // past the server's keep-alive timeout
  globalThis.gc?.();
  const openSockets = open;
  server.close();
  process.send({ phases, rssStartMB, rssEndMB: rss(), openSockets }, () => process.disconnect());
}

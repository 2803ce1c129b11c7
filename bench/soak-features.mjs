// A bounded soak of the features that came after bench/soak.mjs (issue #23, item 6):
// `node bench/soak-features.mjs [calls]` (default 30,000 per kind of wrapper, in two laps, plus a
// lap of each to warm up; 9 to 12 minutes on 2 busy cores, most of it calls waiting on the
// server's allowance or idle time for the sweeps). Printed, never asserted; not part of CI (its figures are in BENCHMARKS.md,
// by hand: docs/performance.md).
//
// The same faults as soak.mjs, from a server in a process of its own: 2% connection resets, 8%
// 503s (a quarter of them with Retry-After: 1), 4% slow answers (0.2 to 2 s); one caller in ten
// aborts at a random point within 1.5 s. Behind the faults is the package's fake Odds API
// (pkg-template/demo/fake-odds-api.js), whose two limiters per key, `snapshot` (GET
// /v1/events/{id}/odds/snapshot, burst 3 at 1/s) and `events` (GET /v1/events/{id}, burst 5 at
// 2/s), answer with X-RateLimit-Limit / -Remaining / -Bucket and, when a bucket is empty, 429
// with Retry-After: 1.
//
// The client is one process of three threads (the main thread, which loads odds-gate first, and
// two worker threads), each with its own zero-configuration wrappers (`createFetch()`: no rate,
// so every gate learns; default retries), making a third of the calls on the same keys, so the
// threads share every gate through the SharedArrayBuffer. A third of the calls are event
// lookups, so a key has a gate per limiter. 500 keys are in use at any time: a window that goes
// once round a ring of 2,000 keys per lap, so every key is used, left idle while the window is
// elsewhere (an idle gate may be forgotten then), and used again in the next lap. At most 200
// calls are outstanding (waiting, in flight or reading their body) across the three threads.
//
// Phases: a warm-up lap of each kind (the same shape as the measured laps, a Redis kill
// included), then idle until the sweeps have forgotten the idle gates: memory at the start, a
// steady state. Then two laps "in memory" (the threads share the gates in memory); two laps
// "through Redis", each thread's wrapper with `store: redisStore(...)` (its own ioredis client)
// on a real redis-server on a free loopback port, killed half-way through each lap and
// restarted 2 s later (nothing saved); then idle again: memory at the end.
// Memory after each phase, after three GCs in every thread (node --expose-gc): RSS of the
// process; the JS heaps, wasm memories (a wasm memory never shrinks: it shows the peak) and
// wasm-bindgen externref tables of the three threads; the gates alive in their wrappers
// (stats().gates). A second lap over the same keys tells memory that grows with the keys seen
// (the first lap) from memory that grows with calls (the second). The verdict is "within 10 %"
// when end <= 1.1 x start for each of RSS, JS heap and wasm.
//
// Also reported: every call settled exactly once (counted per call; a call still unsettled 180 s
// after its thread made its last call is hung), the outcomes by route, what the server saw by
// limiter and the faults it injected, the wrappers' onEvent counts, sockets open at the server
// once the calls have settled and once the client has gone, whether the worker threads and the
// client process exit on their own (within 10 s of being done, else "hung"). Network: 127.0.0.1
// only. Every loop is bounded in count and in time (a thread makes calls for at most
// PHASE_LIMIT_MS per phase; the whole soak is killed after 30 minutes).
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { setTimeout as sleep } from 'node:timers/promises';
import { within } from './lib/util.mjs';

const self = fileURLToPath(import.meta.url);
const ROLE = isMainThread ? process.argv[2] : '--worker';

const DEFAULT_CALLS = 30_000;
const THREADS = 3; // the main thread and two workers
const IN_FLIGHT = 200; // calls outstanding at once, across the threads
const ACTIVE = 500; // keys in use at any time
const RING = 2_000; // keys of a kind; the window of ACTIVE goes once round it per lap
const HUNG_MS = 180_000; // a call unsettled this long after its thread made its last is hung
const PHASE_LIMIT_MS = 240_000; // no call is made later than this into a phase
const IDLE_MS = 75_000; // the longest an idle phase waits for the sweeps to forget the idle gates
const EXIT_MS = 10_000; // a thread or process done this long without exiting is hung
const SLICE_MS = 10_000; // calls settled are counted per slice of a phase
const ALLOWANCE = { burst: 3, perSecond: 1, events: { burst: 5, perSecond: 2 }, retryAfterSeconds: 1 };
const FAULTS = '2% connection resets, 8% 503s (2% with Retry-After: 1), 4% slow answers (0.2-2 s)';

if (ROLE === '--server') {
  // The fake Odds API with soak.mjs's faults in front: its server's request handler is wrapped
  // (http.createServer, patched while the fake API makes its server) so a faulted request never
  // reaches it; the others meet its limiters.
  const { default: http } = await import('node:http');
  const { startFakeOddsApi } = await import('../js-tests/support/fake-odds-api.mjs');
  const faults = { resets: 0, unavailable: 0, unavailableRetryAfter: 0, slow: 0 };
  const create = http.createServer;
  http.createServer = (handler) => create.call(http, (req, res) => {
    const r = Math.random();
    if (r < 0.02) { faults.resets++; return req.socket.destroy(); }
    if (r < 0.10) {
      req.resume();
      const retryAfter = r < 0.04;
      faults[retryAfter ? 'unavailableRetryAfter' : 'unavailable']++;
      res.writeHead(503, { 'Content-Type': 'application/json', ...(retryAfter && { 'Retry-After': '1' }) });
      return res.end('{"detail":"unavailable"}');
    }
    if (r > 0.96) { faults.slow++; return setTimeout(() => handler(req, res), 200 + Math.random() * 1800); }
    return handler(req, res);
  });
  let api;
  try {
    api = await startFakeOddsApi(ALLOWANCE);
  } finally {
    http.createServer = create;
  }
  const figures = () => {
    const s = api.stats();
    return {
      byBucket: s.byBucket, keys: Object.keys(s.byKey).length, usageCalls: s.usageCalls,
      sockets: s.sockets, faults: { ...faults },
    };
  };
  process.on('message', (m) => {
    if (m === 'stats') process.send(figures());
    if (m === 'stop') api.close().then(() => process.disconnect());
  });
  process.send({ port: api.port });
} else if (ROLE === '--client' || ROLE === '--worker') {
  await client();
} else {
  await orchestrate();
}

// One thread of the client: its wrappers, and what it does when asked.
async function thread({ index, port, redisPort }) {
  const { loadPkg } = await import('./lib/util.mjs');
  const pkg = await loadPkg(); // in the main thread, before the workers start: they inherit its shared memory
  const base = `http://127.0.0.1:${port}/v1`;
  let events = new Map();
  const onEvent = (e) => events.set(e.type, (events.get(e.type) ?? 0) + 1);
  const wrappers = { memory: pkg.createFetch({ onEvent }) }; // zero configuration: no rate, so it learns
  let redis = null;
  const wrapper = async (kind) => {
    if (kind === 'redis' && !wrappers.redis) {
      const { default: Redis } = await import('ioredis');
      redis = new Redis({ port: redisPort, host: '127.0.0.1', maxRetriesPerRequest: 1, retryStrategy: () => 100 });
      redis.on('error', () => {});
      wrappers.redis = pkg.createFetch({ onEvent, store: pkg.redisStore(redis, { timeoutMs: 200, retryMs: 500 }) });
    }
    return wrappers[kind];
  };

  // This thread's share of a phase: calls i = index, index + THREADS, ... < calls.
  async function phase({ kind, prefix, calls, laps, onProgress }) {
    const fetchImpl = await wrapper(kind);
    events = new Map();
    const n = Math.max(0, Math.ceil((calls - index) / THREADS));
    const settles = new Uint8Array(n);
    const took = new Float64Array(n).fill(NaN); // ms from the call to its settling
    const perSlice = new Uint32Array(Math.ceil((PHASE_LIMIT_MS + HUNG_MS) / SLICE_MS) + 1); // calls settled per SLICE_MS
    const outcomes = new Map(); // outcome -> [snapshot, events]
    const count = (outcome, route) => {
      const row = outcomes.get(outcome) ?? outcomes.set(outcome, [0, 0]).get(outcome);
      row[route === 'snapshot' ? 0 : 1]++;
    };
    const cap = Math.ceil(IN_FLIGHT / THREADS);
    let outstanding = 0;
    let wake = null;
    const nudge = () => { const w = wake; wake = null; w?.(); };
    const nudged = () => new Promise((resolve) => { wake = resolve; });
    const started = performance.now();
    let made = 0;
    for (let j = 0; j < n; j++) {
      if (performance.now() - started > PHASE_LIMIT_MS) break;
      onProgress?.(j / n);
      const i = j * THREADS + index;
      const pos = Math.floor((i * laps * RING) / calls);
      const key = `${prefix}-${(pos + (i % ACTIVE)) % RING}`;
      const route = Math.random() < 1 / 3 ? 'events' : 'snapshot';
      const url = route === 'events' ? `${base}/events/e${i % 1000}` : `${base}/events/e${i % 1000}/odds/snapshot`;
      const ac = Math.random() < 0.1 ? new AbortController() : null;
      const abort = ac && setTimeout(() => ac.abort(), Math.random() * 1500);
      outstanding++;
      made++;
      const t = performance.now();
      const settled = () => {
        settles[j] = Math.min(255, settles[j] + 1);
        const now = performance.now();
        took[j] = now - t;
        perSlice[Math.min(perSlice.length - 1, Math.floor((now - started) / SLICE_MS))]++;
      };
      fetchImpl(url, { headers: { 'X-API-Key': key }, signal: ac?.signal }).then(
        async (r) => {
          settled();
          try {
            await r.text();
            count(`status ${r.status}`, route);
          } catch (e) {
            count(`status ${r.status}, body failed: ${e?.name}`, route);
          }
        },
        (e) => {
          settled();
          count(e?.name === 'GateAbandonedError' ? `abandoned: ${e.reason}` : `rejected: ${e?.name ?? 'error'}`, route);
        },
      ).finally(() => { clearTimeout(abort); outstanding--; nudge(); });
      while (outstanding >= cap) await nudged();
    }
    const issuedS = (performance.now() - started) / 1000;
    let expired = false;
    const limit = setTimeout(() => { expired = true; nudge(); }, HUNG_MS);
    while (outstanding > 0 && !expired) await nudged();
    clearTimeout(limit);
    let once = 0;
    let more = 0;
    let never = 0;
    for (let j = 0; j < made; j++) {
      if (settles[j] === 1) once++;
      else if (settles[j] > 1) more++;
      else never++;
    }
    const sorted = took.slice(0, made).filter((x) => !Number.isNaN(x)).sort(); // the settled calls
    const at = (q) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] : NaN);
    return {
      planned: n, made, once, more, never, unfinished: outstanding, issuedS,
      took: { p50: at(0.5), p90: at(0.9), p99: at(0.99), max: sorted.length ? sorted[sorted.length - 1] : NaN, over10s: sorted.filter((x) => x > 10_000).length },
      perSlice: [...perSlice.slice(0, Math.ceil((performance.now() - started) / SLICE_MS))],
      seconds: (performance.now() - started) / 1000,
      outcomes: [...outcomes], events: [...events],
    };
  }

  // Gates alive in each wrapper (counted in a function of its own, so nothing of the figures,
  // some KB per gate, stays reachable from this one while it awaits), then memory after three GCs.
  const countGates = () => Object.fromEntries(Object.entries(wrappers).map(([kind, w]) => {
    const list = w.stats().gates;
    // What the gates still alive hold (a gate that holds none of these is idle, and the next
    // sweep forgets it).
    const holding = {
      waiting: list.filter((g) => g.waiting > 0).length,
      timer: list.filter((g) => g.timerArmed).length,
      cooldown: list.filter((g) => g.cooldownRemainingMs > 0).length,
      quota: list.filter((g) => g.quota.state !== 'open').length,
      storeDown: list.filter((g) => g.store.up === false).length,
      slow: list.filter((g) => g.slow).length,
    };
    return [kind, { live: list.length, learning: list.filter((g) => g.learned).length, holding }];
  }));
  async function memory() {
    const gates = countGates();
    for (let i = 0; i < 3; i++) { globalThis.gc?.(); await sleep(50); }
    const m = process.memoryUsage();
    return { rss: m.rss, heap: m.heapUsed, wasm: pkg.wasmMemoryBytes(), table: pkg.wasmTableLength(), gates };
  }

  async function finish() {
    if (redis) await within(redis.quit().catch(() => {}), 2_000);
    redis?.disconnect();
    return true;
  }

  const describe = () => Object.fromEntries(Object.entries(wrappers).map(([k, w]) => [k, w.describe().store]));
  return { phase, memory, finish, describe, wrapper };
}

async function client() {
  if (!isMainThread) {
    // A worker: answers the main thread's requests one at a time, and lets go of its port when
    // told to finish (then nothing should keep it alive).
    const t = await thread(workerData);
    parentPort.on('message', async ({ id, op, arg }) => {
      const out = op === 'phase' ? await t.phase(arg) : op === 'memory' ? await t.memory() : op === 'describe' ? t.describe()
        : op === 'wrapper' ? (await t.wrapper(arg), true) : await t.finish();
      parentPort.postMessage({ id, out });
      if (op === 'finish') parentPort.close();
    });
    parentPort.postMessage({ ready: true });
    return;
  }
  const [calls, port, redisPort] = process.argv.slice(3).map(Number);
  // Requests to the orchestrator (server figures, Redis kills), one at a time.
  let asked = 0;
  const ask = (what) => new Promise((resolve) => {
    const id = ++asked;
    const on = (m) => { if (m?.answer === id) { process.off('message', on); resolve(m.value); } };
    process.on('message', on);
    process.send({ ask: what, id });
  });
  const main = await thread({ index: 0, port, redisPort });
  const workers = [1, 2].map((index) => new Worker(self, { workerData: { index, port, redisPort } }));
  await Promise.all(workers.map((w) => new Promise((resolve, reject) => { w.once('message', resolve); w.once('error', reject); })));
  const exited = workers.map((w) => new Promise((resolve) => w.once('exit', (code) => resolve({ code, at: performance.now() }))));
  let rpcs = 0;
  const rpc = (w, op, arg) => new Promise((resolve, reject) => {
    const id = ++rpcs;
    const on = (m) => { if (m?.id === id) { w.off('message', on); w.off('error', reject); resolve(m.out); } };
    w.on('message', on);
    w.once('error', reject);
    w.postMessage({ id, op, arg });
  });
  const everyThread = (op, arg, mainArg = arg) => Promise.all([
    op === 'phase' ? main.phase(mainArg) : main[op](arg), ...workers.map((w) => rpc(w, op, arg))]);

  const sum = (xs, f) => xs.reduce((a, x) => a + f(x), 0);
  const merge = (lists) => {
    const m = new Map();
    for (const list of lists) for (const [k, v] of list) {
      const cur = m.get(k);
      m.set(k, Array.isArray(v) ? (cur ? cur.map((c, i) => c + v[i]) : [...v]) : (cur ?? 0) + v);
    }
    return [...m];
  };
  const serverDelta = (a, b) => ({
    byBucket: Object.fromEntries(Object.keys(b.byBucket).map((k) => [k, Object.fromEntries(
      Object.keys(b.byBucket[k]).map((f) => [f, b.byBucket[k][f] - (a.byBucket[k]?.[f] ?? 0)]))])),
    faults: Object.fromEntries(Object.keys(b.faults).map((f) => [f, b.faults[f] - a.faults[f]])),
    usageCalls: b.usageCalls - a.usageCalls,
  });

  const memory = async () => {
    const m = await everyThread('memory');
    const gates = m.map((x) => x.gates);
    const total = (f) => sum(gates, (g) => sum(Object.values(g), f));
    return {
      rss: m[0].rss, heap: sum(m, (x) => x.heap), wasm: sum(m, (x) => x.wasm), table: sum(m, (x) => x.table),
      gates: total((x) => x.live), learned: total((x) => x.learning), perThread: gates,
    };
  };

  // One phase in every thread; redis-server killed (and up again 2 s later) at the given
  // fractions of the main thread's calls; memory after it.
  async function phase(name, arg, killAt = []) {
    const before = await ask('server');
    const t0 = performance.now();
    const kills = [];
    let killing = null;
    const plan = [...killAt];
    const onProgress = (f) => {
      if (killing || !plan.length || f < plan[0]) return;
      plan.shift();
      killing = (async () => {
        const at = (performance.now() - t0) / 1000;
        await ask('kill');
        await sleep(2_000);
        await ask('restart');
        kills.push([at, (performance.now() - t0) / 1000]);
      })().finally(() => { killing = null; });
    };
    const threads = await everyThread('phase', arg, { ...arg, onProgress });
    while (killing) await killing; // a kill under way ends with redis-server up again
    const after = await ask('server');
    const seconds = (performance.now() - t0) / 1000;
    return {
      name, seconds,
      calls: {
        planned: sum(threads, (t) => t.planned), made: sum(threads, (t) => t.made), once: sum(threads, (t) => t.once),
        more: sum(threads, (t) => t.more), never: sum(threads, (t) => t.never), unfinished: sum(threads, (t) => t.unfinished),
      },
      perThread: threads.map((t) => ({ made: t.made, issuedS: t.issuedS, seconds: t.seconds, took: t.took })),
      perSlice: threads.reduce((a, t) => t.perSlice.map((x, k) => x + (a[k] ?? 0)), []),
      outcomes: merge(threads.map((t) => t.outcomes)).sort((a, b) => b[1][0] + b[1][1] - a[1][0] - a[1][1]),
      events: merge(threads.map((t) => t.events)).sort((a, b) => b[1] - a[1]),
      server: serverDelta(before, after), kills, memory: await memory(),
    };
  }

  // Idle: no calls until every thread's sweep has forgotten its idle gates (within a minute; at
  // most IDLE_MS), memory then.
  async function idle(name) {
    const t0 = performance.now();
    let m = await memory();
    while (m.gates > 0 && performance.now() - t0 < IDLE_MS) {
      await sleep(5_000);
      m = await memory();
    }
    return { name, seconds: (performance.now() - t0) / 1000, memory: m };
  }

  const lap = Math.ceil(calls / 2);
  const warm = lap;
  const started = performance.now();
  await everyThread('wrapper', 'redis'); // made (with its Redis client) before the warm-up
  // The warm-ups are laps of their own, shaped as the measured ones (a Redis kill included): the
  // start is a steady state, every key seen once and every buffer grown to a lap's size.
  const warmups = [
    await phase('warm-up in memory (keys 0-1999)', { kind: 'memory', prefix: 'mem', calls: warm, laps: 1 }),
    await phase('warm-up through Redis (keys 0-1999, killed and restarted once)', { kind: 'redis', prefix: 'redis', calls: warm, laps: 1 }, [0.5]),
  ];
  const idleStart = await idle('idle after the warm-ups');
  const phases = [
    await phase('in memory, lap 1 (keys 0-1999)', { kind: 'memory', prefix: 'mem', calls: lap, laps: 1 }),
    await phase('in memory, lap 2 (the same keys again)', { kind: 'memory', prefix: 'mem', calls: lap, laps: 1 }),
    await phase('through Redis, lap 1 (killed and restarted once)', { kind: 'redis', prefix: 'redis', calls: lap, laps: 1 }, [0.5]),
    await phase('through Redis, lap 2 (killed and restarted once)', { kind: 'redis', prefix: 'redis', calls: lap, laps: 1 }, [0.5]),
  ];
  const idleEnd = await idle('idle at the end');
  const socketsSettled = (await ask('server')).sockets.open;
  const stores = await everyThread('describe');
  // Done: the workers close their Redis clients and their ports, and should then exit by themselves.
  await everyThread('finish');
  const finished = performance.now();
  const workerExits = await Promise.all(exited.map((p, k) => within(p, EXIT_MS, null).then((e) => {
    if (e) return { thread: k + 1, code: e.code, ms: Math.round(e.at - finished) };
    workers[k].terminate();
    return { thread: k + 1, hung: true };
  })));
  const report = {
    calls, warm, lap, seconds: (finished - started) / 1000, warmups, phases, idleStart, idleEnd, socketsSettled, workerExits, stores: stores[0],
  };
  process.send({ report }, () => process.disconnect());
}

async function orchestrate() {
  const calls = Number(process.argv[2] ?? DEFAULT_CALLS);
  if (!Number.isSafeInteger(calls) || calls < 3 * THREADS) {
    console.error('usage: node bench/soak-features.mjs [calls per phase, an integer >= 9]');
    process.exit(2);
  }
  const { startRedis } = await import('../js-tests/support/redis-server.mjs');
  const started = Date.now();
  const server = fork(self, ['--server']);
  const { port } = await new Promise((resolve) => server.once('message', resolve));
  const serverStats = () => new Promise((resolve) => { server.once('message', resolve); server.send('stats'); });
  const redis = await startRedis();
  const client = fork(self, ['--client', String(calls), String(port), String(redis.port)], { execArgv: ['--expose-gc'] });
  let report;
  let reportedAt;
  const redisLog = [];
  client.on('message', async (m) => {
    if (m.report) { report = m.report; reportedAt = Date.now(); return; }
    let value = true;
    if (m.ask === 'server') value = await serverStats();
    else if (m.ask === 'kill') { await redis.kill(); redisLog.push('killed'); }
    else if (m.ask === 'restart') { await redis.restart(); redisLog.push('restarted'); }
    if (client.connected) client.send({ answer: m.id, value });
  });
  const overall = 30 * 60_000;
  let exitMs = null;
  const ended = new Promise((resolve) => client.once('exit', (code, signal) => resolve({ code, signal })));
  const watch = setInterval(() => {
    if (reportedAt && Date.now() - reportedAt > EXIT_MS && exitMs === null) { exitMs = 'hung'; client.kill('SIGKILL'); }
    if (Date.now() - started > overall) { console.log('the soak did not end in 30 minutes: killed'); client.kill('SIGKILL'); }
  }, 250);
  const { code, signal } = await ended;
  clearInterval(watch);
  if (exitMs === null && reportedAt) exitMs = Date.now() - reportedAt;
  const last = await serverStats();
  server.send('stop');
  await redis.stop();
  if (!report) {
    console.log(`the soak died (code ${code}, signal ${signal}) before reporting`);
    process.exitCode = 1;
    return;
  }
  print(report, { exitMs, code, signal, socketsGone: last.sockets, wallS: (Date.now() - started) / 1000, redisLog });
}

function print(r, end) {
  const int = (x) => Math.round(x).toLocaleString('en-US');
  const mb = (n) => (n / 2 ** 20).toFixed(1);
  const all = [...r.warmups, ...r.phases];
  const total = (f) => all.reduce((a, p) => a + f(p.calls), 0);
  console.log(`soak-features: ${int(r.calls)} calls per kind (two laps of ${int(r.lap)}), warm-up ${int(r.warm)} per kind; ${end.wallS.toFixed(0)} s in all`);
  console.log(`client: one process, ${THREADS} threads (main + 2 worker_threads), each its own createFetch() (no rate: learning; default retries)` +
    ` on the same keys; ${ACTIVE} keys in use at a time, a window going once round ${int(RING)} keys per lap; at most ${IN_FLIGHT} calls outstanding;` +
    ' a third of the calls event lookups; one caller in ten aborts within 1.5 s');
  console.log(`server (own process): fake Odds API, per key: snapshot burst ${ALLOWANCE.burst} at ${ALLOWANCE.perSecond}/s, events burst ` +
    `${ALLOWANCE.events.burst} at ${ALLOWANCE.events.perSecond}/s (X-RateLimit-Limit/-Remaining/-Bucket; 429 + Retry-After: 1); faults in front: ${FAULTS}`);
  console.log(`stores: in memory: ${r.stores.memory}\n        Redis: ${r.stores.redis}`);
  for (const p of all) {
    const c = p.calls;
    const f1 = (x) => x.toFixed(1);
    console.log(`\n== ${p.name}: ${p.seconds.toFixed(0)} s (per thread: calls made within ${p.perThread.map((t) => f1(t.issuedS)).join(' / ')} s, ` +
      `all settled by ${p.perThread.map((t) => f1(t.seconds)).join(' / ')} s)`);
    console.log(`calls: made ${int(c.made)} of ${int(c.planned)}, settled exactly once ${int(c.once)}, more than once ${int(c.more)}, ` +
      `unsettled ${HUNG_MS / 1000} s after the last was made (hung) ${int(c.never)}`);
    const took = (k) => p.perThread.map((t) => int(t.took[k])).join(' / ');
    console.log(`time to settle (ms, per thread): p50 ${took('p50')}, p90 ${took('p90')}, p99 ${took('p99')}, max ${took('max')}; ` +
      `calls over 10 s: ${int(p.perThread.reduce((a, t) => a + t.took.over10s, 0))}`);
    console.log(`calls settled per ${SLICE_MS / 1000} s: ${p.perSlice.map(int).join(' ')}`);
    if (p.kills.length) console.log(`redis-server: ${p.kills.map(([a, b]) => `killed at ${a.toFixed(1)} s, up again at ${b.toFixed(1)} s`).join('; ')}`);
    console.table(p.outcomes.map(([outcome, [s, e]]) => ({ outcome, snapshot: s, events: e, all: s + e })));
    const b = p.server.byBucket;
    const f = p.server.faults;
    console.log(`server saw: ${Object.entries(b).map(([k, v]) => `${k} ${int(v.attempts)} requests, ${int(v.ok)} 200s, ${int(v.throttled)} 429s` +
      ` (${v.attempts ? ((100 * v.throttled) / v.attempts).toFixed(1) : 0} %)`).join('; ')}; /usage ${p.server.usageCalls}`);
    console.log(`faults injected: ${f.resets} resets, ${f.unavailable} 503s, ${f.unavailableRetryAfter} 503s with Retry-After, ${f.slow} slow`);
    console.log(`onEvent: ${p.events.map(([k, v]) => `${k} ${int(v)}`).join(', ') || 'none'}`);
  }
  console.log(`\nall phases: ${int(total((c) => c.made))} calls made, ${int(total((c) => c.once))} settled exactly once, ` +
    `${int(total((c) => c.more))} more than once, ${int(total((c) => c.never))} hung`);

  console.log('\nmemory after 3 GCs in every thread (RSS of the process; JS heaps, wasm memories and externref tables of the 3 threads; live gates of their 6 wrappers)');
  const idleRow = (p) => [`${p.name} (${p.seconds.toFixed(0)} s without calls)`, p.memory];
  const rows = [
    ...r.warmups.map((p) => [`after the ${p.name.replace(/ \(.*/, '')}`, p.memory]), idleRow(r.idleStart),
    ...r.phases.map((p) => [`after ${p.name.replace(/ \(.*/, '')}`, p.memory]), idleRow(r.idleEnd),
  ];
  console.log('start: idle after the warm-up laps; end: idle after the four measured laps (each idle until the sweeps forgot the idle gates)');
  const s = r.idleStart.memory;
  console.table(rows.map(([when, m]) => ({
    when, 'RSS (MB)': mb(m.rss), 'JS heap (MB)': mb(m.heap), 'wasm (MB)': mb(m.wasm), 'externref table': int(m.table), gates: int(m.gates),
  })));
  const e = r.idleEnd.memory;
  for (const p of [r.idleStart, r.idleEnd]) {
    const kinds = {};
    for (const thread of p.memory.perThread) {
      for (const [kind, g] of Object.entries(thread)) {
        const k = (kinds[kind] ??= { live: 0, holding: {} });
        k.live += g.live;
        for (const [what, n] of Object.entries(g.holding)) k.holding[what] = (k.holding[what] ?? 0) + n;
      }
    }
    console.log(`gates alive, ${p.name}: ${Object.entries(kinds).map(([kind, k]) => `${kind} ${int(k.live)} (` +
      `${Object.entries(k.holding).map(([what, n]) => `${what} ${int(n)}`).join(', ')})`).join('; ')}`);
  }
  const measures = [['RSS', 'rss'], ['JS heap', 'heap'], ['wasm', 'wasm']];
  const ratio = (k) => e[k] / s[k];
  console.log(`end/start: ${measures.map(([n, k]) => `${n} ${ratio(k).toFixed(2)}`).join(', ')}; live gates ${int(s.gates)} -> ${int(e.gates)}`);
  const made = e.gates - s.gates;
  if (made > 0) {
    console.log(`per gate alive at the end beyond the start (${int(made)}): wasm ${int((e.wasm - s.wasm) / made)} B, JS heap ${int((e.heap - s.heap) / made)} B, RSS ${int((e.rss - s.rss) / made)} B`);
  }
  const second = r.phases.filter((p) => / lap 2/.test(p.name)).map((p) => {
    const before = r.phases[r.phases.indexOf(p) - 1].memory;
    return `${p.name.replace(/ \(.*/, '')}: RSS ${(p.memory.rss / before.rss).toFixed(2)}, JS heap ${(p.memory.heap / before.heap).toFixed(2)}, ` +
      `wasm ${(p.memory.wasm / before.wasm).toFixed(2)}, gates ${int(before.gates)} -> ${int(p.memory.gates)}`;
  });
  console.log(`second laps over the same keys (after/before): ${second.join('; ')}`);
  const over = measures.filter(([, k]) => e[k] > 1.1 * s[k]).map(([n]) => n);
  console.log(`verdict (memory at the end within 10 % of the start, after a GC): ${over.length ? `MISSED (${over.join(', ')} above 1.10 x)` : 'met'}`);
  console.log(`sockets open at the server: ${r.socketsSettled} once every call had settled (the client's idle keep-alive connections), ` +
    `${end.socketsGone.open} once the client had gone (${int(end.socketsGone.opened)} opened in all, at most ${end.socketsGone.peakOpen} at once)`);
  console.log(`worker threads told to finish: ${r.workerExits.map((w) => (w.hung ? `thread ${w.thread} hung (terminated after ${EXIT_MS / 1000} s)` : `thread ${w.thread} exited on its own (code ${w.code}) in ${w.ms} ms`)).join('; ')}`);
  console.log(`the client ${end.exitMs === 'hung' ? `hung: still running ${EXIT_MS / 1000} s after its report (killed)`
    : end.code === 0 ? `exited on its own ${end.exitMs} ms after its report` : `exited with ${end.code ?? end.signal} ${end.exitMs} ms after its report`}`);
}

// One process whose worker threads share a key: run as `node threads-scenario.mjs '<job>'`, it
// prints one JSON line. The same file is the threads' script (workerData says what to do).
//
// Jobs (job.mode; job.shareThreads: false gives the snapshot threads `threads: false`):
//   main-first   the main thread loads odds-gate, then starts job.threads threads
//   workers-only the main thread never loads odds-gate; job.threads threads do
//   late-main    two threads load it and start; the main thread loads it afterwards, runs its
//                own workers, and starts one more thread after its first call
//   hammer       job.threads threads spend a burst of job.tokens that never refills, each
//                trying job.tokens / 2 times: the admissions must add up to job.tokens
//   terminate    a thread admitting in a tight loop is terminated job.rounds times; then the
//                main thread must still be admitted
//   mismatch     the main thread uses the key at job.rate; a thread asks for another allowance
//   alone        two threads with `threads: false` each spend a burst of 10 of their own
//   redis        job.threads threads keep the gate in Redis (port job.redisPort)
//   lanes        two threads make a weight-1 lane and a weight-9 lane on one key, in that
//                order: one sends job.background calls in the first, then the other, job.delayMs
//                later, job.live calls in the second; prints when each call was done
//   small        a shared table of 4 slots that may grow to 8: the main thread keeps 9 keys
//                busy; then a thread asks twice on the 8th (in the grown half) and the 9th, and
//                so does a thread that used the table before it grew
//   late         the main thread loads odds-gate 150 ms into the process (past the early
//                start), after starting an idle worker thread when job.worker: prints how long
//                from the import to its first call's answer
import { Worker, isMainThread, parentPort, setEnvironmentData, workerData } from 'node:worker_threads';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { SHARED_MEMORY_SIZE } from './shared-memory-name.mjs';

const pkg = new URL('../../pkg/index.js', import.meta.url).href;
const self = fileURLToPath(import.meta.url);
// A response on the next turn of the event loop, as any real fetch's is: a thread that never
// lets its loop turn cannot hear of the others.
const instant = () => new Promise((resolve) => setImmediate(() => resolve(new Response('{}'))));

async function thread({ role, job }) {
  const { createFetch } = await import(pkg);
  if (role === 'snapshots') {
    const { runWorkers } = await import('./workers.mjs');
    const fetchImpl = createFetch({ rate: job.rate, ...(job.shareThreads === false && { threads: false }) });
    parentPort.postMessage({ ready: true });
    await new Promise((resolve) => parentPort.once('message', resolve));
    const counts = await runWorkers({ fetchImpl, baseUrl: job.baseUrl, apiKey: job.apiKey, workers: job.workers, timeoutMs: 60_000 });
    parentPort.postMessage({ counts, describe: fetchImpl.describe().scope });
  } else if (role === 'hammer') {
    const fetchImpl = createFetch({ rate: { burst: job.tokens, perSecond: 1e-6 }, fetch: instant, retry: false, maxWaitMs: 1000 });
    let admitted = 0;
    for (let i = 0; i < job.tokens / 2; i++) {
      try {
        await fetchImpl('http://127.0.0.1:9/x', { headers: { 'X-API-Key': job.apiKey } });
        admitted++;
      } catch (error) {
        if (error.name !== 'GateAbandonedError') throw error;
      }
    }
    parentPort.postMessage({ admitted });
  } else if (role === 'ask') {
    const fetchImpl = createFetch({ rate: job.rate, ...(job.threads === false && { threads: false }), fetch: instant, retry: false, maxWaitMs: 100 });
    let admitted = 0;
    let error = null;
    for (let i = 0; i < (job.calls ?? 1); i++) {
      try {
        await fetchImpl('http://127.0.0.1:9/x', { headers: { 'X-API-Key': job.apiKey } });
        admitted++;
      } catch (e) {
        error ??= { name: e.name, message: e.message };
      }
    }
    parentPort.postMessage({ admitted, error, store: fetchImpl.describe().store });
  } else if (role === 'redis') {
    const { default: Redis } = await import('ioredis');
    const { runWorkers } = await import('./workers.mjs');
    const client = new Redis({ port: job.redisPort, host: '127.0.0.1' });
    const { redisStore } = await import(pkg);
    const fetchImpl = createFetch({ rate: job.rate, store: redisStore(client) });
    const counts = await runWorkers({ fetchImpl, baseUrl: job.baseUrl, apiKey: job.apiKey, workers: job.workers, timeoutMs: 60_000 });
    await client.quit();
    parentPort.postMessage({ counts });
  } else if (role === 'lanes') {
    const fetchImpl = createFetch({ rate: job.rate });
    const lanes = { background: fetchImpl.lane({ weight: 1, retry: false }), live: fetchImpl.lane({ weight: 9 }) };
    parentPort.postMessage({ ready: true });
    await new Promise((resolve) => parentPort.once('message', resolve));
    const headers = { 'X-API-Key': job.apiKey };
    const calls = Array.from({ length: job.calls }, async (_, n) => {
      const response = await lanes[job.kind](`${job.baseUrl}/events/${job.kind}-${n}/odds/snapshot`, { headers });
      await response.text();
      return { kind: job.kind, status: response.status, at: performance.timeOrigin + performance.now() };
    });
    parentPort.postMessage({ done: await Promise.all(calls) });
  } else if (role === 'early') {
    // Uses the table while it is small, then, told to, asks on job.later (in the grown half).
    const fetchImpl = createFetch({ rate: job.rate, fetch: instant, retry: false, maxWaitMs: 100 });
    await fetchImpl('http://127.0.0.1:9/x', { headers: { 'X-API-Key': job.apiKey } });
    parentPort.postMessage({ ready: true });
    await new Promise((resolve) => parentPort.once('message', resolve));
    const outcomes = [];
    for (let i = 0; i < 2; i++) {
      try {
        outcomes.push((await fetchImpl('http://127.0.0.1:9/x', { headers: { 'X-API-Key': job.later } })).status);
      } catch (error) {
        outcomes.push(error.name);
      }
    }
    parentPort.postMessage({ outcomes });
  } else if (role === 'spin') {
    const fetchImpl = createFetch({ rate: { burst: 1e9, perSecond: 1 }, fetch: instant, retry: false });
    const init = { headers: { 'X-API-Key': job.apiKey } };
    await fetchImpl('http://127.0.0.1:9/x', init);
    parentPort.postMessage({ spinning: true });
    for (let i = 0; i < 1e7; i++) await fetchImpl('http://127.0.0.1:9/x', init);
  }
}

const start = (role, job) => {
  const worker = new Worker(self, { workerData: { role, job } });
  const messages = [];
  const waiters = [];
  worker.on('message', (m) => (waiters.length ? waiters.shift()(m) : messages.push(m)));
  worker.on('error', (e) => {
    console.error(e);
    process.exit(3);
  });
  const next = () => (messages.length ? Promise.resolve(messages.shift()) : new Promise((r) => waiters.push(r)));
  return { worker, next };
};

async function main(job) {
  const started = performance.now();
  const result = { mode: job.mode };
  if (job.mode === 'hammer') {
    const threads = Array.from({ length: job.threads }, () => start('hammer', job));
    result.admitted = (await Promise.all(threads.map((t) => t.next()))).map((m) => m.admitted);
  } else if (job.mode === 'terminate') {
    const { createFetch } = await import(pkg);
    const fetchImpl = createFetch({ rate: { burst: 1e9, perSecond: 1 }, fetch: instant, retry: false });
    for (let round = 0; round < job.rounds; round++) {
      const spinner = start('spin', job);
      await spinner.next();
      // Somewhere in its loop: perhaps holding the gate's slot.
      await new Promise((resolve) => setTimeout(resolve, 5 + (round % 7)));
      await spinner.worker.terminate();
    }
    const asked = performance.now();
    await fetchImpl('http://127.0.0.1:9/x', { headers: { 'X-API-Key': job.apiKey } });
    result.admittedAfterMs = performance.now() - asked;
  } else if (job.mode === 'mismatch') {
    const { createFetch } = await import(pkg);
    const fetchImpl = createFetch({ rate: job.rate, fetch: instant, retry: false });
    await fetchImpl('http://127.0.0.1:9/x', { headers: { 'X-API-Key': job.apiKey } });
    const other = start('ask', { ...job, rate: { burst: job.rate.burst + 1, perSecond: job.rate.perSecond } });
    result.other = await other.next();
    result.same = await start('ask', job).next();
  } else if (job.mode === 'alone') {
    const asks = [0, 1].map(() => start('ask', { ...job, threads: false, calls: 10 }));
    result.alone = await Promise.all(asks.map((a) => a.next()));
  } else if (job.mode === 'late') {
    const idle = job.worker ? new Worker('setTimeout(() => {}, 60000);', { eval: true }) : null;
    if (idle) await new Promise((resolve) => idle.once('online', resolve));
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, 150 - performance.now())));
    const asked = performance.now();
    const { createFetch } = await import(pkg);
    const fetchImpl = createFetch({ rate: job.rate, fetch: instant, retry: false });
    await fetchImpl('http://127.0.0.1:9/x', { headers: { 'X-API-Key': job.apiKey } });
    result.firstMs = performance.now() - asked;
    await idle?.terminate();
  } else if (job.mode === 'small') {
    setEnvironmentData(SHARED_MEMORY_SIZE, [4, 8]);
    const { createFetch } = await import(pkg);
    const events = [];
    const fetchImpl = createFetch({ rate: job.rate, fetch: instant, retry: false, onEvent: (e) => events.push(e) });
    const keys = Array.from({ length: 9 }, (_, i) => `${job.apiKey}-${i}`);
    const early = start('early', { ...job, apiKey: keys[0], later: keys[7] });
    await early.next();
    for (const key of [...keys, keys[8]]) await fetchImpl('http://127.0.0.1:9/x', { headers: { 'X-API-Key': key } });
    result.events = events.map(({ type, slots }) => ({ type, slots }));
    result.threads = fetchImpl.stats().gates.map((g) => g.store.threads).reverse();
    result.store = fetchImpl.describe().store;
    result.grown = (await start('ask', { ...job, apiKey: keys[7], calls: 2 }).next()).admitted;
    early.worker.postMessage('go');
    result.grownEarly = (await early.next()).outcomes;
    result.full = (await start('ask', { ...job, apiKey: keys[8], calls: 2 }).next()).admitted;
  } else if (job.mode === 'lanes') {
    const [background, live] = [
      start('lanes', { ...job, kind: 'background', calls: job.background }),
      start('lanes', { ...job, kind: 'live', calls: job.live }),
    ];
    await Promise.all([background.next(), live.next()]);
    background.worker.postMessage('go');
    await new Promise((resolve) => setTimeout(resolve, job.delayMs));
    live.worker.postMessage('go');
    const done = (await Promise.all([background.next(), live.next()])).flatMap((m) => m.done);
    result.done = done.sort((a, b) => a.at - b.at).map(({ kind, status }) => ({ kind, status }));
  } else if (job.mode === 'redis') {
    const threads = Array.from({ length: job.threads }, () => start('redis', job));
    result.threads = (await Promise.all(threads.map((t) => t.next()))).map((m) => m.counts);
  } else {
    let local = null;
    if (job.mode === 'main-first') local = (await import(pkg)).createFetch({ rate: job.rate });
    const first = job.mode === 'late-main' ? 2 : job.threads;
    const threads = Array.from({ length: first }, () => start('snapshots', job));
    await Promise.all(threads.map((t) => t.next()));
    const go = performance.now();
    for (const t of threads) t.worker.postMessage('go');
    const runs = threads.map((t) => t.next());
    if (job.mode === 'late-main') {
      const { createFetch } = await import(pkg);
      const { runWorkers } = await import('./workers.mjs');
      local = createFetch({ rate: job.rate });
      const own = runWorkers({ fetchImpl: local, baseUrl: job.baseUrl, apiKey: job.apiKey, workers: job.workers, timeoutMs: 60_000 });
      // One more thread, started after this thread's first call.
      await new Promise((resolve) => setTimeout(resolve, 10));
      const late = start('snapshots', job);
      await late.next();
      late.worker.postMessage('go');
      runs.push(late.next(), own.then((counts) => ({ counts })));
    }
    const done = await Promise.all(runs);
    result.runMs = performance.now() - go;
    result.threads = done.map((d) => d.counts);
    result.scope = done.find((d) => d.describe)?.describe;
    result.mainDescribe = local?.describe().store;
  }
  result.wallMs = performance.now() - started;
  console.log(JSON.stringify(result));
  process.exit(0);
}

if (isMainThread) await main(JSON.parse(process.argv[2]));
else await thread(workerData);

// The threads' shared memory under many busy keys (#23): 4 worker threads each make one call
// on their share of the busy keys (a stub answers; burst 2 at 1 per 100 s, so no key's bucket
// refills during the run: none of their slots can be given to another key), then all four
// spend one more key, a new one, at 5/s against the fake Odds API. Each row runs in a fresh
// process (`node bench/slots.mjs <keys> [most]`): the shared memory is the process's. The last
// row holds the table at its first 16,384 slots (shared_memory.js's test-only size), as it was before
// it could grow: what falls back, and what says so.
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Worker, isMainThread, parentPort, setEnvironmentData, workerData } from 'node:worker_threads';
import { startFakeOddsApi } from '../js-tests/support/fake-odds-api.mjs';
import { fix, int } from './lib/util.mjs';
import { SHARED_MEMORY_SIZE } from '../js-tests/support/shared-memory-name.mjs';

const THREADS = 4;
const HOT = { burst: 5, perSecond: 5 };
const CALLS = 16; // per thread on the new key
const BUSY = { burst: 2, perSecond: 0.01 };
const URL_ = (base) => `${base}/events/e1/odds/snapshot`;
const pkg = process.env.ODDS_GATE_PKG ?? new URL('../pkg/index.js', import.meta.url).href;

/** In a worker: fill its share of the busy keys, wait for the others, then spend the new key. */
async function worker() {
  const { createFetch } = await import(pkg);
  const { keys, offset, baseUrl, hotKey } = workerData;
  let full = 0;
  const onEvent = (e) => e.type === 'shared-memory-full' && full++;
  const ok = new Response('{}');
  const busy = createFetch({ rate: BUSY, retry: false, fetch: () => Promise.resolve(ok), onEvent });
  const started = performance.now();
  for (let i = 0; i < keys; i++) await busy(URL_(baseUrl), { headers: { 'X-API-Key': `busy-${offset + i}` } });
  const fillS = (performance.now() - started) / 1000;
  const alone = busy.stats().gates.filter((g) => g.store.threads === false).length;
  parentPort.postMessage({ fillS });
  await new Promise((resolve) => parentPort.once('message', resolve));
  const hot = createFetch({ rate: HOT, onEvent });
  const init = { headers: { 'X-API-Key': hotKey } };
  const results = await Promise.allSettled(Array.from({ length: CALLS }, () => hot(URL_(baseUrl), init)));
  const failed = results.filter((r) => r.status === 'rejected' || !r.value.ok).length;
  const gate = hot.stats().gates[0];
  parentPort.postMessage({
    fillS, alone, full, failed, hotShared: gate.store.threads ?? 'n/a', store: busy.describe().store,
    slots: /a slot per key, (\d+) now/.exec(busy.describe().store)?.[1] ?? 'n/a',
  });
}

/** One row, in this process: `keys` busy keys across the threads, then the new key. */
async function row(keys, most) {
  if (most) setEnvironmentData(SHARED_MEMORY_SIZE, [16384, most]);
  await import(pkg); // the main thread first: the threads inherit its shared memory
  const api = await startFakeOddsApi(HOT);
  const hotKey = `hot-${randomUUID()}`;
  const rss0 = process.memoryUsage().rss;
  const started = performance.now();
  const share = Math.ceil(keys / THREADS);
  const pool = Array.from({ length: THREADS }, (_, t) => new Worker(fileURLToPath(import.meta.url), {
    workerData: { role: 'worker', keys: share, offset: t * share, baseUrl: api.baseUrl, hotKey },
  }));
  const next = (w) => new Promise((resolve, reject) => { w.once('message', resolve); w.once('error', reject); });
  await Promise.all(pool.map(next));
  const filledS = (performance.now() - started) / 1000;
  const rssFilled = process.memoryUsage().rss;
  api.reset();
  const hotStarted = performance.now();
  const outs = await Promise.all(pool.map((w) => { const n = next(w); w.postMessage('go'); return n; }));
  const hotS = (performance.now() - hotStarted) / 1000;
  const s = api.stats();
  await Promise.all(pool.map((w) => w.terminate()));
  await api.close();
  const sum = (k) => outs.reduce((n, o) => n + o[k], 0);
  return {
    keys: share * THREADS, filledS, alone: sum('alone'), full: sum('full'), attempts: s.attempts, throttled: s.throttled,
    failed: sum('failed'), hotShared: outs.map((o) => o.hotShared).join('/'), hotS,
    rssMb: (rssFilled - rss0) / 2 ** 20, store: outs[0].store, slots: outs[0].slots,
  };
}

export async function run({ quick }) {
  const cases = [[10_000], [50_000], ...(quick ? [] : [[100_000]]), [50_000, 16_384]];
  const rows = [];
  const seen = [];
  for (const [keys, most] of cases) {
    const { stdout } = await promisify(execFile)(process.execPath, [fileURLToPath(import.meta.url), String(keys), ...(most ? [String(most)] : [])],
      { timeout: 600_000, maxBuffer: 1 << 24 });
    const r = { ...JSON.parse(stdout), most };
    seen.push(r);
    rows.push([`${int(r.keys)}${most ? ` (table held to ${int(most)})` : ''}`, int(Number(r.slots)), fix(r.filledS), `${int(r.keys - r.alone)} / ${int(r.alone)}`, int(r.full), String(r.hotShared),
      int(r.attempts), int(r.throttled), `${r.failed} of ${THREADS * CALLS}`, fix(r.hotS), fix(r.rssMb, 0)]);
  }
  const at50k = seen.find((r) => r.keys === 50_000 && !r.most);
  const met = at50k.alone === 0 && at50k.throttled <= 1 && at50k.failed === 0;
  return [{
    id: 'threads-slots',
    title: 'Worker threads: the shared memory under many busy keys',
    what: `one process, ${THREADS} worker threads; each makes one call on each of its share of the busy keys (distinct keys, ` +
      `burst ${BUSY.burst} at ${BUSY.perSecond}/s, a stub answers, so no bucket refills and no slot can be given to another key), ` +
      `then each makes ${CALLS} calls at once on one new key (burst ${HOT.burst} at ${HOT.perSecond}/s, default retries) against ` +
      'the fake Odds API with that allowance. Shared / per-thread = the busy keys\' gates whose state the threads share or keep ' +
      'alone (stats().gates[i].store.threads), summed over the threads; full events = onEvent \'shared-memory-full\'; new key ' +
      'shared = each thread\'s gate of the new key; attempts and 429s are the server\'s, failed = calls rejected or not ok; RSS = ' +
      'growth of the process\'s resident memory over the fill (the shared table is 1,000 bytes a slot, 16 MB at first; the ' +
      'rest is mostly the threads\' own gates, one per busy key in each thread that used it); each row in a fresh process; one run. ' +
      `describe().store at 50,000: "${at50k.store}"`,
    target: '50,000 busy keys: every key shared by the threads, the new key 0 failed calls and <= 1 429',
    verdict: met ? 'met' : 'MISSED',
    head: ['busy keys', 'table slots', 'fill (s)', 'shared / per-thread', 'full events', 'new key shared', 'attempts', '429s', 'failed', 'new key (s)', 'RSS (MB)'],
    rows,
  }];
}

if (!isMainThread && workerData?.role === 'worker') await worker();
else if (isMainThread && process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(JSON.stringify(await row(Number(process.argv[2]), Number(process.argv[3] ?? 0))));
}

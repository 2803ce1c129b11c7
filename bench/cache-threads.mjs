// The threads' cache, per process (#48, "count against maxBytes for the whole process"): 4 worker
// threads each make 8,000 distinct GETs (100 at a time) of 2 KB answers fresh for 10 minutes
// through `cache: { maxBytes: 8 MiB }` (each thread's share of URLs alone is 16 MB: every cache
// fills to its bound), against a node:http server on 127.0.0.1 in the main thread. Rows: the
// threads sharing the cache (the default) and threads: false (each thread's own cache of 8 MiB);
// no cache for the floor. RSS of the process after a full GC in every thread, grown from before
// the first call. Each row in a fresh process. ODDS_GATE_BEFORE_PKG=<a pkg/ dir> adds the same
// rows for that build, run in the same rounds.
import { createServer } from 'node:http';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker, getEnvironmentData, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { fix, int, perModeAndBuild } from './lib/util.mjs';
import { SHARED_MEMORY } from '../js-tests/support/shared-memory-name.mjs';

const THREADS = 4;
const EACH = 8_000;
const MAX_BYTES = 8 * 2 ** 20;
const BODY = JSON.stringify({ id: 'evt', filler: 'x'.repeat(2_000 - 24) });
const MODES = [
  ['threads on', { cache: { maxBytes: MAX_BYTES } }],
  ['threads off', { cache: { maxBytes: MAX_BYTES }, threads: false }],
  ['no cache', {}],
];

const mb = () => {
  globalThis.gc?.();
  return process.memoryUsage().rss / 2 ** 20;
};

/** A worker: its 8,000 URLs, then a GC; says how many entries its cache keeps. */
async function work({ pkg, options, base, t }) {
  const { createFetch } = await import(pathToFileURL(`${pkg}/index.js`).href);
  const fetchImpl = createFetch({ rate: { burst: 1e6, perSecond: 1e6 }, ...options });
  const init = { headers: { 'X-API-Key': 'bench-key' } };
  for (let i = 0; i < EACH; i += 100) {
    await Promise.all(Array.from({ length: 100 }, async (_, j) => (await fetchImpl(`${base}/v1/t${t}/e${i + j}`, init)).text()));
  }
  parentPort.postMessage({ filled: true, entries: fetchImpl.stats().cache?.entries ?? 0 });
  // Keeps its caches alive until the main thread has measured.
  parentPort.once('message', () => {
    globalThis.gc?.();
    const { heapUsed, external } = process.memoryUsage();
    parentPort.postMessage({ held: (heapUsed + external) / 2 ** 20, keep: fetchImpl.stats().cache?.entries ?? 0 });
  });
}

/** One mode's figures, in this process. */
async function measure(pkg, options) {
  // This thread makes the shared memory the workers inherit, as an application's main thread does.
  await import(pathToFileURL(`${pkg}/index.js`).href);
  const server = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=600' });
    res.end(BODY);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${server.address().port}`;
  const start = mb();
  const started = performance.now();
  const workers = Array.from({ length: THREADS }, (_, t) =>
    new Worker(fileURLToPath(import.meta.url), { workerData: { pkg, options, base, t } }));
  const next = (w) => new Promise((resolve) => w.once('message', resolve));
  const filled = await Promise.all(workers.map(next));
  const seconds = (performance.now() - started) / 1000;
  const gcs = workers.map(next);
  for (const w of workers) w.postMessage('gc');
  const held = (await Promise.all(gcs)).reduce((sum, g) => sum + g.held, 0);
  const grown = mb() - start;
  // The threads' ring, as the workers found it (this thread made the shared memory).
  const ring = getEnvironmentData(SHARED_MEMORY)?.[1]?.byteLength;
  await Promise.all(workers.map((w) => w.terminate()));
  server.close();
  return { start, grown, held, ring: ring === undefined ? '-' : fix(ring / 2 ** 20, 1), entries: filled.reduce((n, f) => n + f.entries, 0), seconds };
}

export async function run() {
  const rows = [];
  const grown = {};
  // Fewer malloc arenas per thread: RSS then varies less between runs.
  for (const [row, r] of await perModeAndBuild(import.meta.url, MODES.map(([m]) => m), { MALLOC_ARENA_MAX: '2' })) {
    grown[row] = r.grown;
    grown[`${row} held`] = r.held;
    rows.push([row, fix(r.start, 0), `+${fix(r.grown, 0)}`, fix(r.held, 0), r.ring, String(r.entries), fix(r.seconds, 1)]);
  }
  const over = (mode) => grown[`${mode} held`] - grown['no cache held'];
  const mib = MAX_BYTES / 2 ** 20;
  const before = grown['threads on (before) held'] === undefined ? '' : `; the build before: +${fix(grown['threads on (before) held'] - grown['no cache (before) held'], 0)}`;
  return [{
    id: 'cache-threads',
    title: `The threads' cache per process: ${THREADS} threads x ${int(EACH)} URLs x 2 KB through ${mib} MiB (#48)`,
    what: `${THREADS} worker threads of one process each make ${int(EACH)} distinct GETs (100 at a time) of 2 KB answers fresh ` +
      `for 10 minutes through cache: { maxBytes: ${MAX_BYTES} } (each thread's URLs alone are 16 MB: every cache fills to its ` +
      'bound): the threads sharing the cache (the default), threads: false (a cache of its own per thread), and no cache; ' +
      'a node:http server on 127.0.0.1 in the main thread. After a full GC in every thread: the process\'s RSS (at the start, ' +
      'and grown; glibc keeps freed memory per thread, so it varies by 100 MB and more between runs), the threads\' JS memory ' +
      '(heap used and external memory, summed over the 4 workers, in MB) and the threads\' ring (the shared memory holding ' +
      'the shared entries\' bytes); entries = the threads\' stats().cache.entries summed (each thread counts the entries it ' +
      'answers from, wherever their bytes are); MALLOC_ARENA_MAX=2; each row in a fresh process; one run',
    target: 'the threads\' entries held once per process: the threads\' JS memory over no cache less with threads on than with threads off (a copy per thread)',
    verdict: `${over('threads on') < over('threads off') ? 'met' : 'MISSED'} (threads' JS memory over no cache: threads on +${fix(over('threads on'), 0)} MB ` +
      `beside a ring of ${mib} MiB, threads off +${fix(over('threads off'), 0)}${before})`,
    head: ['mode', 'RSS at start', 'RSS grown', 'threads\' JS MB', 'ring MB', 'entries', 'seconds'],
    rows,
  }];
}

if (!isMainThread) {
  await work(workerData);
} else if (process.argv[2] === '--child') {
  const options = Object.fromEntries(MODES)[process.argv[4]];
  process.send(await measure(process.argv[3], options), () => process.exit(0));
}

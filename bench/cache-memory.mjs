// The cache's memory with many URLs (#48, "bounded in every mode"): 90,000 distinct GETs of 2 KB
// answers, fresh for 60 s (about the run's length: a thread that kept every one holds them all),
// through `cache: { maxBytes: 64 KiB }`, with the threads sharing the cache (the default),
// without them (`threads: false`) and with no cache, against a node:http server on 127.0.0.1 in
// the same process (the same in every mode). Not a stub inner fetch: on
// Node 20, `clone()` of a Response made from a string keeps about 4.6 KB of heap each (its
// undici), which real fetch answers do not. RSS (after a full GC) before the first call, at
// 30,000, 60,000 and 90,000 URLs, and 3 s past the last lifetime with no call meanwhile (what an
// idle process still holds). Each mode in a fresh process; about 2 minutes each.
// `node bench/run.mjs --only cache-memory` writes its table; ODDS_GATE_BEFORE_PKG=<a pkg/ dir>
// adds the same rows for that build, run in the same rounds.
import { createServer } from 'node:http';
import { pathToFileURL } from 'node:url';
import { fix, int, perModeAndBuild } from './lib/util.mjs';

const URLS = 90_000;
const MARKS = [30_000, 60_000, 90_000];
const BODY = JSON.stringify({ id: 'evt', filler: 'x'.repeat(2_000 - 24) });
const LIFETIME_S = 60;
const MODES = [['threads on', { cache: { maxBytes: 65_536 } }], ['threads off', { cache: { maxBytes: 65_536 }, threads: false }], ['no cache', {}]];

const mb = () => {
  globalThis.gc?.();
  return process.memoryUsage().rss / 2 ** 20;
};

/** One mode's RSS figures (MB), in this process. */
async function measure(pkg, options) {
  const { createFetch } = await import(pathToFileURL(`${pkg}/index.js`).href);
  const server = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': `max-age=${LIFETIME_S}` });
    res.end(BODY);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${server.address().port}`;
  const fetchImpl = createFetch({ rate: { burst: 1e6, perSecond: 1e6 }, ...options });
  const init = { headers: { 'X-API-Key': 'bench-key' } };
  await (await fetchImpl(`${base}/warm`, init)).text();
  const figures = { start: mb() };
  const started = performance.now();
  for (let i = 0; i < URLS; i += 100) {
    await Promise.all(Array.from({ length: 100 }, async (_, j) => (await fetchImpl(`${base}/v1/e${i + j}`, init)).text()));
    if (MARKS.includes(i + 100)) figures[i + 100] = mb();
  }
  figures.seconds = (performance.now() - started) / 1000;
  await new Promise((resolve) => setTimeout(resolve, (LIFETIME_S + 3) * 1000));
  figures.idle = mb();
  figures.entries = fetchImpl.stats().cache?.entries ?? '-';
  server.close();
  return figures;
}

export async function run() {
  const rows = [];
  const grown = {};
  for (const [row, r] of await perModeAndBuild(import.meta.url, MODES.map(([m]) => m))) {
    grown[row] = r[90_000] - r.start;
    rows.push([row, fix(r.start, 0), ...MARKS.map((m) => `+${fix(r[m] - r.start, 0)}`),
      `+${fix(r.idle - r.start, 0)}`, String(r.entries), fix(r.seconds, 1)]);
  }
  const over = grown['threads on'] - grown['threads off'];
  return [{
    id: 'cache-memory',
    title: 'The cache\'s memory with many URLs: 90,000 x 2 KB through 64 KiB (#48)',
    what: `${int(URLS)} distinct GETs (100 at a time) of 2 KB answers fresh for ${LIFETIME_S} s through cache: { maxBytes: 65536 } ` +
      'with the threads sharing the cache (the default), with threads: false, and with no cache; a node:http server on ' +
      '127.0.0.1 in the same process, one key; ' +
      'RSS after a full GC, in MB: at the start, then grown by 30,000 / 60,000 / 90,000 URLs and 3 s past the last lifetime with ' +
      'no call; each row in a fresh process',
    target: 'threads on within tens of MB of threads off (issue #48)',
    verdict: `${over < 30 ? 'met' : 'MISSED'} (threads on +${fix(grown['threads on'], 0)} MB at 90,000, threads off +${fix(grown['threads off'], 0)})`,
    head: ['mode', 'RSS at start', '30,000', '60,000', '90,000', 'idle, 3 s past', 'entries', 'seconds'],
    rows,
  }];
}

if (process.argv[2] === '--child') {
  const options = Object.fromEntries(MODES)[process.argv[4]];
  process.send(await measure(process.argv[3], options), () => process.exit(0));
}

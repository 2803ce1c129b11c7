// The cost of stats(), and of one metrics collection, with many live gates (#38 asks stats()
// over 10,000 gates in under 50 ms): makes N keys' gates (no network: a stub inner fetch) on a
// wrapper with an OpenTelemetry meter, then times stats() and a collection by the SDK's
// MetricReader three times each (medians), for 10,000 and 100,000 gates, each in a fresh process.
// `node bench/run.mjs --only stats` writes its table; `node bench/stats.mjs [pkgDir] [N]` prints
// one N's figures for a build (run it on two builds to compare).
import { fork } from 'node:child_process';
import { resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import { fix, int, median, textTable } from './lib/util.mjs';

const TARGET_MS = 50;
const SIZES = [10_000, 100_000];

class Reader extends MetricReader {
  async onForceFlush() {}
  async onShutdown() {}
}

/** One build's figures with `n` gates: stats() and collection times (ms, three each), stats()'s JSON size. */
async function measure(pkg, n) {
  const { createFetch } = await import(pathToFileURL(`${pkg}/index.js`).href);
  const reader = new Reader();
  const provider = new MeterProvider({ readers: [reader] });
  const rate = { burst: 1, perSecond: 0.001 }; // a spent bucket keeps every gate worth remembering
  const fetch = async () => new Response('ok');
  const fetchImpl = createFetch({ rate, fetch, meter: provider.getMeter('bench') });
  for (let i = 0; i < n; i += 1_000) {
    await Promise.all(Array.from({ length: Math.min(1_000, n - i) }, async (_, j) =>
      (await fetchImpl('http://127.0.0.1:9/x', { headers: { 'X-API-Key': `key-${i + j}` } })).text()));
  }
  const stats = [];
  const collect = [];
  let gates = 0;
  let bytes = 0;
  for (let round = 0; round < 3; round++) {
    let started = performance.now();
    const s = fetchImpl.stats();
    stats.push(performance.now() - started);
    gates = s.gates.length;
    bytes = JSON.stringify(s).length;
    started = performance.now();
    await reader.collect();
    collect.push(performance.now() - started);
  }
  await provider.shutdown();
  return { gates, bytes, stats, collect };
}

function inChild(pkg, n) {
  return new Promise((resolve, reject) => {
    const child = fork(fileURLToPath(import.meta.url), ['--child', pkg, String(n)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    child.on('message', resolve);
    child.on('exit', (code) => code && reject(new Error(`stats with ${n} gates: exited with ${code}`)));
  });
}

export async function run() {
  const pkg = fileURLToPath(new URL('../pkg', import.meta.url));
  const rows = [];
  let at10k;
  for (const n of SIZES) {
    const r = await inChild(pkg, n);
    const ms = median(r.stats);
    if (n === 10_000) at10k = ms;
    rows.push([int(r.gates), fix(ms, 1), fix((ms * 1000) / r.gates, 1), fix(r.bytes / 1e6, 1), fix(median(r.collect), 0)]);
  }
  return [{
    id: 'stats',
    title: 'stats() and a metrics collection over many live gates',
    what: 'one wrapper with an OpenTelemetry meter, one call on each of N keys (a stub inner fetch; a spent bucket, burst 1 at ' +
      '0.001/s, keeps every gate live), then stats() and one collection by the SDK\'s MetricReader, three times each, medians; ' +
      'each N in a fresh process; JSON MB = the length of JSON.stringify(stats())',
    target: `stats() over 10,000 gates in under ${TARGET_MS} ms (issue #38)`,
    verdict: `${at10k < TARGET_MS ? 'met' : 'MISSED'} (${fix(at10k, 1)} ms)`,
    head: ['gates', 'stats() ms', 'us per gate', 'JSON MB', 'collection ms'],
    rows,
  }];
}

if (process.argv[2] === '--child') {
  process.send(await measure(process.argv[3], Number(process.argv[4])), () => process.exit(0));
} else if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const pkg = resolve(process.argv[2] ?? fileURLToPath(new URL('../pkg', import.meta.url)));
  const n = Number(process.argv[3] ?? 40_000);
  const r = await inChild(pkg, n);
  console.log(textTable(['gates', 'stats() ms (3 runs)', 'JSON MB', 'collection ms (3 runs)'],
    [[int(r.gates), r.stats.map((x) => fix(x, 0)).join(' / '), fix(r.bytes / 1e6, 1), r.collect.map((x) => fix(x, 0)).join(' / ')]]));
}

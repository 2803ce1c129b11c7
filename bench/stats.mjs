// The cost of stats(), and of one metrics collection, with many live gates: makes N keys'
// gates (no network: a stub inner fetch) on a wrapper with an OpenTelemetry meter, then times
// stats() and a collection by the SDK's MetricReader three times each.
// `node bench/stats.mjs [pkgDir] [N]`; run it on two builds to compare (bench/REMAINS.md
// quotes it). A build without `meter` support is timed for stats() only.
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';

const pkg = resolve(process.argv[2] ?? new URL('../pkg', import.meta.url).pathname);
const n = Number(process.argv[3] ?? 40_000);
const { createFetch } = await import(pathToFileURL(`${pkg}/index.js`).href);

class Reader extends MetricReader {
  async onForceFlush() {}
  async onShutdown() {}
}
const reader = new Reader();
const provider = new MeterProvider({ readers: [reader] });
const rate = { burst: 1, perSecond: 0.001 }; // a spent bucket keeps every gate worth remembering
const fetch = async () => new Response('ok');
let fetchImpl;
let metered = true;
try {
  fetchImpl = createFetch({ rate, fetch, meter: provider.getMeter('bench') });
} catch {
  metered = false;
  fetchImpl = createFetch({ rate, fetch });
}
for (let i = 0; i < n; i++) {
  await (await fetchImpl('http://127.0.0.1:9/x', { headers: { 'X-API-Key': `key-${i}` } })).text();
}
const time = (what, gates, ms) => console.log(`${what} with ${gates} gates: ${ms.toFixed(0)} ms (${((ms * 1000) / gates).toFixed(1)} us per gate)`);
for (let round = 0; round < 3; round++) {
  let started = performance.now();
  const { gates } = fetchImpl.stats();
  time('stats()', gates.length, performance.now() - started);
  if (!metered) continue;
  started = performance.now();
  await reader.collect();
  time('metrics collection', gates.length, performance.now() - started);
}
await provider.shutdown();

// The cost of stats() with many live gates: makes N keys' gates (no network: a stub inner
// fetch), then times stats() three times. `node bench/stats.mjs [pkgDir] [N]`; run it on two
// builds to compare (bench/REMAINS.md quotes it).
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const pkg = resolve(process.argv[2] ?? new URL('../pkg', import.meta.url).pathname);
const n = Number(process.argv[3] ?? 40_000);
const { createFetch } = await import(pathToFileURL(`${pkg}/index.js`).href);
// A slow refill keeps every gate worth remembering (a spent bucket), so none is forgotten.
const fetchImpl = createFetch({ rate: { burst: 1, perSecond: 0.001 }, fetch: async () => new Response('ok') });
for (let i = 0; i < n; i++) {
  await (await fetchImpl('http://127.0.0.1:9/x', { headers: { 'X-API-Key': `key-${i}` } })).text();
}
for (let round = 0; round < 3; round++) {
  const started = performance.now();
  const { gates } = fetchImpl.stats();
  const ms = performance.now() - started;
  console.log(`stats() with ${gates.length} gates: ${ms.toFixed(0)} ms (${((ms * 1000) / gates.length).toFixed(1)} us per gate)`);
}

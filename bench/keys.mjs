// 6. Many keys: a backend serving many users' keys sees waves of new credentials. Each wave makes
// one call for each of `perWave` keys never seen before (the inner fetch answers at once), then
// waits until every gate of the wave is idle (bucket full again). RSS after gc() is read after each
// wave; a gate kept forever shows as a steady climb per key per wave, a forgotten one as none.
// Twice, each in a process of its own: a fixed rate, and the default `createFetch()`, which
// learns (a forgotten learning gate leaves its estimate behind, a bounded table of them).
import { randomUUID } from 'node:crypto';
import { loadPkg, int, fix } from './lib/util.mjs';

const TARGET_B = 200; // RSS per key per wave, once memory is reused

const settle = async () => {
  for (let i = 0; i < 3; i++) {
    globalThis.gc?.();
    await new Promise((r) => setTimeout(r, 20));
  }
};

const KINDS = {
  fixed: { label: 'a fixed rate (burst 2 at 1000/s)', options: { rate: { burst: 2, perSecond: 1_000 } } },
  learning: { label: 'the default createFetch() (learns)', options: {} },
};

export async function run({ quick, variant = 'fixed' }) {
  const { createFetch, wasmMemoryBytes } = await loadPkg();
  const kind = KINDS[variant];
  if (!kind) throw new RangeError(`keys: no variant ${variant}; choose from ${Object.keys(KINDS).join(', ')}`);
  const perWave = quick ? 5_000 : 20_000;
  const waves = quick ? 4 : 8;
  const response = new Response('{}');
  const fetchImpl = createFetch({ ...kind.options, fetch: async () => response });
  const rows = [];
  let previous;
  let afterSecond; // RSS once the second wave is done: memory from then on should be reused
  const reused = [];
  for (let w = 0; w < waves; w++) {
    const id = randomUUID();
    const t0 = performance.now();
    await Promise.all(Array.from({ length: perWave }, (_, i) =>
      fetchImpl('http://127.0.0.1:9/v1/events/e/odds/snapshot', { headers: { 'X-API-Key': `k-${id}-${i}` } })));
    const callMs = performance.now() - t0;
    await new Promise((r) => setTimeout(r, 50)); // every gate of the wave refills: idle
    await settle();
    const rss = process.memoryUsage().rss;
    const stats = fetchImpl.stats();
    const perKey = previous === undefined ? null : (rss - previous) / perWave;
    if (w === 1) afterSecond = rss;
    if (w >= 2) reused.push(perKey);
    rows.push([w + 1, int(perWave), int(stats.gates.length), int(stats.admitted), fix(rss / 1e6, 1), fix(wasmMemoryBytes() / 1e6, 1),
      perKey === null ? '-' : int(perKey), fix((callMs * 1e3) / perWave, 1)]);
    previous = rss;
  }
  // RSS moves by a few MB either way from one wave to the next (the allocator, the GC); a
  // gate kept per key climbs every wave. So the verdict is the growth over all later waves.
  const net = (previous - afterSecond) / (perWave * (waves - 2));
  return [{
    id: variant === 'fixed' ? 'keys' : `keys-${variant}`,
    title: `Many keys: waves of new credentials, ${kind.label}`,
    what: `${waves} waves of ${int(perWave)} keys never seen before, one call each through one wrapper with ${kind.label} ` +
      `(the inner fetch answers at once, no rate-limit headers); after each wave, 50 ms for every bucket to refill, then gc() and RSS. ` +
      `Gates live = gates the wrapper still knows; idle gates are forgotten as new ones are made (two looked at per new gate); ` +
      `wasm MB = the module's linear memory (it never shrinks: a climb there is memory the core kept)`,
    target: `waves of new keys reuse memory: <= ${TARGET_B} B of RSS per key per wave (from wave 3 on)`,
    verdict: `${net <= TARGET_B ? 'met' : 'MISSED'} (${int(net)} B per key per wave from the end of wave 2 to the end of wave ${waves}; ` +
      `single waves from ${int(Math.min(...reused))} to ${int(Math.max(...reused))})`,
    head: ['wave', 'new keys', 'gates live', 'admitted (total)', 'RSS MB', 'wasm MB', 'RSS B/key vs previous wave', 'us/call'],
    rows,
  }];
}

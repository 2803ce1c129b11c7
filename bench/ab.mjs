// Two builds side by side: `node bench/ab.mjs <pkg dir A> <pkg dir B> [retry|no-retry]`. Both
// packages are loaded into one process and timed in interleaved rounds (sequential awaited calls,
// the inner fetch answering at once, a rate that never throttles), so the machine's noise falls
// on both alike. For "is this change faster or slower than main": build main in a worktree
// (`git worktree add /tmp/main main && (cd /tmp/main && bash scripts/build.sh)`) and compare its
// pkg/ with this one's.
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const [a, b, mode = 'retry'] = process.argv.slice(2);
if (!a || !b) {
  console.error('usage: node bench/ab.mjs <pkg dir A> <pkg dir B> [retry|no-retry]');
  process.exit(2);
}
const response = new Response('{}');
const url = 'http://127.0.0.1:9/v1/events/e1/odds/snapshot'; // never contacted
const load = async (dir, tag) => {
  const { createFetch } = await import(pathToFileURL(resolve(dir, 'index.js')).href);
  const fetchImpl = createFetch({
    rate: { burst: 1e6, perSecond: 1e9 }, retry: mode === 'no-retry' ? false : undefined,
    fetch: () => Promise.resolve(response),
  });
  const init = { method: 'GET', headers: { Accept: 'application/json', 'X-API-Key': `ab-${tag}` } };
  return async (n) => {
    const t0 = performance.now();
    for (let i = 0; i < n; i++) await fetchImpl(url, init);
    return ((performance.now() - t0) * 1e6) / n;
  };
};
const [runA, runB] = [await load(a, 'a'), await load(b, 'b')];
await runA(20_000);
await runB(20_000);
const [nsA, nsB] = [[], []];
for (let round = 0; round < 9; round++) {
  const order = round % 2 ? [[runB, nsB], [runA, nsA]] : [[runA, nsA], [runB, nsB]];
  for (const [run, into] of order) into.push(await run(20_000));
}
const median = (xs) => [...xs].sort((x, y) => x - y)[xs.length >> 1];
console.log(`${mode}: A ${median(nsA).toFixed(0)} ns/call, B ${median(nsB).toFixed(0)} ns/call, B/A ${(median(nsB) / median(nsA)).toFixed(2)}`);

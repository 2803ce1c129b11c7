// Memory per live key (#38): a backend serving many users' keys keeps a limiter per key. Each
// contender, in a process of its own, makes one call for each of 10,000 keys, then 40,000 more
// (the inner fetch answers at once), and reads memory after gc() at both points: the bytes per
// key are the growth between them divided by 40,000 (what the first keys found already
// allocated does not count). odds-gate's gates are kept live by a spent bucket (burst 1 at
// 0.001/s, as bench/stats.mjs does) or, learning, by counts that say a bucket of 1,000 is spent, or are the default createFetch()'s; bottleneck's
// `Group` makes a limiter per key (`minTime`), `limiter` a `RateLimiter` per key in a Map.
// JS heap = heapUsed; wasm = odds-gate's linear memory (it grows in 64 KiB pages).
// `node bench/run.mjs --only memory` writes its table; `node bench/memory.mjs` prints it.
import { fork } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { loadPkg, int, median, textTable } from './lib/util.mjs';

const FIRST = 10_000;
const MORE = 40_000;
const TARGET_B = 1_000;
const ROUNDS = 3;
const url = 'http://127.0.0.1:9/v1/events/e/odds/snapshot';
const answer = async () => new Response('{}');

const settle = async () => {
  for (let i = 0; i < 3; i++) {
    globalThis.gc?.();
    await new Promise((r) => setTimeout(r, 20));
  }
};

/** Each contender: `make()` -> `{ call(key), live(), end() }`. */
const CONTENDERS = {
  'odds-gate, a spent fixed rate': async () => {
    const { createFetch } = await loadPkg();
    const f = createFetch({ rate: { burst: 1, perSecond: 0.001 }, fetch: answer });
    return { call: async (key) => (await f(url, { headers: { 'X-API-Key': key } })).text(), live: () => f.stats().gates.length };
  },
  'odds-gate learning (createFetch()), every gate live': async () => {
    const { createFetch } = await loadPkg();
    // Counts that say the key's bucket of 1,000 is spent: the learning gate, paced at 10 a
    // second until it sees a refill, stays live for 100 s, longer than the run.
    const spent = async () => new Response('{}', { headers: { 'X-RateLimit-Limit': '1000', 'X-RateLimit-Remaining': '0' } });
    const f = createFetch({ fetch: spent });
    return { call: async (key) => (await f(url, { headers: { 'X-API-Key': key } })).text(), live: () => f.stats().gates.length };
  },
  'odds-gate, the default createFetch()': async () => {
    const { createFetch } = await loadPkg();
    const f = createFetch({ fetch: answer });
    return { call: async (key) => (await f(url, { headers: { 'X-API-Key': key } })).text(), live: () => f.stats().gates.length };
  },
  "bottleneck's Group (minTime 500 ms a key)": async () => {
    const { default: Bottleneck } = await import('bottleneck');
    const group = new Bottleneck.Group({ minTime: 500 });
    return {
      call: async (key) => (await group.key(key).schedule(() => answer(url))).text(),
      live: () => group.keys().length,
      end: () => group.disconnect(),
    };
  },
  "limiter's RateLimiter a key (2 a second)": async () => {
    const { RateLimiter } = await import('limiter');
    const limiters = new Map();
    return {
      call: async (key) => {
        let l = limiters.get(key);
        if (!l) limiters.set(key, (l = new RateLimiter({ tokensPerInterval: 2, interval: 'second' })));
        await l.removeTokens(1);
        return (await answer(url)).text();
      },
      live: () => limiters.size,
    };
  },
};

/** In a child: one contender's figures. */
async function measure(name) {
  const wasm = name.startsWith('odds-gate') ? (await loadPkg()).wasmMemoryBytes : () => 0;
  const c = await CONTENDERS[name]();
  await c.call('warm-up');
  const point = async () => {
    await settle();
    return { heap: process.memoryUsage().heapUsed, wasm: wasm(), live: c.live() };
  };
  const calls = async (from, n) => {
    for (let i = from; i < from + n; i += 1_000) {
      await Promise.all(Array.from({ length: 1_000 }, (_, j) => c.call(`key-${i + j}`)));
    }
  };
  await calls(0, FIRST);
  const a = await point();
  await calls(FIRST, MORE);
  const b = await point();
  c.end?.();
  return { heap: (b.heap - a.heap) / MORE, wasm: (b.wasm - a.wasm) / MORE, live: b.live };
}

function inChild(name) {
  return new Promise((resolve, reject) => {
    const child = fork(fileURLToPath(import.meta.url), ['--contender', name], { execArgv: ['--expose-gc'] });
    child.on('message', resolve);
    child.on('error', reject);
    child.on('exit', (code) => code && reject(new Error(`${name}: exited with ${code}`)));
  });
}

export async function run() {
  const names = Object.keys(CONTENDERS);
  const seen = Object.fromEntries(names.map((n) => [n, []]));
  for (let r = 0; r < ROUNDS; r++) {
    for (const n of names.map((_, i) => names[(i + r) % names.length])) seen[n].push(await inChild(n));
  }
  const rows = names.map((n) => {
    const runs = seen[n];
    const heap = median(runs.map((x) => x.heap));
    const wasm = median(runs.map((x) => x.wasm));
    return [n, int(median(runs.map((x) => x.live))), int(heap), int(wasm), int(median(runs.map((x) => x.heap + x.wasm)))];
  });
  const bytes = (row) => Number(row[4].replaceAll(',', ''));
  const live = bytes(rows[0]); // every gate of the spent fixed rate stays live
  const learning = bytes(rows[1]); // and every learning gate told its bucket is spent
  return [{
    id: 'memory',
    title: 'Memory per live key: odds-gate against bottleneck and limiter',
    what: `each contender in a fresh process (--expose-gc), ${ROUNDS} interleaved rounds, medians: one call for each of ` +
      `${int(FIRST)} keys, then ${int(MORE)} more (the inner fetch answers at once); bytes per key = growth of memory after gc() ` +
      `between the two points / ${int(MORE)}. JS heap = heapUsed; wasm = odds-gate's linear memory (64 KiB pages). ` +
      `odds-gate keeps a gate per key live with a spent fixed rate (burst 1 at 0.001/s), or learning (createFetch()) from ` +
      `answers whose counts say a bucket of 1,000 is spent; the default createFetch() forgets ` +
      `idle gates as new ones are made (live = gates still known at the end); bottleneck's Group a limiter per key ` +
      `(minTime 500 ms), limiter a RateLimiter per key in a Map`,
    target: `odds-gate <= ${int(TARGET_B)} B per live gate: a fixed rate's (issue #38) and a learning gate's (issue #50), the rows where every gate stays live`,
    verdict: `fixed rate ${live <= TARGET_B ? 'met' : 'MISSED'} (${int(live)} B per live gate); learning ${learning <= TARGET_B ? 'met' : 'MISSED'} (${int(learning)} B)`,
    head: ['contender', 'live at the end', 'JS heap B/key', 'wasm B/key', 'total B/key'],
    rows,
  }];
}

const contender = process.argv.indexOf('--contender');
if (contender > 0) {
  process.send(await measure(process.argv[contender + 1]), () => process.exit(0));
} else if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [t] = await run();
  console.log(`${t.title}\n${textTable(t.head, t.rows)}\ntarget: ${t.target}\nverdict: ${t.verdict}`);
}

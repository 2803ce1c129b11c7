// 12. CPU per call (issue #26 item 3): what a call through each wrapper costs this process's CPU
// (user + system, process.cpuUsage), sequential calls against a trivial keep-alive HTTP server in
// another process, rate limits that never hold a call; "added" is the CPU per call less raw
// fetch's in the same round. Beside it the stack a user would otherwise compose in JavaScript:
// p-throttle + p-retry + AbortSignal.timeout per attempt + reading the three feedback headers.
// Then admission alone (an inner fetch that answers at once, no network): odds-gate against that
// composed stack on the same inner fetch. Rounds interleave the variants; medians of the rounds.
// Last, the crossings between JavaScript and wasm a call makes, counted in a copy of the package
// whose module has every import and export wrapped in a counter.
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { randomUUID } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import pRetry, { AbortError } from 'p-retry';
import pThrottle from 'p-throttle';
import { loadPkg, median, fix, rotate } from './lib/util.mjs';

const NEVER = { burst: 1e6, perSecond: 1e9 };
// Issue #26: at most this much CPU per call with the defaults, and admission at most this many
// times the composed stack's.
const TARGET_US = 15;
const TARGET_RATIO = 2;

/** The stack a user would write: throttle, retry a 429 or 5xx, a timeout per attempt, feedback read. */
function composed(inner) {
  const throttle = pThrottle({ limit: 1e6, interval: 1000 });
  return throttle((input, init) => pRetry(async () => {
    const response = await inner(input, { ...init, signal: AbortSignal.timeout(30_000) });
    const h = response.headers;
    const feedback = [h.get('retry-after'), h.get('x-ratelimit-limit'), h.get('x-ratelimit-remaining')];
    if (response.status === 429 || response.status >= 500) throw new Error(`status ${response.status} ${feedback}`);
    if (response.status >= 400) throw new AbortError(`status ${response.status}`);
    return response;
  }, { retries: 3, minTimeout: 1000 }));
}

// wasm-bindgen's instantiation in odds_gate.js, and the same with every import and export counted.
const INSTANTIATE = 'let wasmInstance = new WebAssembly.Instance(wasmModule, __wbg_get_imports());';
const COUNTED = `const crossings = (globalThis.__oddsGateCrossings = new Map());
const counted = (name, f) => function (...args) {
  crossings.set(name, (crossings.get(name) ?? 0) + 1);
  return f.apply(this, args);
};
const imports = __wbg_get_imports();
for (const space of Object.values(imports)) {
  for (const [name, f] of Object.entries(space)) if (typeof f === 'function') space[name] = counted(\`out \${name}\`, f);
}
const instance = new WebAssembly.Instance(wasmModule, imports);
const exports = {};
for (const [name, f] of Object.entries(instance.exports)) exports[name] = typeof f === 'function' ? counted(\`in \${name}\`, f) : f;
let wasmInstance = { exports };`;

/** Crossings per call of `options`' wrapper over `n` calls, by name: from a counting copy of pkg/. */
async function crossings(variants, n) {
  const dir = mkdtempSync(join(tmpdir(), 'odds-gate-crossings-'));
  try {
    cpSync(fileURLToPath(new URL('../pkg/', import.meta.url)), dir, { recursive: true });
    const glue = join(dir, 'odds_gate.js');
    const source = readFileSync(glue, 'utf8');
    if (!source.includes(INSTANTIATE)) throw new Error('odds_gate.js instantiates its module another way now: update bench/cpu.mjs');
    writeFileSync(glue, source.replace(INSTANTIATE, COUNTED));
    const { createFetch } = await import(pathToFileURL(join(dir, 'index.js')).href);
    const res = new Response('{}', { status: 200, headers: { 'Content-Type': 'application/json' } });
    const out = {};
    for (const [name, options] of Object.entries(variants)) {
      const f = createFetch({ ...options, rate: NEVER, fetch: () => Promise.resolve(res) });
      const init = { method: 'GET', headers: { 'X-API-Key': `bench-${randomUUID()}` } };
      for (let i = 0; i < 100; i++) await f('http://127.0.0.1:9/v1/events/e1/odds/snapshot', init);
      globalThis.__oddsGateCrossings.clear();
      for (let i = 0; i < n; i++) await f('http://127.0.0.1:9/v1/events/e1/odds/snapshot', init);
      out[name] = [...globalThis.__oddsGateCrossings].map(([what, count]) => [what, count / n]);
    }
    return out;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** CPU (user + system) and wall time per call over `n` sequential calls of `f`. */
async function pass(f, url, init, n, drain) {
  globalThis.gc?.();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const response = await f(url, init);
    if (drain) await response.arrayBuffer();
  }
  const cpu = process.cpuUsage(cpu0);
  return { cpuUs: (cpu.user + cpu.system) / n, wallUs: ((performance.now() - t0) * 1000) / n };
}

async function measure(variants, url, n, rounds, drain) {
  const names = Object.keys(variants);
  const inits = Object.fromEntries(names.map((name) => [name, { method: 'GET', headers: { Accept: 'application/json', 'X-API-Key': `bench-${randomUUID()}` } }]));
  for (const name of names) await pass(variants[name], url, inits[name], Math.min(n, 500), drain); // warm-up
  const runs = Object.fromEntries(names.map((name) => [name, []]));
  for (let r = 0; r < rounds; r++) {
    for (const name of rotate(names, r)) runs[name].push(await pass(variants[name], url, inits[name], n, drain));
  }
  return runs;
}

export async function run({ quick }) {
  const { createFetch } = await loadPkg();
  const rounds = quick ? 3 : 7;
  const server = fork(new URL('./support/http-server.mjs', import.meta.url), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const [{ port }] = await once(server, 'message');
  const url = `http://127.0.0.1:${port}/v1/events/e1/odds/snapshot`;
  const raw = (input, init) => fetch(input, init);
  let network;
  try {
    network = await measure({
      'raw fetch': raw,
      // What any attempt timeout costs undici: a signal of its own for every request.
      'raw fetch + a fresh AbortController signal': (input, init) => fetch(input, { ...init, signal: new AbortController().signal }),
      'odds-gate (defaults)': createFetch({ rate: NEVER }),
      'odds-gate retry:false': createFetch({ rate: NEVER, retry: false }),
      'composed: p-throttle + p-retry + timeout + headers': composed(raw),
    }, url, quick ? 1000 : 4000, rounds, true);
  } finally {
    server.disconnect();
  }
  const res = new Response('{}', { status: 200, headers: { 'Content-Type': 'application/json' } });
  const inner = () => Promise.resolve(res);
  const local = await measure({
    'odds-gate (defaults)': createFetch({ rate: NEVER, fetch: inner }),
    'odds-gate retry:false': createFetch({ rate: NEVER, retry: false, fetch: inner }),
    'composed: p-throttle + p-retry + timeout + headers': composed(inner),
  }, 'http://127.0.0.1:9/v1/events/e1/odds/snapshot', quick ? 5000 : 20000, rounds, false);

  const counts = await crossings({ 'odds-gate (defaults)': {}, 'odds-gate retry:false': { retry: false } }, 1000);
  const med = (runs, name, key) => median(runs[name].map((x) => x[key]));
  const sum = (list, side) => list.filter(([what]) => what.startsWith(side)).reduce((t, [, k]) => t + k, 0);
  // wasm-bindgen names an import after its JavaScript function and a hash: the function, as read.
  const named = (what) => what.replace(/^(in|out) (__wbg_)?/, '$1 ').replace(/_[0-9a-f]{16}$/, '');
  const added = (name) => median(network[name].map((x, i) => x.cpuUs - network['raw fetch'][i].cpuUs));
  const ours = added('odds-gate (defaults)');
  const ratio = (name) => median(local[name].map((x, i) => x.cpuUs / local['composed: p-throttle + p-retry + timeout + headers'][i].cpuUs));
  const r = ratio('odds-gate (defaults)');
  return [{
    id: 'cpu',
    title: 'CPU per call against a local server',
    what: `this process's CPU (user + system) per call, ${quick ? 1000 : 4000} sequential calls per pass against a keep-alive HTTP server in another process, body read; limits that never hold a call; ${rounds} rounds rotating the order, medians; "added" is the CPU less raw fetch's in the same round`,
    target: `odds-gate with its defaults adds <= ${TARGET_US} us of CPU per call to raw fetch's (issue #26)`,
    verdict: `${ours <= TARGET_US ? 'met' : 'MISSED'} (adds ${fix(ours, 1)} us; retry:false ${fix(added('odds-gate retry:false'), 1)} us, the composed stack ${fix(added('composed: p-throttle + p-retry + timeout + headers'), 1)} us, a signal alone ${fix(added('raw fetch + a fresh AbortController signal'), 1)} us)`,
    head: ['variant', 'CPU us / call', 'added CPU us', 'wall us / call'],
    rows: Object.keys(network).map((name) => [name, fix(med(network, name, 'cpuUs'), 1), name === 'raw fetch' ? '-' : fix(added(name), 1), fix(med(network, name, 'wallUs'), 1)]),
  }, {
    id: 'cpu-admission',
    title: 'Admission against the stack one would compose',
    what: `CPU per call with an inner fetch that answers at once (one pre-built Response; no network), ${quick ? 5000 : 20000} sequential calls per pass, ${rounds} rounds rotating the order; the ratio per round to the composed stack (p-throttle + p-retry + AbortSignal.timeout per attempt + reading Retry-After and X-RateLimit-Limit/-Remaining), then the median`,
    target: `odds-gate (defaults) <= ${TARGET_RATIO} x the composed stack (issue #26)`,
    verdict: `${r <= TARGET_RATIO ? 'met' : 'MISSED'} (${fix(r, 2)} x; retry:false ${fix(ratio('odds-gate retry:false'), 2)} x)`,
    head: ['variant', 'CPU us / call', 'x composed'],
    rows: Object.keys(local).map((name) => [name, fix(med(local, name, 'cpuUs'), 2), fix(ratio(name), 2)]),
  }, {
    id: 'cpu-crossings',
    title: 'Crossings between JavaScript and wasm per call',
    what: 'calls into the module (in) and out of it (out) per call, counted over 1000 sequential calls admitted at once, whose inner fetch answers 200 at once with no feedback header, in a copy of pkg/ whose module has every import and export wrapped in a counter',
    target: 'a handful a call: facts in, a decision out, feedback in, settle (issue #26)',
    verdict: Object.entries(counts).map(([name, list]) => `${name} ${fix(sum(list, 'in') + sum(list, 'out'), 1)}`).join('; '),
    head: ['variant', 'in', 'out', 'all', 'which'],
    rows: Object.entries(counts).map(([name, list]) => [
      name, fix(sum(list, 'in'), 1), fix(sum(list, 'out'), 1), fix(sum(list, 'in') + sum(list, 'out'), 1),
      list.sort((a, b) => b[1] - a[1]).map(([what, k]) => `${named(what)}${k === 1 ? '' : ` x${fix(k, 1)}`}`).join(', '),
    ]),
  }];
}

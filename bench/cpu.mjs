// 12. CPU per call (issue #26 item 3): what a call through each wrapper costs this process's CPU
// (user + system, process.cpuUsage), sequential calls against a trivial keep-alive HTTP server in
// another process, rate limits that never hold a call; "added" is the CPU per call less raw
// fetch's in the same round. Beside it the stack a user would otherwise compose in JavaScript:
// p-throttle + p-retry + AbortSignal.timeout per attempt + reading the three feedback headers.
// Then admission alone (an inner fetch that answers at once, no network): odds-gate against that
// composed stack on the same inner fetch. Rounds interleave the variants; medians of the rounds.
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { randomUUID } from 'node:crypto';
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

  const med = (runs, name, key) => median(runs[name].map((x) => x[key]));
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
  }];
}

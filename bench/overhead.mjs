// 2. Overhead: latency and throughput through each wrapper, with limits that never throttle, against
// a trivial HTTP server in another process. Rounds interleave the strategies; ratios are per round.
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import Bottleneck from 'bottleneck';
import pThrottle from 'p-throttle';
import { loadPkg, median, percentile, fix, int, rotate } from './lib/util.mjs';

const NEVER = { burst: 1e6, perSecond: 1e9 };

// One pass: `total` requests (or as many as fit in `maxMs`) with `concurrency` callers.
async function pass(f, url, init, total, concurrency, maxMs) {
  const lat = new Float64Array(total);
  let next = 0;
  globalThis.gc?.(); // start every pass with a clean heap, so no pass pays for the previous one's garbage
  const deadline = performance.now() + maxMs;
  const worker = async () => {
    while (next < total && performance.now() < deadline) {
      const i = next++;
      const t0 = performance.now();
      const res = await f(url, init);
      await res.arrayBuffer();
      lat[i] = performance.now() - t0;
    }
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: concurrency }, worker));
  const wallMs = performance.now() - t0;
  const done = lat.subarray(0, next);
  return { n: next, p50: median(done), p99: percentile(done, 99), rps: next / (wallMs / 1000) };
}

export async function run({ quick }) {
  const { createFetch } = await loadPkg();
  const strats = {
    'raw fetch': (input, init) => fetch(input, init),
    // The least any per-attempt timeout costs: a signal of its own for every request, and a timer.
    'raw fetch + timeout signal': (input, init) => {
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(), 30_000);
      return fetch(input, { ...init, signal: controller.signal }).finally(() => clearTimeout(timer));
    },
    'odds-gate': createFetch({ rate: NEVER }),
    'odds-gate retry:false': createFetch({ rate: NEVER, retry: false }),
    'bottleneck (no limits)': new Bottleneck().wrap((input, init) => fetch(input, init)),
    'p-throttle (limit 1e6/s)': pThrottle({ limit: 1e6, interval: 1000 })((input, init) => fetch(input, init)),
  };
  const names = Object.keys(strats);
  const rounds = quick ? 2 : 5;
  const maxMs = quick ? 2000 : 5000; // per pass, so a slow wrapper cannot stretch the run
  const modes = [['sequential', 1, quick ? 500 : 2000], ['concurrency 32', 32, quick ? 4000 : 20_000]];

  const server = fork(new URL('./support/http-server.mjs', import.meta.url), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const [{ port }] = await once(server, 'message');
  const url = `http://127.0.0.1:${port}/v1/events/e1/odds/snapshot`;
  // One key per strategy: odds-gate refuses two wrappers with different retry settings on one key.
  const inits = Object.fromEntries(names.map((n) => [n, { method: 'GET', headers: { Accept: 'application/json', 'X-API-Key': `bench-${randomUUID()}` } }]));
  const res = {}; // `${mode}|${name}` -> [{ p50, p99, rps }]
  try {
    for (const name of names) await pass(strats[name], url, inits[name], 1000, 8, maxMs); // warm-up: JIT, sockets
    for (let r = 0; r < rounds; r++) {
      for (const [mode, conc, total] of modes) {
        for (const name of rotate(names, r)) {
          const m = await pass(strats[name], url, inits[name], total, conc, maxMs);
          (res[`${mode}|${name}`] ??= []).push(m);
        }
      }
      console.error(`  overhead round ${r + 1}/${rounds} done`);
    }
  } finally {
    server.disconnect();
    await Promise.race([once(server, 'exit'), new Promise((r) => setTimeout(r, 2000).unref())]);
    if (server.exitCode === null) server.kill();
  }

  const rows = [];
  const verdicts = [];
  let met = true;
  for (const [mode] of modes) {
    const base = res[`${mode}|raw fetch`];
    for (const name of names) {
      const rs = res[`${mode}|${name}`];
      const ratio = (k) => median(rs.map((x, i) => x[k] / base[i][k])); // per round, side by side
      rows.push([mode, name, int(median(rs.map((x) => x.n))), fix(median(rs.map((x) => x.p50 * 1000)), 0), fix(median(rs.map((x) => x.p99 * 1000)), 0),
        int(median(rs.map((x) => x.rps))), fix(ratio('p50'), 3), fix(ratio('p99'), 3), fix(ratio('rps'), 3)]);
      if (name === 'odds-gate') met &&= ratio('p50') <= 1.05;
      if (name.startsWith('odds-gate')) verdicts.push(`${mode}, ${name}: median latency x${fix(ratio('p50'), 3)}, throughput x${fix(ratio('rps'), 3)}`);
      if (name === 'raw fetch + timeout signal') verdicts.push(`${mode}, raw fetch + timeout signal: x${fix(ratio('p50'), 3)}`);
    }
  }
  return [{
    id: 'overhead',
    title: 'Overhead against a trivial local HTTP server',
    what: `requests through raw fetch and each wrapper to a node:http server on 127.0.0.1 (another process, keep-alive), ` +
      `body read each time; 'raw fetch + timeout signal' adds what any per-attempt timeout needs (an AbortController ` +
      `and a timer per request) and nothing else; limits that never throttle (odds-gate burst 1e6 at 1e9/s; bottleneck without reservoir or minTime; ` +
      `p-throttle limit 1e6 per second). ${rounds} rounds rotating the order; latency per request; ` +
      `ratios are to raw fetch in the same round, then the median over rounds. A pass stops at ${modes.map((m) => int(m[2])).join(' / ')} ` +
      `requests or after ${maxMs / 1000} s, whichever comes first (requests/pass is the median count)`,
    target: 'odds-gate (default options) median latency <= 1.05 x raw fetch',
    verdict: `${met ? 'met' : 'MISSED'} (${verdicts.join('; ')})`,
    head: ['mode', 'strategy', 'requests/pass', 'p50 (us)', 'p99 (us)', 'req/s', 'p50 ratio', 'p99 ratio', 'req/s ratio'],
    rows,
  }];
}

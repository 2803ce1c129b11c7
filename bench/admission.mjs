// 3. Admission cost: ns per call with no network. The inner fetch returns a pre-built Response at
// once, the rate never throttles; the baseline is an empty async function with the same call shape.
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import Bottleneck from 'bottleneck';
import pThrottle from 'p-throttle';
import { loadPkg, median, fix, int, rotate } from './lib/util.mjs';

const NEVER = { burst: 1e6, perSecond: 1e9 };

export async function run({ quick }) {
  const { createFetch } = await loadPkg();
  const res = new Response('{}', { status: 200, headers: { 'Content-Type': 'application/json' } });
  const inner = () => Promise.resolve(res);
  const variants = {
    'empty async call': async (input, init) => res, // eslint-disable-line no-unused-vars
    'odds-gate retry:false': createFetch({ rate: NEVER, retry: false, fetch: inner }),
    'odds-gate default retry': createFetch({ rate: NEVER, fetch: inner }),
    'bottleneck (no limits)': new Bottleneck().wrap(inner),
    'p-throttle (limit 1e6/s)': pThrottle({ limit: 1e6, interval: 1000 })(inner),
  };
  const names = Object.keys(variants);
  const url = 'http://127.0.0.1:9/v1/events/e1/odds/snapshot'; // never contacted
  const inits = Object.fromEntries(names.map((n) => [n, { method: 'GET', headers: { Accept: 'application/json', 'X-API-Key': `bench-${randomUUID()}` } }]));
  const calls = quick ? 5_000 : 20_000;
  const maxMs = quick ? 1000 : 3000;
  const rounds = quick ? 3 : 7;

  const pass = async (name, n) => {
    const f = variants[name];
    const init = inits[name];
    globalThis.gc?.();
    const deadline = performance.now() + maxMs;
    const t0 = performance.now();
    let i = 0;
    for (; i < n && (i & 255 || performance.now() < deadline); i++) await f(url, init);
    return ((performance.now() - t0) * 1e6) / i; // ns per call
  };
  for (const name of names) await pass(name, 2000); // warm-up
  const ns = Object.fromEntries(names.map((n) => [n, []]));
  for (let r = 0; r < rounds; r++) for (const name of rotate(names, r)) ns[name].push(await pass(name, calls));

  const base = ns['empty async call'];
  const ratio = (name) => median(ns[name].map((x, i) => x / base[i]));
  const r1 = ratio('odds-gate retry:false');
  const r2 = ratio('odds-gate default retry');
  // Against p-throttle, per round, as for the empty call.
  const throttle = ns['p-throttle (limit 1e6/s)'];
  const vsThrottle = (name) => median(ns[name].map((x, i) => x / throttle[i]));
  const t1 = vsThrottle('odds-gate retry:false');
  const t2 = vsThrottle('odds-gate default retry');
  const rows = names.map((name) => [name, int(median(ns[name])), int(Math.min(...ns[name])), fix(ratio(name), 1), fix(vsThrottle(name), 1)]);
  return [{
    id: 'admission',
    title: 'Admission cost without network',
    what: `sequential awaited calls; the inner fetch returns one pre-built Response immediately (odds-gate reads its headers), ` +
      `rate burst 1e6 at 1e9/s so nothing waits; baseline: \`async (input, init) => res\`. ${int(calls)} calls per pass ` +
      `(or ${maxMs / 1000} s), ${rounds} rounds rotating the order; ratio per round to the baseline, then the median`,
    target: 'odds-gate (default options) <= 2 x p-throttle',
    verdict: `${t2 <= 2 ? 'met' : 'MISSED'} (default retry x${fix(t2, 1)} p-throttle, retry:false x${fix(t1, 1)}; ` +
      `x an empty async call: ${fix(r2, 1)} and ${fix(r1, 1)})`,
    head: ['variant', 'median ns/call', 'best ns/call', 'x empty async', 'x p-throttle'],
    rows,
  }];
}

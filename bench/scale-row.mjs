// One row of the scale benchmark, run in a fresh process forked by scale.mjs (argv: kind, then
// options as JSON), so a row cannot inherit wasm memory grown by another (it never shrinks), and a
// crash takes down only its own row. Sends { row, ... } to the parent.
import { randomUUID } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { loadPkg, fix, int, settle, timersAlive, within } from './lib/util.mjs';

const URL_ = 'http://127.0.0.1:9/v1/events/e1/odds/snapshot'; // never contacted: the inner fetch answers
const SLOW = { burst: 1, perSecond: 1 }; // all but the first call wait

export const VARIANTS = {
  // The floor: a call that only waits for its signal (one pending promise + one abort listener).
  'floor: promise + abort listener': () => (input, init) => new Promise((_, reject) => {
    init.signal.addEventListener('abort', () => reject(init.signal.reason), { once: true });
  }),
  'odds-gate retry:false': (pkg, inner) => pkg.createFetch({ rate: SLOW, retry: false, fetch: inner }),
  // Default retry, but a time budget long enough for 100,000 calls to wait at 1/s (the default
  // 60 s budget refuses at once every call predicted to be admitted later than that).
  'odds-gate retry on, timeBudgetMs 1e9': (pkg, inner) => pkg.createFetch({ rate: SLOW, retry: { timeBudgetMs: 1e9 }, fetch: inner }),
};

const mem = (pkg) => {
  const m = process.memoryUsage();
  return { heap: m.heapUsed, external: m.external, wasm: pkg.wasmMemoryBytes(), table: pkg.wasmTableLength() };
};
const tally = (outcomes, skip) => Object.entries(outcomes.reduce((c, o) => ({ ...c, [o]: (c[o] ?? 0) + 1 }), {}))
  .filter(([k]) => k !== skip).map(([k, v]) => `${int(v)} ${k}`).join(', ') || '-';

// Puts n calls in the queue, measures, then aborts them all (one shared signal, or one per call).
async function waiters({ variant, n, shared }) {
  const pkg = await loadPkg();
  const res = new Response('{}');
  await settle();
  const before = mem(pkg);
  const timersBefore = timersAlive();
  const f = VARIANTS[variant](pkg, () => Promise.resolve(res));
  const headers = { Accept: 'application/json', 'X-API-Key': `bench-${randomUUID()}` };
  const one = new AbortController();
  setMaxListeners(0, one.signal);
  const controllers = [];
  const calls = [];
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const ac = shared ? one : new AbortController();
    if (!shared) controllers.push(ac);
    calls.push(f(URL_, { headers, signal: ac.signal }).then(() => 'ok', (e) => e?.name ?? 'error'));
  }
  const enqueueNs = ((performance.now() - t0) * 1e6) / n;
  await settle();
  const during = mem(pkg);
  const timers = timersAlive() - timersBefore;
  const g = f.stats?.().gates[0];
  const t1 = performance.now();
  if (shared) one.abort(); else for (const ac of controllers) ac.abort();
  const outcomes = (await within(Promise.all(calls), 60_000)) ?? ['timed out'];
  const abortMs = performance.now() - t1;
  calls.length = 0; controllers.length = 0;
  await settle(1100); // past the gate's next timer firing (1/s), so its clean-up has run
  const after = mem(pkg);
  const per = (k, m = during) => (m[k] - before[k]) / n;
  return {
    row: [variant, shared ? 'one shared' : 'one per call', int(n), int(enqueueNs), int(per('heap')), int(per('external')),
      int(per('wasm')), fix(per('table'), 1), int(per('heap') + per('external')), timers,
      g ? `${int(g.waiting)} / ${g.timerArmed}` : 'n/a', `${int(abortMs)} ms`,
      int(outcomes.filter((o) => o === 'AbortError').length), tally(outcomes, 'AbortError'),
      int(per('heap', after) + per('external', after) - per('wasm', after)), timersAlive() - timersBefore],
    timers, gate: Boolean(g), shared, bytes: per('heap') + per('external'),
  };
}

// Drains n waiters at `rate` (inner fetch answers at once) and counts timer firings per admission.
async function drain({ label, n, rate, retry }) {
  const pkg = await loadPkg();
  const res = new Response('{}');
  const f = pkg.createFetch({ rate, retry, fetch: () => Promise.resolve(res) });
  const init = { headers: { Accept: 'application/json', 'X-API-Key': `bench-${randomUUID()}` } };
  const base = timersAlive();
  const calls = [];
  for (let i = 0; i < n; i++) calls.push(f(URL_, init).then(() => 'ok', (e) => e?.name ?? 'error'));
  const t0 = performance.now(); // the drain starts when the enqueue loop gives the event loop back
  let peakTimers = 0;
  let done = false;
  const all = Promise.all(calls).finally(() => { done = true; });
  const limit = t0 + 3 * ((n / rate.perSecond) * 1000) + 10_000;
  while (!done && performance.now() < limit) {
    await new Promise((r) => setImmediate(r)); // sample with no timer of our own pending
    peakTimers = Math.max(peakTimers, timersAlive() - base);
    await new Promise((r) => setTimeout(r, 5)); // (this timer has fired by the next sample)
  }
  const outcomes = (await within(all, 1000)) ?? ['timed out'];
  const wallS = (performance.now() - t0) / 1000;
  const g = f.stats().gates[0];
  const waited = n - rate.burst;
  return {
    row: [label, int(n), `burst ${rate.burst}, ${int(rate.perSecond)}/s`, tally(outcomes), int(g.admitted), int(g.wakeups),
      fix(g.wakeups / g.admitted, 3), fix(g.wakeups / waited, 3), peakTimers, fix(wallS, 2), fix(wallS / (waited / rate.perSecond), 3)],
    wakeupsPerWaiter: g.wakeups / waited, peakTimers,
  };
}

if (process.send && import.meta.url === pathToFileURL(process.argv[1]).href) { // run as a row, not imported
  const [kind, json] = process.argv.slice(2);
  const out = await (kind === 'drain' ? drain : waiters)(JSON.parse(json));
  process.send(out, () => process.disconnect());
}

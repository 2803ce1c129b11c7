// Learning an allowance nobody configured (#11). 20 workers x 10 snapshots each (one after
// another per worker) share one key against the fake Odds API, whose allowance the client is
// not told; three allowances, and two header modes: X-RateLimit-* on every answer, or a 429 with
// Retry-After only. Four contenders per (allowance, header mode), each on its own key, so all
// four run at the same time against ONE fake server (its buckets are per key):
//   a. odds-gate configured: createFetch({ rate: { burst, perSecond } }) with the true allowance
//      (the ceiling a learner can reach);
//   b. odds-gate learning: createFetch({ rate: 'auto' }) (shown as "not built" while createFetch
//      refuses the option with a TypeError or RangeError);
//   c. AWS DefaultRateLimiter: the AWS SDK v3 adaptive limiter (bench/lib/aws-limiter.mjs), one
//      limiter shared by the 20 workers: getSendToken(), fetch, updateClientSendingRate(response);
//   d. plain fetch + Retry-After: every worker on its own (the uncoordinated baseline).
// Every worker waits a 429's Retry-After (1 s if it has none) and tries again, at most 20 times
// per snapshot; every run is cut off at 4 x floor + 10 s. Attempts and 429s are the server's.
// A last table, "Two limiter buckets on one key", runs snapshots and event lookups side by side
// on one key whose two routes draw from different buckets (see runTwoBuckets below).
import { randomUUID } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleepFor } from 'node:timers/promises';
import { startFakeOddsApi } from '../js-tests/support/fake-odds-api.mjs';
import { DefaultRateLimiter } from './lib/aws-limiter.mjs';
import { finishOrCutOff, loadPkg, fix, sleep } from './lib/util.mjs';

const WORKERS = 20;
const PER_WORKER = 10;
const JOBS = WORKERS * PER_WORKER;
export const MAX_ATTEMPTS = 20; // per snapshot, then the snapshot counts as failed
export const RETRY_AFTER_S = 1; // what the fake server's 429s say
export const DRAIN_MS = 60_000; // after the cut-off, how long the stragglers get to notice it
export { LEARNING };
const ALLOWANCES = [{ burst: 5, perSecond: 10 }, { burst: 2, perSecond: 2 }, { burst: 20, perSecond: 5 }];
const MODES = [
  { label: 'X-RateLimit-*', rateLimitHeaders: true, maxPct: 5, maxRatio: 1.3 },
  { label: 'Retry-After only', rateLimitHeaders: false, maxPct: 10, maxRatio: 1.6 },
];
const LEARNING = 'odds-gate learning';

const floorOf = ({ burst, perSecond }) => (JOBS - burst) / perSecond; // starting full
const capOf = (rate) => 4 * floorOf(rate) + 10;
const allowanceText = ({ burst, perSecond }) => `burst ${burst} at ${perSecond}/s`;

// name -> (true allowance) -> { fetchImpl, limiter?, gate? }; `optional` marks the one whose
// createFetch option may not exist yet.
function contenders(createFetch) {
  return [
    { name: 'odds-gate configured', make: (rate) => ({ fetchImpl: createFetch({ rate }), gate: true }) },
    { name: LEARNING, optional: true, make: () => ({ fetchImpl: createFetch({ rate: 'auto' }), gate: true }) },
    { name: 'AWS DefaultRateLimiter', make: () => ({ fetchImpl: fetch, limiter: new DefaultRateLimiter() }) },
    { name: 'plain fetch + Retry-After', make: () => ({ fetchImpl: fetch }) },
  ];
}

// One GET, tried again after each 429 (waiting its Retry-After, 1 s if it has none) at most
// maxCalls times in all; true when it got a 200. Gives up (false) when `signal` aborts.
// c.fetchImpl is the contender's fetch; c.limiter, when there, is asked for a token before
// every call and told every answer. Errors other than aborts are counted in `errors`.
// Optional (bench/learn-matrix.mjs, bench/lib/load.mjs): `delivered`, the statuses that end the call as done (200
// only by default; a 404 of a missing event is an answer too), and `retried`, status -> the
// wait in seconds when the answer has no Retry-After (429: RETRY_AFTER_S by default).
export async function getWithRetries(c, url, { headers, signal, maxCalls, errors, delivered = [200], retried = { 429: RETRY_AFTER_S } }) {
  const stopped = () => signal.aborted;
  for (let n = 0; n < maxCalls; n++) {
    if (c.limiter) await c.limiter.getSendToken(); // at most 1 / 0.5 s per turn: it ends
    if (stopped()) return false;
    let res;
    try {
      res = await c.fetchImpl(url, { headers, signal });
    } catch (err) {
      if (stopped()) return false;
      c.limiter?.updateClientSendingRate(err); // the SDK reports every failed attempt
      const what = `${err?.name ?? 'Error'}: ${String(err?.message ?? err).split('\n')[0].slice(0, 120)}`;
      errors[what] = (errors[what] ?? 0) + 1;
      await sleepFor(RETRY_AFTER_S * 1000, undefined, { signal }).catch(() => {});
      continue;
    }
    c.limiter?.updateClientSendingRate(res);
    if (delivered.includes(res.status)) {
      try { await res.arrayBuffer(); } catch { if (stopped()) return false; }
      return true;
    }
    await res.body?.cancel().catch(() => {});
    if (!(res.status in retried)) {
      errors[`status ${res.status}`] = (errors[`status ${res.status}`] ?? 0) + 1;
      return false;
    }
    const header = res.headers.get('retry-after');
    const waitS = header !== null && Number.isFinite(Number(header)) && Number(header) >= 0 ? Number(header) : retried[res.status];
    if (n + 1 < maxCalls) await sleepFor(waitS * 1000, undefined, { signal }).catch(() => {});
  }
  return false;
}

// One contender's 20 workers; resolves when they are all done or, after the cut-off, have
// stopped (bounded by DRAIN_MS more). Wall time counts from t0, the common start.
// bench/learn-matrix.mjs sets `workers`, `perWorker` and getWithRetries's `delivered`/`retried`.
export async function runContender(c, { baseUrl, apiKey, capS, t0, workers = WORKERS, perWorker = PER_WORKER, answers = {} }) {
  const headers = { 'X-API-Key': apiKey, Accept: 'application/json' };
  const stop = new AbortController();
  setMaxListeners(0, stop.signal); // every worker's fetch and sleep listens to it: no leak warning
  const cap = setTimeout(() => stop.abort(), capS * 1000);
  const counts = { done: 0, failed: 0, errors: {} };
  const stopped = () => stop.signal.aborted;

  const snapshot = (eventId) => getWithRetries(c, `${baseUrl}/events/${encodeURIComponent(eventId)}/odds/snapshot`,
    { headers, signal: stop.signal, maxCalls: MAX_ATTEMPTS, errors: counts.errors, ...answers });

  const worker = async (w) => {
    for (let j = 0; j < perWorker && !stopped(); j++) {
      if (await snapshot(`evt-${w}-${j}`)) counts.done++;
      else if (!stopped()) counts.failed++;
    }
  };
  const runs = Array.from({ length: workers }, (_, w) => worker(w));
  const { endedAt, drained } = await finishOrCutOff(runs, stop, cap, DRAIN_MS);
  return {
    ...counts,
    timedOut: stopped(),
    stuck: !drained,
    wallS: !stopped() && endedAt !== null ? (endedAt - t0) / 1000 : Infinity,
  };
}

// The server labels keys key#1, key#2, ... in the order it first sees them; a /usage call
// (no token, not an attempt) per key, one after another, fixes that order before the run:
// each of `list` ({ apiKey }) gets its `label`.
export async function labelKeys(fake, list) {
  for (const [i, m] of list.entries()) {
    const res = await fetch(`${fake.baseUrl}/usage`, { headers: { 'X-API-Key': m.apiKey } });
    await res.arrayBuffer();
    m.label = `key#${i + 1}`;
  }
}

// One fake server per (allowance, header mode); the four contenders at once, each on its key.
async function runCase(list, rate, mode) {
  const fake = await startFakeOddsApi({ ...rate, retryAfterSeconds: RETRY_AFTER_S, rateLimitHeaders: mode.rateLimitHeaders });
  const made = [];
  try {
    for (const c of list) {
      try {
        made.push({ c, impl: c.make(rate), apiKey: `learn-${randomUUID()}` });
      } catch (err) {
        if (!(c.optional && (err instanceof TypeError || err instanceof RangeError))) throw err;
        made.push({ c, notBuilt: `${err.name}: ${err.message}` });
      }
    }
    const live = made.filter((m) => !m.notBuilt);
    await labelKeys(fake, live);
    const capS = capOf(rate);
    const t0 = performance.now();
    const outs = await Promise.all(live.map((m) => runContender(m.impl, { baseUrl: fake.baseUrl, apiKey: m.apiKey, capS, t0 })));
    const server = fake.stats();
    live.forEach((m, i) => {
      const k = server.byKey[m.label] ?? { attempts: 0, throttled: 0, ok: 0 };
      m.out = { ...outs[i], attempts: k.attempts, throttled: k.throttled, ok: k.ok };
      if (m.impl.gate) {
        const g = m.impl.fetchImpl.stats().gates[0];
        m.out.gate = g && { admitted: g.admitted, throttled: g.throttled, retries: g.retries?.throttled ?? g.retries, peakWaiting: g.peakWaiting };
        m.out.learned = g?.learned; // a learning gate's estimate (GateStats.learned), once it exists
      }
      if (m.impl.limiter) {
        const l = m.impl.limiter;
        m.out.limiter = { fillRate: l.fillRate, maxCapacity: l.maxCapacity, measuredTxRate: l.measuredTxRate, enabled: l.enabled };
      }
    });
    return made;
  } finally {
    await fake.close();
  }
}

// ---- Two limiter buckets on one key (#11) ----
// The fake API's snapshots (GET /v1/events/{id}/odds/snapshot) and event lookups
// (GET /v1/events/{id}) draw from two buckets of the same key: snapshots burst 2 at 2/s, lookups
// burst 10 at 10/s. 4 workers x 2 snapshots and 8 workers x 5 lookups (each worker one after
// another) start at once on one key; four contenders, each on its own key, at once against one
// fake server (X-RateLimit-* on every answer).
const TWO = {
  snapshot: { label: 'snapshots', burst: 2, perSecond: 2, workers: 4, each: 2 },
  events: { label: 'lookups', burst: 10, perSecond: 10, workers: 8, each: 5 },
};
const twoJobs = (b) => b.workers * b.each;
const twoFloor = (b) => (twoJobs(b) - b.burst) / b.perSecond; // starting full, each bucket on its own
const TWO_CAP_S = 60; // per run; the snapshot allowance alone needs 23 s for all 48 requests
// Attempts per request: plain fetch and the AWS limiter send one per call, at most MAX_ATTEMPTS
// calls; an odds-gate wrapper retries inside a call (3 attempts by default), so it gets
// floor(MAX_ATTEMPTS / 3) calls: at most 18 attempts.
const GATE_ATTEMPTS = 3;
const TWO_TARGET = { maxRatio: 1.5, max429: 5 };

function twoContenders(createFetch) {
  const gateCalls = Math.floor(MAX_ATTEMPTS / GATE_ATTEMPTS);
  return [
    { name: LEARNING, make: () => ({ fetchImpl: createFetch(), gate: true, maxCalls: gateCalls }) },
    {
      name: 'odds-gate configured (snapshot allowance)',
      make: () => ({ fetchImpl: createFetch({ rate: { burst: TWO.snapshot.burst, perSecond: TWO.snapshot.perSecond } }), gate: true, maxCalls: gateCalls }),
    },
    { name: 'AWS DefaultRateLimiter', make: () => ({ fetchImpl: fetch, limiter: new DefaultRateLimiter(), maxCalls: MAX_ATTEMPTS }) },
    { name: 'plain fetch + Retry-After', make: () => ({ fetchImpl: fetch, maxCalls: MAX_ATTEMPTS }) },
  ];
}

// One contender's snapshot and lookup workers, started in the same tick (snapshots first);
// the time each kind's last request finished, from t0.
async function runTwoContender(c, { baseUrl, apiKey, t0 }) {
  const headers = { 'X-API-Key': apiKey, Accept: 'application/json' };
  const stop = new AbortController();
  setMaxListeners(0, stop.signal);
  const cap = setTimeout(() => stop.abort(), TWO_CAP_S * 1000);
  const errors = {};
  const kinds = {};
  const url = {
    snapshot: (w, j) => `${baseUrl}/events/snap-${w}-${j}/odds/snapshot`,
    events: (w, j) => `${baseUrl}/events/look-${w}-${j}`,
  };
  const workers = [];
  for (const [bucket, b] of Object.entries(TWO)) {
    const k = (kinds[bucket] = { done: 0, failed: 0, firstS: null, lastS: null });
    for (let w = 0; w < b.workers; w++) {
      workers.push((async () => {
        for (let j = 0; j < b.each && !stop.signal.aborted; j++) {
          if (await getWithRetries(c, url[bucket](w, j), { headers, signal: stop.signal, maxCalls: c.maxCalls, errors })) {
            k.done++;
            k.lastS = (performance.now() - t0) / 1000;
            k.firstS ??= k.lastS;
          } else if (!stop.signal.aborted) k.failed++;
        }
      })());
    }
  }
  const { drained } = await finishOrCutOff(workers, stop, cap, DRAIN_MS);
  return { kinds, errors, timedOut: stop.signal.aborted, stuck: !drained };
}

export async function runTwoBuckets(createFetch) {
  const fake = await startFakeOddsApi({
    burst: TWO.snapshot.burst, perSecond: TWO.snapshot.perSecond,
    events: { burst: TWO.events.burst, perSecond: TWO.events.perSecond },
    retryAfterSeconds: RETRY_AFTER_S, rateLimitHeaders: true,
  });
  try {
    const made = twoContenders(createFetch).map((c) => ({ c, impl: c.make(), apiKey: `buckets-${randomUUID()}` }));
    await labelKeys(fake, made); // fixes the server's key labels
    const t0 = performance.now();
    const outs = await Promise.all(made.map((m) => runTwoContender(m.impl, { baseUrl: fake.baseUrl, apiKey: m.apiKey, t0 })));
    const server = fake.stats();
    // byBucket is the server's, across keys: per key and bucket, count the arrivals.
    const arrivalsFull = server.arrivals.length >= 10_000;
    made.forEach((m, i) => {
      const per = { snapshot: { attempts: 0, throttled: 0, ok: 0 }, events: { attempts: 0, throttled: 0, ok: 0 } };
      for (const a of server.arrivals) {
        if (a.key !== m.label) continue;
        per[a.bucket].attempts++;
        if (a.status === 429) per[a.bucket].throttled++; else per[a.bucket].ok++;
      }
      const k = server.byKey[m.label] ?? { attempts: 0, throttled: 0, ok: 0 };
      m.out = { ...outs[i], per, byKey: k, arrivalsFull };
      if (m.impl.gate) {
        m.out.gates = m.impl.fetchImpl.stats().gates.map((g) => ({
          scope: g.scope.includes('#') ? `#${g.scope.split('#').pop()}` : 'credential',
          rate: g.rate, learned: g.learned, admitted: g.admitted, throttled: g.throttled,
        }));
      }
      if (m.impl.limiter) {
        const l = m.impl.limiter;
        m.out.limiter = { fillRate: l.fillRate, maxCapacity: l.maxCapacity, measuredTxRate: l.measuredTxRate };
      }
    });
    return made;
  } finally {
    await fake.close();
  }
}

function twoTable(made) {
  const S = TWO.snapshot;
  const E = TWO.events;
  const sFloor = twoFloor(S);
  const eFloor = twoFloor(E);
  // When a kind's last request finished: Infinity when the run was cut off before all were
  // done; the last one done when some were given up (the notes say how many).
  const lastOf = (o, bucket) => {
    const k = o.kinds[bucket];
    if (k.done < twoJobs(TWO[bucket]) && o.timedOut) return Infinity;
    return k.lastS ?? NaN;
  };
  const at = (o, bucket) => (lastOf(o, bucket) === Infinity ? `> ${TWO_CAP_S}` : fix(lastOf(o, bucket)));
  const rows = [];
  const notes = [];
  const summary = new Map();
  for (const m of made) {
    const o = m.out;
    const s = o.kinds.snapshot;
    const e = o.kinds.events;
    const eLast = lastOf(o, 'events');
    const sLast = lastOf(o, 'snapshot');
    const ratio = eLast === Infinity ? `> ${fix(TWO_CAP_S / eFloor)}` : fix(eLast / eFloor);
    rows.push([m.c.name, s.done, e.done, `${o.per.snapshot.attempts} / ${o.per.events.attempts}`,
      `${o.per.snapshot.throttled} / ${o.per.events.throttled}`, at(o, 'snapshot'), fix(sFloor), at(o, 'events'), fix(eFloor), ratio]);
    const throttled = o.per.snapshot.throttled + o.per.events.throttled;
    const allDone = s.done === twoJobs(S) && e.done === twoJobs(E);
    const when = (last) => (last === Infinity ? `> ${TWO_CAP_S} s (cut off)` : `${fix(last)} s`);
    summary.set(m.c.name, {
      text: `lookups done at ${when(eLast)} (${ratio} x floor), snapshots at ${when(sLast)}, ` +
        `${throttled} 429s (${o.per.snapshot.throttled} snapshot / ${o.per.events.throttled} events)` +
        `${allDone ? '' : `, ${s.done}/${twoJobs(S)} snapshots and ${e.done}/${twoJobs(E)} lookups done`}`,
      ok: allDone && eLast / eFloor <= TWO_TARGET.maxRatio && throttled <= TWO_TARGET.max429,
    });
    const extra = [`first lookup done at ${fix(e.firstS ?? NaN)} s, first snapshot at ${fix(s.firstS ?? NaN)} s`];
    if (o.byKey.attempts !== o.per.snapshot.attempts + o.per.events.attempts) extra.push(`server byKey attempts ${o.byKey.attempts}`);
    if (o.per.snapshot.ok !== s.done || o.per.events.ok !== e.done) extra.push(`server 200s ${o.per.snapshot.ok} / ${o.per.events.ok}`);
    if (s.failed || e.failed) extra.push(`given up: ${s.failed} snapshots, ${e.failed} lookups`);
    if (Object.keys(o.errors).length) extra.push(`errors ${JSON.stringify(o.errors)}`);
    if (o.stuck) extra.push(`workers still pending ${DRAIN_MS / 1000} s after the cut-off`);
    if (o.arrivalsFull) extra.push('the server stopped recording arrivals at 10,000: per-bucket counts are short');
    for (const g of o.gates ?? []) {
      const l = g.learned;
      extra.push(`gate ${g.scope}: admitted ${g.admitted}, throttled ${g.throttled}, ` +
        (l ? `learned burst ${l.burst}, perSecond ${fix(l.perSecond)}, atLeast ${fix(l.atLeast)}, confidence ${fix(l.confidence)}`
          : `rate burst ${g.rate.burst} at ${fix(g.rate.perSecond)}/s`));
    }
    if (o.limiter) extra.push(`final fillRate ${o.limiter.fillRate}/s, maxCapacity ${o.limiter.maxCapacity}, measuredTxRate ${o.limiter.measuredTxRate}/s`);
    notes.push(`${m.c.name}: ${extra.join('; ')}`);
  }
  const learning = summary.get(LEARNING);
  const others = [...summary].filter(([name]) => name !== LEARNING).map(([name, v]) => `${name}: ${v.text}`);
  return {
    id: 'learn-buckets',
    title: 'Two limiter buckets on one key',
    what: `One key, two limiter buckets on the fake Odds API: snapshots (GET /v1/events/{id}/odds/snapshot) burst ${S.burst} ` +
      `at ${S.perSecond}/s, event lookups (GET /v1/events/{id}) burst ${E.burst} at ${E.perSecond}/s; every answer carries ` +
      `X-RateLimit-Limit/Remaining/Bucket, every 429 Retry-After: ${RETRY_AFTER_S}. ${S.workers} workers x ${S.each} snapshots ` +
      `and ${E.workers} workers x ${E.each} lookups (one after another per worker) start at once. The four contenders run at ` +
      `the same time, each on its own key: odds-gate learning (createFetch(), one gate per limiter bucket); odds-gate ` +
      `configured with the snapshot allowance (rate { burst ${S.burst}, perSecond ${S.perSecond} }: one gate per credential, ` +
      `so the lookups are held at the snapshots' allowance, the baseline that shows why buckets matter); the AWS SDK v3 ` +
      `DefaultRateLimiter (one limiter for the key); plain fetch. Every worker waits a 429's Retry-After and tries again, ` +
      `at most ${MAX_ATTEMPTS} attempts per request (odds-gate: ${Math.floor(MAX_ATTEMPTS / GATE_ATTEMPTS)} calls of at most ` +
      `${GATE_ATTEMPTS} attempts); a run is cut off at ${TWO_CAP_S} s. Attempts and 429s are the server's, per bucket from ` +
      `its arrivals; times count from the common start, floors are each bucket's own ((${twoJobs(S)} - ${S.burst}) / ${S.perSecond} ` +
      `and (${twoJobs(E)} - ${E.burst}) / ${E.perSecond}); one run`,
    target: `event lookups finish near their own bucket's floor (<= ${TWO_TARGET.maxRatio} x ${fix(eFloor, 0)} s), not behind the ` +
      `snapshots, with at most a few 429s (<= ${TWO_TARGET.max429}) in all, for odds-gate learning`,
    verdict: `${learning.ok ? 'met' : 'MISSED'} (odds-gate learning: ${learning.text}); ${others.join('; ')}`,
    head: ['contender', `snapshots done (of ${twoJobs(S)})`, `lookups done (of ${twoJobs(E)})`, 'attempts (snapshot / events)',
      '429s (snapshot / events)', 'last snapshot (s)', 'floor (s)', 'last lookup (s)', 'floor (s)', 'lookups wall/floor'],
    rows,
    notes,
  };
}

const pct = (o) => (o.attempts ? (100 * o.throttled) / o.attempts : NaN);
const meets = (o, floorS, mode) => !o.timedOut && o.done === JOBS && pct(o) <= mode.maxPct && o.wallS / floorS <= mode.maxRatio;

export async function run({ quick }) {
  const { createFetch } = await loadPkg();
  const list = contenders(createFetch);
  const allowances = quick ? ALLOWANCES.slice(0, 1) : ALLOWANCES;
  const results = new Map(); // `${mode.label}|${allowanceText}` -> made[]
  for (const rate of allowances) {
    for (const mode of MODES) {
      const made = await runCase(list, rate, mode);
      results.set(`${mode.label}|${allowanceText(rate)}`, made);
      for (const m of made) {
        const o = m.out;
        console.error(`  learn ${allowanceText(rate)}, ${mode.label}, ${m.c.name}: ` + (m.notBuilt ? 'not built'
          : `${o.done}/${JOBS} done, ${o.attempts} attempts, ${o.throttled} 429s, ` +
            `${o.timedOut ? `cut off at ${fix(capOf(rate), 0)}` : fix(o.wallS)} s`));
      }
      await sleep(200);
    }
  }

  const two = await runTwoBuckets(createFetch);
  for (const m of two) {
    const o = m.out;
    console.error(`  learn two buckets, ${m.c.name}: ${o.kinds.snapshot.done} snapshots, ${o.kinds.events.done} lookups, ` +
      `${o.per.snapshot.throttled} / ${o.per.events.throttled} 429s, ` +
      (o.timedOut ? `cut off at ${TWO_CAP_S} s` : `last snapshot ${fix(o.kinds.snapshot.lastS)} s, last lookup ${fix(o.kinds.events.lastS)} s`));
  }

  return [...MODES.map((mode) => {
    const rows = [];
    const notes = [];
    const inBounds = new Map(list.map((c) => [c.name, []])); // contender -> allowances meeting the bounds
    const learning = [];
    for (const rate of allowances) {
      const floorS = floorOf(rate);
      const capS = capOf(rate);
      for (const m of results.get(`${mode.label}|${allowanceText(rate)}`)) {
        const o = m.out;
        if (m.notBuilt) {
          rows.push([allowanceText(rate), mode.label, m.c.name, 'not built', '-', '-', '-', '-', fix(floorS), '-']);
          learning.push(`${allowanceText(rate)}: not built`);
          continue;
        }
        const wall = o.timedOut ? `> ${fix(capS, 0)}` : fix(o.wallS);
        const ratio = o.timedOut ? `> ${fix(capS / floorS)}` : fix(o.wallS / floorS);
        rows.push([allowanceText(rate), mode.label, m.c.name, o.done, o.attempts, o.throttled, fix(pct(o), 1), wall, fix(floorS), ratio]);
        const ok = meets(o, floorS, mode);
        if (ok) inBounds.get(m.c.name).push(allowanceText(rate));
        if (m.c.name === LEARNING) {
          learning.push(`${allowanceText(rate)}: ${ok ? 'met' : 'MISSED'} (${fix(pct(o), 1)} %, ${o.timedOut ? 'cut off' : `${fix(o.wallS / floorS)} x`}` +
            `${o.done < JOBS ? `, ${o.done}/${JOBS} done` : ''})`);
        }
        const extra = [];
        if (o.ok !== o.done) extra.push(`server 200s ${o.ok} vs ${o.done} done`);
        if (o.failed) extra.push(`${o.failed} snapshot${o.failed === 1 ? '' : 's'} given up after ${MAX_ATTEMPTS} attempts`);
        if (Object.keys(o.errors).length) extra.push(`errors ${JSON.stringify(o.errors)}`);
        if (o.stuck) extra.push(`workers still pending ${DRAIN_MS / 1000} s after the cut-off`);
        if (o.gate) extra.push(`gate admitted ${o.gate.admitted}, throttled ${o.gate.throttled}, retries ${JSON.stringify(o.gate.retries)}, peakWaiting ${o.gate.peakWaiting}`);
        if (o.learned) {
          const { burst, perSecond, atLeast, confidence } = o.learned;
          extra.push(`learned burst ${burst}, perSecond ${fix(perSecond)}, atLeast ${fix(atLeast)}, confidence ${fix(confidence)}`);
        }
        if (o.limiter) extra.push(`final fillRate ${o.limiter.fillRate}/s, maxCapacity ${o.limiter.maxCapacity}, measuredTxRate ${o.limiter.measuredTxRate}/s`);
        if (extra.length) notes.push(`${allowanceText(rate)}, ${m.c.name}: ${extra.join('; ')}`);
      }
    }
    const others = [...inBounds].filter(([name]) => name !== LEARNING)
      .map(([name, ok]) => `${name} ${ok.length ? ok.join(', ') : 'none'}`);
    const learnedAll = learning.length > 0 && learning.every((l) => l.includes(': met'));
    return {
      id: `learn-${mode.rateLimitHeaders ? 'headers' : 'retry-after'}`,
      title: `Learning an unconfigured allowance: ${mode.label}`,
      what: `${WORKERS} workers x ${PER_WORKER} snapshots each (one after another per worker) share one key against the fake ` +
        `Odds API, whose allowance the client is not told; the server's 429s carry Retry-After: ${RETRY_AFTER_S}` +
        (mode.rateLimitHeaders ? ' and every answer X-RateLimit-Limit/Remaining/Bucket' : ' and no answer carries X-RateLimit-*') +
        `. The four contenders run at the same time, each on its own key (the server's buckets are per key): odds-gate ` +
        `configured with the true allowance (the ceiling); odds-gate learning (rate: 'auto'); the AWS SDK v3 adaptive ` +
        `DefaultRateLimiter (a port of @smithy/core 3.33.2, one limiter for the 20 workers: getSendToken, fetch, ` +
        `updateClientSendingRate(response)); plain fetch. Every worker waits a 429's Retry-After and tries again, at most ` +
        `${MAX_ATTEMPTS} times per snapshot (for odds-gate, its own retries come on top, counted by the server); a run is cut ` +
        `off at 4 x floor + 10 s. Attempts and 429s are counted by the server; floor = (${JOBS} - burst) / perSecond, the ` +
        `time the allowance needs for ${JOBS} requests starting full (a row that gave snapshots up can finish under it); one run`,
      target: `odds-gate learning: <= ${mode.maxPct} % of attempts 429 and wall <= ${mode.maxRatio} x floor, all ${JOBS} snapshots done`,
      verdict: `${learnedAll ? 'met' : 'MISSED'} (odds-gate learning: ${learning.join('; ')}); rows within the same bounds: ${others.join('; ')}`,
      head: ['allowance', 'headers', 'contender', `snapshots done (of ${JOBS})`, 'attempts', '429s', '429 %', 'wall (s)', 'floor (s)', 'wall/floor'],
      rows,
      notes,
    };
  }), twoTable(two)];
}

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
import { randomUUID } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleepFor } from 'node:timers/promises';
import { startFakeOddsApi } from '../js-tests/support/fake-odds-api.mjs';
import { DefaultRateLimiter } from './lib/aws-limiter.mjs';
import { loadPkg, fix, sleep, within } from './lib/util.mjs';

const WORKERS = 20;
const PER_WORKER = 10;
const JOBS = WORKERS * PER_WORKER;
const MAX_ATTEMPTS = 20; // per snapshot, then the snapshot counts as failed
const RETRY_AFTER_S = 1; // what the fake server's 429s say
const DRAIN_MS = 60_000; // after the cut-off, how long the stragglers get to notice it
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

// One contender's 20 workers; resolves when they are all done or, after the cut-off, have
// stopped (bounded by DRAIN_MS more). Wall time counts from t0, the common start.
async function runContender(c, { baseUrl, apiKey, capS, t0 }) {
  const headers = { 'X-API-Key': apiKey, Accept: 'application/json' };
  const stop = new AbortController();
  setMaxListeners(0, stop.signal); // every worker's fetch and sleep listens to it: no leak warning
  const cap = setTimeout(() => stop.abort(), capS * 1000);
  const counts = { done: 0, failed: 0, errors: {} };
  const stopped = () => stop.signal.aborted;

  const snapshot = async (eventId) => {
    const url = `${baseUrl}/events/${encodeURIComponent(eventId)}/odds/snapshot`;
    for (let n = 0; n < MAX_ATTEMPTS; n++) {
      if (c.limiter) await c.limiter.getSendToken(); // at most 1 / 0.5 s per turn: it ends
      if (stopped()) return false;
      let res;
      try {
        res = await c.fetchImpl(url, { headers, signal: stop.signal });
      } catch (err) {
        if (stopped()) return false;
        c.limiter?.updateClientSendingRate(err); // the SDK reports every failed attempt
        const what = `${err?.name ?? 'Error'}: ${String(err?.message ?? err).split('\n')[0].slice(0, 120)}`;
        counts.errors[what] = (counts.errors[what] ?? 0) + 1;
        await sleepFor(RETRY_AFTER_S * 1000, undefined, { signal: stop.signal }).catch(() => {});
        continue;
      }
      c.limiter?.updateClientSendingRate(res);
      if (res.status === 200) {
        try { await res.arrayBuffer(); } catch { if (stopped()) return false; }
        return true;
      }
      await res.body?.cancel().catch(() => {});
      if (res.status !== 429) {
        counts.errors[`status ${res.status}`] = (counts.errors[`status ${res.status}`] ?? 0) + 1;
        return false;
      }
      const header = res.headers.get('retry-after');
      const waitS = header !== null && Number.isFinite(Number(header)) && Number(header) >= 0 ? Number(header) : RETRY_AFTER_S;
      if (n + 1 < MAX_ATTEMPTS) await sleepFor(waitS * 1000, undefined, { signal: stop.signal }).catch(() => {});
    }
    return false;
  };

  let endedAt = null;
  const worker = async (w) => {
    for (let j = 0; j < PER_WORKER && !stopped(); j++) {
      if (await snapshot(`evt-${w}-${j}`)) counts.done++;
      else if (!stopped()) counts.failed++;
    }
  };
  const all = Promise.all(Array.from({ length: WORKERS }, (_, w) => worker(w))).then(() => {
    endedAt = performance.now();
    return 'done';
  });
  const aborted = new Promise((resolve) => stop.signal.addEventListener('abort', resolve, { once: true }));
  // Done, or cut off: then the stragglers get DRAIN_MS to notice (the wait is bounded either way).
  const first = await Promise.race([all, aborted.then(() => 'cut off')]);
  clearTimeout(cap);
  const drained = first === 'done' || (await within(all, DRAIN_MS, 'stuck')) === 'done';
  return {
    ...counts,
    timedOut: stopped(),
    stuck: !drained,
    wallS: !stopped() && endedAt !== null ? (endedAt - t0) / 1000 : Infinity,
  };
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
    // The server labels keys key#1, key#2, ... in the order it first sees them; a /usage call
    // (no token, not an attempt) per key, one after another, fixes that order before the run.
    const live = made.filter((m) => !m.notBuilt);
    for (const [i, m] of live.entries()) {
      const res = await fetch(`${fake.baseUrl}/usage`, { headers: { 'X-API-Key': m.apiKey } });
      await res.arrayBuffer();
      m.label = `key#${i + 1}`;
    }
    const capS = capOf(rate);
    const t0 = performance.now();
    const outs = await Promise.all(live.map((m) => runContender(m.impl, { baseUrl: fake.baseUrl, apiKey: m.apiKey, capS, t0 })));
    const server = fake.stats();
    live.forEach((m, i) => {
      const k = server.byKey[m.label] ?? { attempts: 0, rejected: 0, ok: 0 };
      m.out = { ...outs[i], attempts: k.attempts, rejected: k.rejected, ok: k.ok };
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

const pct = (o) => (o.attempts ? (100 * o.rejected) / o.attempts : NaN);
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
          : `${o.done}/${JOBS} done, ${o.attempts} attempts, ${o.rejected} 429s, ` +
            `${o.timedOut ? `cut off at ${fix(capOf(rate), 0)}` : fix(o.wallS)} s`));
      }
      await sleep(200);
    }
  }

  return MODES.map((mode) => {
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
        rows.push([allowanceText(rate), mode.label, m.c.name, o.done, o.attempts, o.rejected, fix(pct(o), 1), wall, fix(floorS), ratio]);
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
  });
}

// Do no harm in the default mode (#34), live: the issue's rows against the fake Odds API over
// loopback, each a server that is hard on a learner in one way (an outage, counts only on 429s,
// a first request that hangs, a quota's count, a big burst, a limiter per event id, a wait bound,
// a server that never limits, no counts at all). Three contenders per run, at the same time
// against its one server, each on its own key (the server's buckets are per key):
// odds-gate learning (createFetch(), no rate), odds-gate with the right fixed rate, and AWS SDK
// v3's adaptive DefaultRateLimiter (bench/lib/aws-limiter.mjs); where the server never limits,
// plain fetch in place of the fixed rate, the contenders one after another (three rounds) so
// that none takes CPU from another. The calls and the app's retries are bench/lib/load.mjs's.
// Figures are printed, never asserted; every run is cut off (2 x floor + 10 s unless it says).
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { startFakeOddsApi } from '../js-tests/support/fake-odds-api.mjs';
import { DefaultRateLimiter } from './lib/aws-limiter.mjs';
import { runLoad, UNAVAILABLE_WAIT_S } from './lib/load.mjs';
import { DRAIN_MS, LEARNING, MAX_ATTEMPTS, RETRY_AFTER_S, labelKeys } from './learn.mjs';
import { loadPkg, fix, median, rotate, sleep } from './lib/util.mjs';

const FIXED = 'odds-gate fixed rate';
const PLAIN = 'plain fetch';
const AWS = 'AWS DefaultRateLimiter';
// The issue's targets; "about 1-2 s" judged at 2 s, "at once" at 100 ms.
const T = { pct: 3, sustainedPct: 1, ratio: 1.15, plainRatio: 1.5, outageRequests: 8, doneS: 2, atOnceMs: 100 };
const MAX_WAIT_MS = 5000;
const HANG_CAP_S = 40;

const allDone = (o) => o.done === o.calls && !o.timedOut;
const pctText = (o) => `${fix(o.pct, 1)} % 429s`;
const ratioText = (o) => (o.timedOut ? 'cut off' : `${fix(o.ratio)} x floor`);
// The usual bar: every call done, <= 3 % of attempts 429, wall <= 1.15 x the floor.
const usual = (o) => ({ ok: allDone(o) && o.pct <= T.pct && o.ratio <= T.ratio, text: `${o.done}/${o.calls} done, ${pctText(o)}, ${ratioText(o)}` });
const both = (a, b) => ({ ok: a.ok && b.ok, text: `${a.text}; ${b.text}` });
// % 429 of this key's last n attempts, from the server's arrival log.
const lastPct = (o, n) => (o.arrivalsFull ? NaN : (100 * o.arrivals.slice(-n).filter((a) => a.status === 429).length) / Math.min(n, o.arrivals.length));
const secondsPerCall = (o) => (o.timedOut ? o.capS : o.wallS) / o.done;
const doneAt = (o, k) => o.records.filter((r) => r.done).map((r) => r.endMs / 1000).sort((x, y) => x - y)[k - 1] ?? Infinity;
const refusalsMs = (o) => o.records.filter((r) => r.refused).map((r) => r.endMs - r.startMs).sort((x, y) => x - y);
const whenText = (s, o) => (s === Infinity ? `not by the cut-off at ${o.capS} s` : `at ${fix(s)} s`);

const sustained = (n) => ({
  figure: (o) => `last ${n} attempts: ${fix(lastPct(o, n), 1)} % 429s`,
  judge: ([o]) => {
    const u = usual(o);
    return { ok: u.ok && lastPct(o, n) <= T.sustainedPct, text: `${u.text}, last ${n}: ${fix(lastPct(o, n), 1)} %` };
  },
});
const hung = {
  figure: (o) => `5 of 6 done ${whenText(doneAt(o, 5), o)}; the 6th ${whenText(doneAt(o, 6), o)}`,
  judge: (runs) => ({
    ok: runs.every((o) => doneAt(o, 5) <= T.doneS),
    text: runs.map((o, i) => `${i ? 'retry: false' : 'default'}: 5 done ${whenText(doneAt(o, 5), o)}`).join(', '),
  }),
};

// A row is one or more runs (one server each); `figure` is the row's own column, `judge` its
// verdict for one contender from its figures in each run.
const ROWS = [
  {
    id: 'a', figure: (o) => `${o.arrivals.filter((a) => a.at < 1000).length} requests in the outage's 1 s`,
    runs: [{ label: '503 (no Retry-After) for the first 1 s, 64 SDK calls at once, burst 2 at 2/s', burst: 2, perSecond: 2, calls: 64, kind: 'sdk', server: { outageMs: 1000 }, floorS: 1 + 62 / 2 }],
    judge: ([o]) => {
      const n = o.arrivals.filter((a) => a.at < 1000).length;
      return { ok: n <= T.outageRequests && o.done === o.calls, text: `${n} requests in the outage, ${o.done}/${o.calls} done, ${ratioText(o)}` };
    },
  },
  { id: 'b', ...sustained(800), runs: [{ label: 'counts on 429s only, 1,000 calls from 32 workers, burst 10 at 5/s', burst: 10, perSecond: 5, calls: 1000, workers: 32, kind: 'raw', server: { rateLimitHeaders: 'throttled' } }] },
  { id: 'c', ...sustained(320), runs: [{ label: 'counts on 429s only, 400 calls from 32 workers, burst 2 at 2/s', burst: 2, perSecond: 2, calls: 400, workers: 32, kind: 'raw', server: { rateLimitHeaders: 'throttled' } }] },
  {
    id: 'd', ...hung,
    runs: [
      { label: 'the first request hangs, 6 calls at once, burst 5 at 5/s', burst: 5, perSecond: 5, calls: 6, kind: 'raw', server: { hangFirst: 1 }, floorS: 0, capS: HANG_CAP_S },
      { label: 'the same, odds-gate with retry: false', burst: 5, perSecond: 5, calls: 6, kind: 'raw', server: { hangFirst: 1 }, floorS: 0, capS: HANG_CAP_S, gate: { retry: false } },
    ],
  },
  {
    id: 'e', figure: (o) => `${o.arrivals.filter((a) => a.at - o.arrivals[0].at < 180).length} requests in the first 180 ms`, judge: ([o]) => usual(o),
    runs: [{ label: 'the first answer claims Remaining: 9999, 64 calls at once, burst 5 at 5/s', burst: 5, perSecond: 5, calls: 64, kind: 'raw', server: { claimRemaining: { first: 1, remaining: 9999 } } }],
  },
  {
    id: 'f', figure: () => '', judge: ([a, b]) => both(usual(a), usual(b)),
    runs: [64, 256].map((calls) => ({ label: `counts, ${calls} calls at once, burst 50 at 20/s`, burst: 50, perSecond: 20, calls, kind: 'raw' })),
  },
  {
    id: 'g', figure: (o) => `${fix(secondsPerCall(o), 3)} s per call`,
    runs: [
      { label: 'a limiter per event id, 700 calls over 700 ids from 8 workers, burst 2 at 2/s each', burst: 2, perSecond: 2, calls: 700, workers: 8, kind: 'raw', server: { bucketPerResource: true }, floorS: 0, capS: 60 },
      { label: 'one limiter, 100 calls over 100 ids from 8 workers, burst 2 at 2/s', burst: 2, perSecond: 2, calls: 100, workers: 8, kind: 'raw' },
    ],
    judge: ([per, one]) => ({
      ok: secondsPerCall(per) <= secondsPerCall(one),
      text: `${fix(secondsPerCall(per), 3)} s per call per event id${per.timedOut ? ' (cut off)' : ''} vs ${fix(secondsPerCall(one), 3)} under one limiter`,
    }),
  },
  {
    id: 'h',
    figure: (o) => {
      const ms = refusalsMs(o);
      return ms.length ? `${ms.length} refused, ${fix(ms[0], 0)} to ${fix(ms.at(-1), 0)} ms after the call (median ${fix(median(ms), 0)})` : 'none refused';
    },
    runs: [{ label: `maxWaitMs: ${MAX_WAIT_MS}, no counts, 32 calls at once, burst 2 at 2/s`, burst: 2, perSecond: 2, calls: 32, kind: 'once', server: { rateLimitHeaders: false }, gate: { maxWaitMs: MAX_WAIT_MS }, floorS: null, capS: 30 }],
    judge: ([o]) => {
      const ms = refusalsMs(o);
      return { ok: ms.length > 0 && ms.at(-1) <= T.atOnceMs, text: ms.length ? `${ms.length} refused, the last ${fix(ms.at(-1), 0)} ms after its call` : 'none refused' };
    },
  },
  {
    id: 'i', figure: (o) => `walls ${o.walls.map((w) => fix(w)).join(', ')} s`,
    runs: [{ label: 'never limits, no headers, 20,000 calls from 64 workers (3 rounds, one contender at a time)', burst: 1e6, perSecond: 1e6, calls: 20_000, workers: 64, kind: 'raw', server: { rateLimitHeaders: false }, plain: true, rounds: 3, capS: 60 }],
    judge: ([o]) => ({ ok: allDone(o) && o.ratio <= T.plainRatio, text: `${o.done}/${o.calls} done, ${o.timedOut ? 'cut off' : `${fix(o.ratio)} x plain fetch`}` }),
  },
  {
    id: 'j', figure: (o) => `${o.throttled} 429s`, judge: ([a, b]) => ({ ok: null, text: `${a.throttled} and ${b.throttled} 429s` }),
    runs: [['no headers', false], ['counts on 429s only', 'throttled']].map(([what, rateLimitHeaders]) => ({
      label: `${what}, 8 SDK calls at once, burst 2 at 2/s`, burst: 2, perSecond: 2, calls: 8, kind: 'sdk', server: { rateLimitHeaders },
    })),
  },
];

const floorOf = (run) => (run.floorS !== undefined ? run.floorS : Math.max(0, run.calls - run.burst) / run.perSecond);
const capOf = (run) => run.capS ?? 2 * floorOf(run) + 10;

function contenders(createFetch, run) {
  const gate = run.gate ?? {};
  return [
    { name: LEARNING, make: () => ({ fetchImpl: createFetch({ ...gate }), gate: true }) },
    run.plain
      ? { name: PLAIN, make: () => ({ fetchImpl: fetch }) }
      : { name: FIXED, make: () => ({ fetchImpl: createFetch({ rate: { burst: run.burst, perSecond: run.perSecond }, ...gate }), gate: true }) },
    { name: AWS, make: () => ({ fetchImpl: fetch, limiter: new DefaultRateLimiter() }) },
  ];
}

// One run: one server, the contenders at once (or, with rounds, one after another, rotated);
// per contender its figures, the rounds folded (sums, the median wall).
async function runRun(createFetch, run) {
  const fake = await startFakeOddsApi({ burst: run.burst, perSecond: run.perSecond, retryAfterSeconds: RETRY_AFTER_S, ...run.server });
  try {
    const list = contenders(createFetch, run);
    const made = [];
    for (let r = 0; r < (run.rounds ?? 1); r++) {
      for (const c of rotate(list, r)) made.push({ c, impl: c.make(), apiKey: `no-harm-${randomUUID()}` });
    }
    // Labelled twice: the first time warms the sockets up, the second, after a reset, starts the
    // server's clock (an outage's) within a few ms of the contenders.
    await labelKeys(fake, made);
    const clockAt = performance.now(); // the server's clock starts within a millisecond of this
    fake.reset();
    await labelKeys(fake, made);
    // A gate's figures as its load ends (an idle gate may be forgotten before the others end).
    const load = async (m, t0) => {
      const out = await runLoad(m.impl, { kind: run.kind, baseUrl: fake.baseUrl, apiKey: m.apiKey, t0, calls: run.calls, workers: run.workers, capS: capOf(run), maxWaitMs: MAX_WAIT_MS });
      m.stats = m.impl.gate ? m.impl.fetchImpl.stats() : null;
      return out;
    };
    if (run.rounds) {
      for (const m of made) {
        m.t0 = performance.now();
        m.out = await load(m, m.t0);
        await sleep(200); // the sockets of one settle before the next
      }
    } else {
      const t0 = performance.now();
      const outs = await Promise.all(made.map((m) => load(m, t0)));
      made.forEach((m, i) => { m.t0 = t0; m.out = outs[i]; });
    }
    const server = fake.stats();
    return list.map((c) => {
      const mine = made.filter((m) => m.c === c);
      const k = mine.map((m) => server.byKey[m.label] ?? { attempts: 0, throttled: 0, ok: 0 });
      const sum = (f) => k.reduce((s, x) => s + (x[f] ?? 0), 0);
      const walls = mine.map((m) => m.out.wallS);
      const [m] = mine; // the records and errors are the first round's
      const o = {
        name: c.name, calls: run.calls * mine.length, capS: capOf(run), walls, wallS: median(walls),
        done: mine.reduce((s, x) => s + x.out.done, 0), timedOut: mine.some((x) => x.out.timedOut),
        attempts: sum('attempts'), throttled: sum('throttled'), ok: sum('ok'), unavailable: sum('unavailable'), hung: sum('hung'),
        records: m.out.records, errors: m.out.errors, failed: m.out.failed, stuck: mine.some((x) => x.out.stuck),
        arrivalsFull: server.arrivals.length >= 10_000,
        arrivals: server.arrivals.filter((a) => a.key === m.label), // `at`: ms on the server's clock
        startSkewMs: m.t0 - clockAt,
      };
      o.pct = o.attempts ? (100 * o.throttled) / o.attempts : NaN;
      if (m.stats) {
        const s = m.stats;
        const l = s.gates[0]?.learned;
        o.gate = `gates ${s.gates.length}, admitted ${s.admitted}, throttled ${s.throttled}, retries ${JSON.stringify(s.retries)}, ` +
          `abandoned ${JSON.stringify(s.abandoned)}${l ? `, learned burst ${l.burst}, perSecond ${fix(l.perSecond)}, atLeast ${fix(l.atLeast)}` : ''}`;
      }
      if (m.impl.limiter) o.limiter = `final fillRate ${fix(m.impl.limiter.fillRate)}/s, enabled ${m.impl.limiter.enabled}`;
      return o;
    });
  } finally {
    await fake.close();
  }
}

export async function run({ quick }) {
  const { createFetch } = await loadPkg();
  const started = performance.now();
  const rows = quick ? ROWS.filter((r) => ['e', 'f', 'h', 'j'].includes(r.id)) : ROWS; // the short rows
  const table = [];
  const notes = [];
  const verdicts = [];
  const others = new Map([[FIXED, []], [PLAIN, []], [AWS, []]]); // contender -> rows within the learner's bounds
  for (const row of rows) {
    const outs = [];
    for (const [i, spec] of row.runs.entries()) {
      const rowStarted = performance.now();
      const list = await runRun(createFetch, spec);
      const floorS = spec.plain ? list.find((o) => o.name === PLAIN).wallS : floorOf(spec);
      for (const o of list) {
        o.floorS = floorS;
        o.ratio = floorS ? o.wallS / floorS : NaN;
        const wall = o.timedOut ? `> ${fix(o.capS, 0)}` : fix(o.wallS);
        const ratio = !floorS ? '-' : o.timedOut ? `> ${fix(o.capS / floorS)}` : fix(o.ratio);
        const label = `${row.id}${row.runs.length > 1 ? i + 1 : ''}. ${spec.label}`;
        table.push([label, o.name, `${o.done} / ${o.calls}`, o.attempts, o.throttled, fix(o.pct, 1), wall, floorS === null ? '-' : fix(floorS), ratio, row.figure(o)]);
        console.error(`  no-harm ${label}, ${o.name}: ${o.done}/${o.calls} done, ${o.attempts} attempts, ${o.throttled} 429s, ${wall} s; ${row.figure(o)}`);
        const extra = [];
        if (o.unavailable || o.hung) extra.push(`server 503s ${o.unavailable}, unanswered ${o.hung}, 200s ${o.ok}`);
        if (o.failed) extra.push(`${o.failed} call${o.failed === 1 ? '' : 's'} given up`);
        if (Object.keys(o.errors).length) extra.push(`errors ${JSON.stringify(o.errors)}`);
        if (o.stuck) extra.push(`calls still pending ${DRAIN_MS / 1000} s after the cut-off`);
        if (o.gate) extra.push(o.gate);
        if (o.limiter) extra.push(o.limiter);
        if (extra.length) notes.push(`${label.split('.')[0]}, ${o.name}: ${extra.join('; ')}`);
      }
      outs.push(list);
      notes.push(`${row.id}${row.runs.length > 1 ? i + 1 : ''}: ran ${fix((performance.now() - rowStarted) / 1000, 0)} s` +
        (spec.server?.outageMs ? `; the server's clock (the outage) started ${fix(list[0].startSkewMs, 0)} ms or less before the contenders` : ''));
      await sleep(200);
    }
    for (const name of outs[0].map((o) => o.name)) {
      const v = row.judge(outs.map((list) => list.find((o) => o.name === name)));
      if (name === LEARNING) verdicts.push(`${row.id}: ${v.ok === null ? 'figures only' : v.ok ? 'met' : 'MISSED'} (${v.text})`);
      else if (v.ok) others.get(name).push(row.id);
    }
  }
  const judged = verdicts.filter((v) => !v.includes('figures only'));
  const othersText = [...others].filter(([name]) => name !== PLAIN || rows.some((r) => r.id === 'i'))
    .map(([name, ids]) => `${name} ${ids.length ? ids.join(', ') : 'none'}`).join('; ');
  notes.push(`this table ran ${fix((performance.now() - started) / 1000, 0)} s`);
  return [{
    id: 'no-harm',
    title: 'Do no harm in the default mode (#34), live',
    what: `The issue's rows against the fake Odds API over loopback (its opt-in outageMs, rateLimitHeaders: 'throttled', ` +
      `hangFirst, claimRemaining, bucketPerResource). Per run, three contenders at the same time against one server, each on ` +
      `its own key: odds-gate learning (createFetch(), no rate), odds-gate with the right fixed rate (createFetch({ rate }) ` +
      `at the row's allowance; row g: per credential, as that is all a rate can say), the AWS SDK v3 adaptive ` +
      `DefaultRateLimiter (one limiter per contender); row i has plain fetch in place of the fixed rate and runs the ` +
      `contenders one after another, three rotated rounds (figures summed, wall the median round). "At once": every call ` +
      `starts at time 0; "from n workers": n workers take the calls in turn. The app retries as the matrix's workers do: a ` +
      `429 after its Retry-After (${RETRY_AFTER_S} s), a 503 after ${UNAVAILABLE_WAIT_S * 1000} ms, at most ${MAX_ATTEMPTS} ` +
      `calls (odds-gate's own retries come on top, counted by the server); rows a and j call through an SDK-shaped client ` +
      `(the app sees OddsApiError's status, not the headers: a 429 waits ${RETRY_AFTER_S} s); row h calls once ` +
      `(maxWaitMs: ${MAX_WAIT_MS} on both odds-gate wrappers; the AWS limiter has none, so the app gives up ${MAX_WAIT_MS} ms ` +
      `after the call, retrying until then). Attempts (503s and unanswered requests included) and 429s are the server's. ` +
      `Floor = (calls - burst) / perSecond (row a: + the 1 s outage; rows d and g's per-id run: 0, where wall/floor is ` +
      `not shown; row i: plain fetch's wall). Row b and c's sustained figure is the key's last 800 (c: 320) attempts, ` +
      `4/5 of the calls; c is 400 calls (floor 199 s, as b's 198) to stay well under 10 minutes. Row a counts the key's requests the server saw during its outage, row e those in the 180 ms from the ` +
      `key's first request. Row d counts when 5 of ` +
      `the 6 calls are done (the 6th is the one whose request hangs), cut off at ${HANG_CAP_S} s. Row g compares seconds per ` +
      `call (cut off at 60 s: the cut-off over the calls done) with the one-limiter run's. Runs are cut off at ` +
      `2 x floor + 10 s unless the row says; one run`,
    target: `odds-gate learning (the issue's): a: <= ${T.outageRequests} requests during the 1 s outage, 64/64 done; b, c: ` +
      `<= ${T.sustainedPct} % 429s over the sustained window, <= ${T.pct} % overall, wall <= ${T.ratio} x floor; d: the 5 ` +
      `other calls done within about 1-2 s (judged at ${T.doneS} s) in both runs; e, f: <= ${T.pct} % and <= ${T.ratio} x ` +
      `floor, all done; g: seconds per call no more than under one limiter; h: refusals at once (judged: within ` +
      `${T.atOnceMs} ms of the call); i: wall <= ${T.plainRatio} x plain fetch's; j: figures only (the right fixed rate: 0)`,
    verdict: `${judged.length && judged.every((v) => v.includes(': met')) ? 'met' : 'MISSED'} (odds-gate learning, by row: ` +
      `${verdicts.join('; ')}); rows within the same bounds: ${othersText}`,
    head: ['row', 'contender', 'calls done (of N)', 'attempts', '429s', '429 %', 'wall (s)', 'floor (s)', 'wall/floor', "the row's own figure"],
    rows: table,
    notes,
  }];
}

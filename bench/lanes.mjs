// Lanes (issue #25): live odds before background refreshes on one key, against the fake Odds API
// (per-key token bucket, 429 with Retry-After: 1; counts are server-side). Two cases, each run by
// three contenders on the same work: odds-gate with one line (every call in call order),
// odds-gate with lanes (background weight 1, live weight 9), and bottleneck with priorities
// (live priority 0, background 9; its reservoir refilled as a token bucket, as in the
// coordination benchmark).
// - "40 then 8": burst 2 at 2/s; 40 background calls queued at 0, 8 live calls 1 s later. The
//   floor for all 48 is 23 s (2 at once, then 46 at 2/s).
// - "saturated": burst 2 at 20/s; 200 live and 200 background calls queued at 0: the background
//   share of the first 100 calls done (weights 9:1 give a tenth; strict priorities none).
import { randomUUID } from 'node:crypto';
import Bottleneck from 'bottleneck';
import { startFakeOddsApi } from '../js-tests/support/fake-odds-api.mjs';
import { loadPkg, fix, sleep } from './lib/util.mjs';

const TIMEOUT_MS = 60_000;

function contenders(createFetch) {
  return {
    'odds-gate, one line': (rate) => {
      const f = createFetch({ rate });
      return { background: f, live: f };
    },
    'odds-gate, lanes 1 : 9': (rate) => {
      const f = createFetch({ rate });
      return { background: f.lane({ weight: 1 }), live: f.lane({ weight: 9 }) };
    },
    'bottleneck, priorities 9 / 0': ({ burst, perSecond }) => {
      const interval = 1000 / perSecond;
      const limiter = new Bottleneck({
        reservoir: burst, reservoirIncreaseAmount: 1, reservoirIncreaseInterval: interval,
        reservoirIncreaseMaximum: burst, heartbeatInterval: Math.max(1, Math.min(250, interval / 10)),
      });
      const at = (priority) => (input, init) => limiter.schedule({ priority }, () => fetch(input, init));
      return { background: at(9), live: at(0), close: () => limiter.disconnect() };
    },
  };
}

/** One run: `plan` gives each call's kind and start time; returns when each kind was done. */
async function runOnce(make, rate, plan) {
  const api = await startFakeOddsApi({ ...rate, retryAfterSeconds: 1 });
  const c = make(rate);
  const headers = { 'X-API-Key': `bench-lanes-${randomUUID()}` };
  const started = performance.now();
  const order = [];
  const done = { background: [], live: [] };
  try {
    const calls = plan.map(({ kind, atMs }, n) => sleep(atMs).then(async () => {
      const r = await c[kind](`${api.baseUrl}/events/${n}/odds/snapshot`, { headers });
      await r.text();
      order.push(kind);
      done[kind].push(performance.now() - started);
      return r.status;
    }));
    let timer;
    const timeout = new Promise((resolve) => { timer = setTimeout(resolve, TIMEOUT_MS); });
    await Promise.race([Promise.allSettled(calls), timeout]);
    clearTimeout(timer);
    const s = api.stats();
    return { done, order, attempts: s.attempts, rejected: s.rejected, ok: s.ok };
  } finally {
    await c.close?.();
    await api.close();
  }
}

const last = (xs) => (xs.length ? Math.max(...xs) / 1000 : NaN);

export async function run() {
  const { createFetch } = await loadPkg();
  const all = contenders(createFetch);
  const firstRate = { burst: 2, perSecond: 2 };
  const first = [
    ...Array.from({ length: 40 }, () => ({ kind: 'background', atMs: 0 })),
    ...Array.from({ length: 8 }, () => ({ kind: 'live', atMs: 1_000 })),
  ];
  const rowsA = [];
  for (const [name, make] of Object.entries(all)) {
    const r = await runOnce(make, firstRate, first);
    const whole = Math.max(last(r.done.live), last(r.done.background));
    rowsA.push([name, fix(last(r.done.live)), fix(last(r.done.background)), `${fix(whole)} (${fix(whole / 23)} x)`,
      `${r.ok} / ${r.attempts}`, r.rejected]);
  }
  const satRate = { burst: 2, perSecond: 20 };
  const saturated = [
    ...Array.from({ length: 200 }, () => ({ kind: 'live', atMs: 0 })),
    ...Array.from({ length: 200 }, () => ({ kind: 'background', atMs: 0 })),
  ];
  const rowsB = [];
  for (const [name, make] of Object.entries(all)) {
    const r = await runOnce(make, satRate, saturated);
    const share = r.order.slice(0, 100).filter((k) => k === 'background').length;
    rowsB.push([name, `${share} %`, fix(last(r.done.live)), fix(last(r.done.background)), `${r.ok} / ${r.attempts}`, r.rejected]);
  }
  const lanes = rowsA.find((row) => row[0].includes('lanes'));
  const liveS = Number(lanes[1]);
  const wholeS = Number(lanes[3].split(' ')[0]);
  const share = Number(rowsB.find((row) => row[0].includes('lanes'))[1].split(' ')[0]);
  return [{
    id: 'lanes',
    title: 'Lanes: live calls before background refreshes on one key',
    what: 'the fake Odds API (burst 2 at 2/s, Retry-After: 1 on 429s); 40 background calls queued at 0 s, 8 live calls at 1 s; seconds from the start until the last call of each kind was done; 200s / requests and 429s as the server counted them',
    target: 'lanes: the live calls done within 7 s, the whole line <= 1.05 x the 23 s floor, 0 429s',
    verdict: `${liveS <= 7 && wholeS <= 1.05 * 23 && lanes[5] === 0 ? 'met' : 'MISSED'} (live done at ${fix(liveS)} s, all at ${fix(wholeS)} s, ${lanes[5]} 429s)`,
    head: ['contender', 'live done (s)', 'background done (s)', 'all done (s, x floor)', '200s / requests', '429s'],
    rows: rowsA,
  }, {
    id: 'lanes-share',
    title: 'Lanes: a background lane under a saturated live lane',
    what: 'the fake Odds API (burst 2 at 20/s); 200 live and 200 background calls queued at 0 s; the background calls among the first 100 done, and when each kind was all done',
    target: 'lanes: the background lane (weight 1) gets >= 9 % under a saturated weight-9 lane',
    verdict: `${share >= 9 ? 'met' : 'MISSED'} (${share} % of the first 100)`,
    head: ['contender', 'background share of the first 100', 'live done (s)', 'background done (s)', '200s / requests', '429s'],
    rows: rowsB,
  }];
}

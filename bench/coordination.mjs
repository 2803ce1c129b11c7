// 1. Coordination: N SDK-shaped workers share one key against the fake Odds API (per-key token
// bucket, 429 with Retry-After: 1). Each strategy gets the same allowance; counts are server-side.
import { randomUUID } from 'node:crypto';
import Bottleneck from 'bottleneck';
import pThrottle from 'p-throttle';
import { startFakeOddsApi } from '../js-tests/support/fake-odds-api.mjs';
import { runWorkers } from '../js-tests/support/workers.mjs';
import { loadPkg, median, fix, rotate, sleep } from './lib/util.mjs';

const TIMEOUT_MS = 30_000; // per run; a timed-out run shows wall '> 30'
// N -> allowance. Only N = 8 runs at the article's 2/s; larger N scale perSecond so a run is ~5 s.
const SIZES = [[8, { burst: 2, perSecond: 2 }], [64, { burst: 2, perSecond: 20 }], [256, { burst: 2, perSecond: 50 }]];

function strategies(createFetch) {
  return {
    'plain fetch + 1 s retry': () => ({ fetchImpl: fetch }),
    'bottleneck (token bucket) + retry': ({ burst, perSecond }) => {
      const interval = 1000 / perSecond;
      const limiter = new Bottleneck({
        reservoir: burst, reservoirIncreaseAmount: 1, reservoirIncreaseInterval: interval,
        reservoirIncreaseMaximum: burst,
        heartbeatInterval: Math.max(1, Math.min(250, interval / 10)), // default 250 ms would cap the refill at 4/s
      });
      return { fetchImpl: limiter.wrap((input, init) => fetch(input, init)), close: () => limiter.disconnect() };
    },
    'p-throttle + retry': ({ perSecond }) => {
      const stop = new AbortController(); // drops calls still queued when a run times out
      const throttled = pThrottle({ limit: perSecond, interval: 1000, signal: stop.signal })((input, init) => fetch(input, init));
      return { fetchImpl: throttled, close: () => stop.abort() };
    },
    'odds-gate + retry': (rate) => ({ fetchImpl: createFetch({ rate }) }),
  };
}

const fmtWall = (s) => (Number.isFinite(s) ? fix(s) : `> ${TIMEOUT_MS / 1000}`);

export async function run({ quick }) {
  const { createFetch } = await loadPkg();
  const strats = strategies(createFetch);
  const names = Object.keys(strats);
  const sizes = quick ? SIZES.slice(0, 2) : SIZES;
  const rounds = quick ? 1 : 2; // the naive strategies need up to 20 s per run at N >= 64
  const results = new Map(); // `${n}|${name}` -> [{ attempts, throttled, completed, wallMs, gate }]
  for (let r = 0; r < rounds; r++) {
    for (const [n, rate] of sizes) {
      for (const name of rotate(names, r + n)) {
        const fake = await startFakeOddsApi({ ...rate, retryAfterSeconds: 1 });
        const s = strats[name](rate);
        let out;
        try {
          out = await runWorkers({ fetchImpl: s.fetchImpl, baseUrl: fake.baseUrl, apiKey: `bench-${randomUUID()}`,
            workers: n, retryDelayMs: 1000, maxAttempts: 20, timeoutMs: TIMEOUT_MS })
            .catch(() => ({ wallMs: Infinity })); // timed out: stray workers stop retrying
          const srv = fake.stats(); // completed = 200s seen by the server (one per finished job)
          out = { wallMs: out.wallMs, attempts: srv.attempts, throttled: srv.throttled, completed: srv.ok, gate: s.fetchImpl.stats?.().gates[0] };
        } finally {
          await s.close?.();
          await fake.close();
        }
        const key = `${n}|${name}`;
        results.set(key, [...(results.get(key) ?? []), out]);
        console.error(`  coordination round ${r + 1}/${rounds} N=${n} ${name}: ${out.attempts} attempts, ` +
          `${out.throttled} 429s, ${out.completed}/${n} done, ${fmtWall(out.wallMs / 1000)} s`);
        await sleep(200);
      }
    }
  }

  const rows = [];
  const gateNotes = [];
  let met = true;
  const verdicts = [];
  for (const [n, rate] of sizes) {
    const floorS = (n - rate.burst) / rate.perSecond;
    for (const name of names) {
      const rs = results.get(`${n}|${name}`);
      const wall = median(rs.map((x) => x.wallMs / 1000));
      rows.push([n, `burst ${rate.burst}, ${rate.perSecond}/s`, name,
        fix(median(rs.map((x) => x.attempts / x.completed))), rs.map((x) => x.throttled).join('/'),
        rs.map((x) => x.completed).join('/'), fmtWall(wall), fix(floorS), Number.isFinite(wall) ? fix(wall / floorS, 3) : '-']);
      if (name.startsWith('odds-gate')) {
        const zero = rs.every((x) => x.throttled === 0);
        const fast = wall / floorS <= 1.02;
        met &&= zero && fast && rs.every((x) => x.completed === n);
        verdicts.push(`N=${n}: 429s ${rs.map((x) => x.throttled).join('/')}, wall/floor ${fix(wall / floorS, 3)}`);
        const g = rs.map((x) => x.gate);
        gateNotes.push(`N=${n}: gate admitted ${g.map((x) => x.admitted).join('/')}, wakeups ${g.map((x) => x.wakeups).join('/')}, ` +
          `throttled ${g.map((x) => x.throttled).join('/')}, retries ${g.map((x) => x.retries.throttled).join('/')}, ` +
          `peakWaiting ${g.map((x) => x.peakWaiting).join('/')}`);
      }
    }
  }
  return [{
    id: 'coordination',
    title: 'Coordination: N workers sharing one key',
    what: `N SDK-shaped workers each fetch one snapshot from the fake Odds API (per-key token bucket, 429 with Retry-After: 1); ` +
      `every worker retries a 429 after a fixed 1 s (up to 20 attempts; a run is cut off after ${TIMEOUT_MS / 1000} s). Same allowance for every strategy: bottleneck ` +
      `reservoir burst, +1 every 1000/perSecond ms (max burst, heartbeat interval/10); p-throttle limit perSecond per 1000 ms; ` +
      `odds-gate rate { burst, perSecond } with its internal retries on. Attempts and 429s are counted by the server; ` +
      `completed = 200s at the server; floor = (N - burst) / perSecond; ${rounds} round(s), order rotated; figures are medians, ` +
      `429s and completed are per round`,
    target: 'odds-gate: 0 429s at the exact allowance and wall <= 1.02 x floor',
    verdict: `${met ? 'met' : 'MISSED'} (${verdicts.join('; ')})`,
    head: ['N', 'allowance', 'strategy', 'attempts/job', '429s', 'completed (of N)', 'wall (s)', 'floor (s)', 'wall/floor'],
    rows,
    notes: ['odds-gate gate figures per round: ' + gateNotes.join('; ')],
  }];
}

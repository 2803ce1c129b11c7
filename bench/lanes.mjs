// Lanes (issue #25): live odds before background refreshes on one key, against the fake Odds API
// (per-key token bucket, 429 with Retry-After: 1; counts are server-side). Two cases, each run by
// three contenders on the same work: odds-gate with one queue (every call in call order),
// odds-gate with lanes (background weight 1, live weight 9), and bottleneck with priorities
// (live priority 0, background 9; its reservoir refilled as a token bucket, as in the
// coordination benchmark).
// - "40 then 8": burst 2 at 2/s; 40 background calls queued at 0, 8 live calls 1 s later. The
//   floor for all 48 is 23 s (2 at once, then 46 at 2/s).
// - "saturated": burst 2 at 20/s; 200 live and 200 background calls queued at 0: the background
//   share of the first 100 calls done (weights 9:1 give a tenth; strict priorities none).
// - "fleet": four processes through one redis-server, each with both lanes saturated (50 live
//   and 50 background calls at once, at burst 2, 20/s, X-RateLimit-* on 429s only): the shares
//   of the first 100 calls done, by lane and by process (within a lane calls go by arrival,
//   whichever process holds them); against the same processes with every call in one queue.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import Bottleneck from 'bottleneck';
import { startFakeOddsApi } from '../js-tests/support/fake-odds-api.mjs';
import { startRedis } from '../js-tests/support/redis-server.mjs';
import { loadPkg, fix, sleep } from './lib/util.mjs';

const FLEET_CHILD = fileURLToPath(new URL('../js-tests/support/fleet-child.mjs', import.meta.url));

const TIMEOUT_MS = 60_000;

function contenders(createFetch) {
  return {
    'odds-gate, one queue': (rate) => {
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
    return { done, order, attempts: s.attempts, throttled: s.throttled, ok: s.ok };
  } finally {
    await c.close?.();
    await api.close();
  }
}

const last = (xs) => (xs.length ? Math.max(...xs) / 1000 : NaN);

/** One process of the fleet case (js-tests/support/fleet-child.mjs): resolves with its calls. */
function fleetChild(job) {
  const proc = spawn(process.execPath, [FLEET_CHILD, JSON.stringify(job)], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  proc.stdout.on('data', (d) => { out += d; });
  const ready = new Promise((resolve) => proc.stdout.once('data', resolve));
  const done = new Promise((resolve, reject) => {
    const killer = setTimeout(() => proc.kill('SIGKILL'), TIMEOUT_MS);
    proc.on('exit', (code) => {
      clearTimeout(killer);
      if (code !== 0) return reject(new Error(`fleet child exited with ${code}`));
      resolve(JSON.parse(out.trim().split('\n').at(-1)).done);
    });
  });
  return { ready, go: () => proc.stdin.end('go\n'), done };
}

/** Four processes sharing one key through Redis, each with 50 live and 50 background calls. */
async function fleetOnce(redisPort, oneQueue) {
  const rate = { burst: 2, perSecond: 20 };
  // X-RateLimit-* on 429s only, as the API documents them.
  const api = await startFakeOddsApi({ ...rate, retryAfterSeconds: 1, rateLimitHeaders: 'throttled' });
  try {
    const job = { store: 'redis', redisPort, rate, baseUrl: api.baseUrl, apiKey: `bench-fleet-lanes-${randomUUID()}`, lanes: { live: 50, background: 50 }, oneQueue };
    const children = Array.from({ length: 4 }, () => fleetChild(job));
    await Promise.all(children.map((c) => c.ready));
    for (const c of children) c.go();
    const runs = await Promise.all(children.map((c) => c.done));
    const done = runs.flatMap((calls, p) => calls.map((call) => ({ ...call, p }))).sort((a, b) => a.at - b.at);
    const first = done.slice(0, 100);
    const start = done[0].at;
    const s = api.stats();
    return {
      background: first.filter((d) => d.kind === 'background').length,
      perProcess: [0, 1, 2, 3].map((p) => first.filter((d) => d.p === p).length),
      liveS: (Math.max(...done.filter((d) => d.kind === 'live').map((d) => d.at)) - start) / 1000,
      allS: (done.at(-1).at - start) / 1000,
      ok: s.ok,
      attempts: s.attempts,
      throttled: s.throttled,
    };
  } finally {
    await api.close();
  }
}

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
      `${r.ok} / ${r.attempts}`, r.throttled]);
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
    rowsB.push([name, `${share} %`, fix(last(r.done.live)), fix(last(r.done.background)), `${r.ok} / ${r.attempts}`, r.throttled]);
  }
  const redis = await startRedis();
  const rowsC = [];
  try {
    for (const [name, oneQueue] of [['odds-gate, lanes 1 : 9 in each process', false], ['odds-gate, one queue in each process', true]]) {
      const r = await fleetOnce(redis.port, oneQueue);
      rowsC.push([name, `${r.background} %`, r.perProcess.join(' / '), fix(r.liveS), fix(r.allS), `${r.ok} / ${r.attempts}`, r.throttled]);
    }
  } finally {
    await redis.stop();
  }
  const fleetShare = Number(rowsC[0][1].split(' ')[0]);
  const lanes = rowsA.find((row) => row[0].includes('lanes'));
  const liveS = Number(lanes[1]);
  const wholeS = Number(lanes[3].split(' ')[0]);
  const share = Number(rowsB.find((row) => row[0].includes('lanes'))[1].split(' ')[0]);
  return [{
    id: 'lanes',
    title: 'Lanes: live calls before background refreshes on one key',
    what: 'the fake Odds API (burst 2 at 2/s, Retry-After: 1 on 429s); 40 background calls queued at 0 s, 8 live calls at 1 s; seconds from the start until the last call of each kind was done; 200s / requests and 429s as the server counted them',
    target: 'lanes: the live calls done within 7 s, the whole queue <= 1.05 x the 23 s floor, 0 429s',
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
  }, {
    id: 'lanes-fleet',
    title: 'Lanes across a fleet: four processes through Redis, two lanes each',
    what: 'four processes sharing one key through one redis-server (the fake Odds API at burst 2, 20/s, X-RateLimit-* on 429s only), each with a background lane (weight 1) and a live lane (weight 9) made in that order, each queueing 50 live and 50 background calls at once; of the first 100 calls done, the background ones and each process\'s (within a lane the calls go by arrival, whichever process holds them); seconds from the first call done until the last live call and the last call (the floor for 400 calls: 19.9 s)',
    target: 'the background lanes together get a tenth of the admissions (9 : 1) across the fleet, as in one process (issue #25 item 3)',
    verdict: `${fleetShare >= 9 && fleetShare <= 11 ? 'met' : 'MISSED'} (background ${fleetShare} % of the first 100; per process ${rowsC[0][2]})`,
    head: ['contender', 'background share of the first 100', 'first 100 by process', 'live done (s)', 'all done (s)', '200s / requests', '429s'],
    rows: rowsC,
  }];
}

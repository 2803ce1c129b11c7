// A month of demand at 3x the quota (#37), compressed: the fake Odds API's billing period of
// `periodMs` (300 s) stands for 30 days, so a "day" is 10 s; the key has 300 credits for it
// and 900 calls come, one every periodMs / 900 (open loop: a call does not wait for the one
// before), at a rate that never binds. The rows at the same time, each against its own fresh fake:
// odds-gate without the spread (the quota runs out on day 10, then every call is refused);
// bottleneck's reservoir refreshed every day by hand (limit / 30 a day: what users write today)
// in front of fetch; odds-gate with `quota: { spread: true }`. Calls still waiting when the
// period ends are let go (aborted, or dropped by bottleneck.stop()).
// `node bench/run.mjs --only month` writes its table into BENCHMARKS.md; `node bench/month.mjs
// [periodMs]` prints it (CI runs none of it).
import { pathToFileURL } from 'node:url';
import { setMaxListeners } from 'node:events';
import Bottleneck from 'bottleneck';
import { createFetch, simulate } from '../pkg/index.js';
import { startFakeOddsApi } from '../js-tests/support/fake-odds-api.mjs';
import { fix, textTable } from './lib/util.mjs';

const DAYS = 30;
const LIMIT = 300;
const DEMAND = 3;
const RESERVE = 0.05; // the spread's default
const rate = { burst: 50, perSecond: 100 };
// Calls still waiting are let go this long before the fake's period ends (its credits are back then).
const END_MARGIN_MS = 20;

/** One strategy over one period against a fresh fake: what the server charged, day by day. */
async function runRow(periodMs, label, make) {
  const dayMs = periodMs / DAYS;
  // The fake's period starts when it starts: no earlier than this.
  const start = Date.now();
  const api = await startFakeOddsApi({ ...rate, creditLimit: LIMIT, billingPeriodMs: periodMs });
  const stop = new AbortController();
  setMaxListeners(0, stop.signal); // every waiting call listens to it
  const { call, end } = make(dayMs);
  const url = `${api.baseUrl}/events/e1/odds/snapshot`;
  const headers = { 'X-API-Key': `bench-month-${label}` };
  const days = new Array(DAYS).fill(0);
  const counts = { ok: 0, refused: 0, creditWait: 0, waiting: 0, failed: 0 };
  let ranOut = null;
  const calls = DEMAND * LIMIT;
  const one = async (i) => {
    await new Promise((resolve) => setTimeout(resolve, start + (i * periodMs) / calls - Date.now()));
    if (stop.signal.aborted) { counts.waiting++; return; }
    try {
      const response = await call(url, { headers, signal: stop.signal });
      await response.text();
      const at = Date.now() - start;
      if (response.status === 200) {
        counts.ok++;
        days[Math.min(DAYS - 1, Math.floor(at / dayMs))]++;
      } else if (response.status === 429) {
        counts.refused++;
        ranOut ??= at / dayMs;
      } else {
        counts.failed++;
      }
    } catch (err) {
      // Refused at once for the spread's credit (no maxWaitMs: it waits a minute at most), or
      // let go at the period's end: aborted, or dropped from bottleneck's queue.
      if (err?.reason === 'credit-wait') counts.creditWait++;
      else if (stop.signal.aborted) counts.waiting++;
      else counts.failed++;
    }
  };
  const stopping = setTimeout(() => { stop.abort(); end(); }, start + periodMs - END_MARGIN_MS - Date.now());
  await Promise.all(Array.from({ length: calls }, (_, i) => one(i)));
  clearTimeout(stopping);
  const s = api.stats();
  await api.close();
  const even = LIMIT / DAYS;
  return {
    label, spent: s.ok, ranOut, low: Math.min(...days) / even, high: Math.max(...days) / even,
    ...counts, usageCalls: s.usageCalls,
  };
}

/** odds-gate, `options` besides the rate, one thread (its waiting calls are aborted at the end). */
const oddsGate = (options) => () => ({ call: createFetch({ rate, threads: false, ...options }), end: () => {} });

/** bottleneck's reservoir, refreshed by hand to limit / 30 every day, in front of fetch. */
const reservoir = (dayMs) => {
  const perDay = LIMIT / DAYS;
  // Its refresh is checked every heartbeatInterval (250 ms by default): a hundredth of a day here.
  const limiter = new Bottleneck({
    reservoir: perDay, reservoirRefreshAmount: perDay, reservoirRefreshInterval: dayMs, heartbeatInterval: dayMs / 100,
  });
  return {
    call: (url, init) => limiter.schedule(() => fetch(url, { headers: init.headers })),
    end: () => { limiter.stop({ dropWaitingJobs: true }).catch(() => {}); },
  };
};

const HEAD = ['strategy', 'credits spent', '% of limit', 'quota ran out (day)', 'day / even day (min..max)', 'answered 200',
  'refused (429)', 'refused for credit (credit-wait)', 'let go at the end', 'failed', '/usage calls'];

/** The rows, side by side in one run, each one period of `periodMs`. */
async function measure(periodMs) {
  // A tenth of a day, but no less than quota.refreshMs's floor (a second).
  const refreshMs = Math.max(1_000, periodMs / DAYS / 10);
  // At the same time, each against its own fake and key: the calls are light (900 a period).
  const rows = await Promise.all([
    runRow(periodMs, 'odds-gate, no spread', oddsGate({})),
    runRow(periodMs, 'bottleneck, reservoir refreshed daily', reservoir),
    runRow(periodMs, 'odds-gate, quota: { spread: true }', oddsGate({ quota: { spread: true, refreshMs } })),
    runRow(periodMs, 'odds-gate, spread shared by threads', oddsGate({ threads: true, quota: { spread: true, refreshMs } })),
  ]);
  return rows.map((r) => [r.label, r.spent, fix((100 * r.spent) / LIMIT, 1), r.ranOut === null ? 'never' : fix(r.ranOut, 1),
    `${fix(r.low)}..${fix(r.high)}`, r.ok, r.refused, r.creditWait, r.waiting, r.failed, r.usageCalls]);
}

const TURN_HEAD = ['plan', 'spread', 'calls wanted', 'calls sent', 'first call (ms)', 'each new period\'s first call: ms it waited in it',
  'credits (last period)', 'quota ran out', 'day / even day (min..max)', '/usage readings'];

/** The small plan and the period's turn (#49) on the virtual clock: simulate({ quota }), one
 *  worker polling `polls` times evenly over the run, with and without the spread. */
function turns() {
  const plans = [
    ['1,000 credits, 25 days left, 3x demand', { limit: 1_000, days: 25 }, 3 * 950],
    ['100 credits a day, two days, 3x demand', { limit: 100, days: 1, periods: 2 }, 2 * 3 * 95],
    ['10,000 credits a month, two months, 3x demand', { limit: 10_000, periods: 2 }, 2 * 3 * 9_500],
  ];
  const rows = [];
  for (const [label, quota, polls] of plans) {
    for (const spread of [false, true]) {
      const q = simulate({ workers: 1, polls, quota: { ...quota, spread } }).quota;
      const shares = q.spent.slice(0, Math.round(q.periodMs / q.sliceMs)).map((n) => n / q.even);
      rows.push([label, spread ? 'yes' : 'no', q.wanted, q.sent, q.firstSentMs ?? 'never',
        q.resumedMs.length ? q.resumedMs.map((ms) => (ms === null ? 'never' : fix(ms, 0))).join(', ') : '-', q.used,
        q.exhaustedAtMs === null ? 'never' : `day ${fix(q.exhaustedAtMs / 86_400_000, 2)}`,
        `${fix(Math.min(...shares))}..${fix(Math.max(...shares))}`, q.readings]);
    }
  }
  return rows;
}

/** bench/run.mjs's entry: one table (`quick`: a 15 s period). */
export async function run({ quick }) {
  // A day of 10 s: quota.refreshMs (at least a second) is then a tenth of a day.
  const periodMs = quick ? 30_000 : 300_000;
  const rows = await measure(periodMs);
  const share = LIMIT * (1 - RESERVE);
  const even = 1 - RESERVE; // the spread's even day against the quota's
  const meets = (row) => {
    const [low, high] = row[4].split('..').map(Number);
    return row[1] >= 0.95 * share && row[3] === 'never' && low >= 0.9 * even && high <= 1.1 * even;
  };
  const spreads = rows.slice(2);
  return [{
    id: 'month',
    title: 'A month of demand at 3x the quota, compressed (#37)',
    what: `the fake Odds API's billing period of ${periodMs / 1000} s stands for ${DAYS} days (a day is ` +
      `${periodMs / DAYS} ms); the key has ${LIMIT} credits for it, and ${DEMAND * LIMIT} calls come, one every ` +
      `${fix(periodMs / (DEMAND * LIMIT), 1)} ms (open loop: none waits for the one before), at a rate that never ` +
      `binds (burst ${rate.burst} at ${rate.perSecond}/s). The rows at the same time, each against its own fresh fake: odds-gate ` +
      `without the spread (createFetch({ rate, threads: false })); bottleneck's reservoir refreshed by hand every day ` +
      `to limit / ${DAYS} (reservoirRefreshInterval a day) in front of fetch; odds-gate with quota: { spread: true, ` +
      `refreshMs: a tenth of a day, at least 1000 ms: a day here } (reserve 0.05, its default), in one thread's own memory (threads: false) and in the ` +
      `slot worker threads share (threads: true, the default; the credit bucket lives there, one /usage reader). Credits and /usage calls are the server's; the quota ` +
      `runs out at the first 429 (in days from the start); a day's credits are over an even day's (limit / ${DAYS}); ` +
      `the spread refuses at once, as credit-wait, a call no credit comes for within a minute (the calls here ` +
      `have no maxWaitMs); calls still waiting ${END_MARGIN_MS} ms before the period ends are let go (aborted, or ` +
      `dropped by bottleneck.stop())`,
    target: `#37: with the spread, at least 95 % of limit x (1 - reserve) spent (${0.95 * share}), never run out, ` +
      `every day within 10 % of the spread's even day (${fix(0.9 * even)}..${fix(1.1 * even)} of the quota's)`,
    verdict: `${spreads.every(meets) ? 'met' : 'MISSED'} (${spreads.map((r) => `${r[1]} credits, ran out: ${r[3]}, days ${r[4]}`).join('; ')})`,
    head: HEAD,
    rows,
    notes: ['bottleneck spends the whole limit (no reserve) and never runs out, but only because the refresh ' +
      'was sized by hand for this limit and period: it knows nothing of /usage, of other users of the key, of ' +
      'what a call costs or of when the period ends; the spread reads all of them from /usage'],
  }, turnsTable()];
}

/** The small plan and the period's turn as a table of bench/run.mjs's. */
function turnsTable() {
  const rows = turns();
  const spreads = rows.filter((r) => r[1] === 'yes');
  const meets = (r) => r[4] === 0 && String(r[5]).split(', ').every((ms) => ms === '-' || Number(ms) < 1_000) && r[7] === 'never';
  return {
    id: 'month-turns',
    title: 'A small plan and a period\'s turn, on the virtual clock (#49)',
    what: 'simulate({ workers: 1, polls, quota: { limit, days, periods, spread } }) (the production gates on the virtual ' +
      'clock, against a server that counts credits and answers /usage): one worker polls 3x what the spread allows, ' +
      'evenly over the run; a small plan of 1,000 credits with 25 days left, a daily plan of 100 credits over two ' +
      'periods, and a 30-day plan of 10,000 credits over two. The server\'s count starts over at each period\'s ' +
      'turn. "first call" is when the run\'s first call went out; "each new period\'s first call" how long the first ' +
      'call sent in each later period waited in it (from the period\'s start, or its own if later); days are the first period\'s, against an even day',
    target: '#49: with the spread, a small plan\'s first call at once, and each new period\'s first call within a ' +
      'second of its start, never run out',
    verdict: `${spreads.every(meets) ? 'met' : 'MISSED'} (${spreads.map((r) => `${r[0]}: first at ${r[4]} ms, ` +
      `turns ${r[5]} ms`).join('; ')})`,
    head: TURN_HEAD,
    rows,
    notes: ['Before #49 a small plan\'s first call went after 22.9 minutes (the bucket opened with one refresh\'s ' +
      'refill), and no call went for 11 s after a new period began (the reading came a refresh later)'],
  };
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const periodMs = Number(process.argv[2] ?? 300_000);
  console.log(`${DEMAND * LIMIT} calls over a ${periodMs / 1000} s period of ${LIMIT} credits`);
  console.log(textTable(HEAD, await measure(periodMs)));
  console.log(textTable(TURN_HEAD, turns()));
}

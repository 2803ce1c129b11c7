// 4. Scale: many calls waiting on one gate. Memory per waiter and timers alive while they wait (then
// all are aborted), and wake-ups per admission while a queue drains. Each row runs in its own process.
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { fix, int, within } from './lib/util.mjs';
import { VARIANTS } from './scale-row.mjs';

// Runs one row in a fresh process (with --expose-gc), bounded in time. A crash becomes the row:
// `lead` cells, then the reason in column `at` of a `width`-column table.
async function row(kind, options, lead, at, width) {
  const child = fork(new URL('./scale-row.mjs', import.meta.url), [kind, JSON.stringify(options)],
    { execArgv: ['--expose-gc'], stdio: ['ignore', 'inherit', 'pipe', 'ipc'] });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr = (stderr + d).slice(-20_000); });
  const exited = once(child, 'exit');
  const out = await within(Promise.race([once(child, 'message').then(([m]) => m), exited.then(() => null)]), 240_000);
  if (child.exitCode === null && child.signalCode === null) await within(exited, 5000);
  if (child.exitCode === null && child.signalCode === null) child.kill();
  if (out) return out;
  const fatal = stderr.match(/Fatal error[^\n]*\n#\s*([^\n]+)/);
  const why = `CRASHED (${child.signalCode ?? `exit ${child.exitCode}`}${fatal ? `: V8 fatal "${fatal[1].trim()}"` : ''})`;
  if (!fatal && stderr) process.stderr.write(stderr);
  const cells = [...lead, ...Array(width - lead.length).fill('-')];
  cells[at] = why;
  return { row: cells, crashed: why };
}

export async function run({ quick }) {
  const wait = [];
  // A shared signal costs O(listeners) per addEventListener in Node (it scans for duplicates), so
  // the shared-signal rows are smaller.
  for (const [n, shared] of [[quick ? 20_000 : 100_000, false], [quick ? 10_000 : 20_000, true]]) {
    for (const variant of Object.keys(VARIANTS)) {
      wait.push(await row('waiters', { variant, n, shared }, [variant, shared ? 'one shared' : 'one per call', int(n)], 13, 16));
    }
  }
  const drains = [];
  for (const [retry, tag] of [[false, 'retry:false'], [true, 'default retry']]) {
    const label = `odds-gate ${tag}`;
    for (const [n, rate] of [[quick ? 5000 : 20_000, { burst: 20, perSecond: 10_000 }], [quick ? 500 : 2000, { burst: 1, perSecond: 1000 }]]) {
      drains.push(await row('drain', { label, n, rate, retry }, [label, int(n), `burst ${rate.burst}, ${int(rate.perSecond)}/s`], 3, 11));
    }
  }
  const gateRows = wait.filter((w) => w.gate);
  const crashes = [...wait, ...drains].filter((w) => w.crashed);
  const ratios = drains.filter((d) => !d.crashed).map((d) => d.wakeupsPerWaiter);
  const oneTimer = gateRows.every((w) => w.timers <= 1) && drains.every((d) => d.crashed || d.peakTimers <= 1);
  const crashNote = crashes.length ? [`${crashes.length} row(s) crashed the Node process: ${crashes[0].crashed}`] : [];
  // Each waiting call against the floor of the same signal shape.
  const floor = (shared) => wait.find((w) => !w.gate && !w.crashed && w.shared === shared)?.bytes;
  const memory = gateRows.filter((w) => !w.crashed).map((w) => w.bytes / floor(w.shared));
  const lean = memory.length === gateRows.length && memory.every((r) => r <= 1.2);
  return [{
    id: 'scale-waiters',
    title: 'Scale: calls waiting on one gate',
    what: `n calls on one key (burst 1 at 1/s: all but the first wait; the inner fetch answers at once), then all aborted, ` +
      `through one shared AbortController or one controller per call (aborted in a loop); each row in a fresh process. ` +
      `The retry-on variant keeps the defaults but timeBudgetMs 1e9: the default 60 s budget refuses at once every call ` +
      `predicted to be admitted later than that. Bytes per waiter are deltas after gc() of heapUsed and external; external ` +
      `includes the wasm linear memory (also shown alone); externref slots = growth of wasm-bindgen's table of JS values ` +
      `held by wasm. Each call's promise and controller are included: compare with the floor row of the same shape. ` +
      `Timers = 'Timeout' handles added while the calls wait; retained = heap + external - wasm still held 1.1 s after the abort, after gc()`,
    target: 'one timer per gate; a waiting call <= 1.2 x the floor of the same signal shape (total B/waiter)',
    verdict: `${oneTimer && gateRows.length && lean ? 'met' : 'MISSED'} (timers while waiting: ${gateRows.map((w) => w.timers).join(', ')}; ` +
      `x the floor: ${memory.map((r) => fix(r, 2)).join(', ')}${crashes.length ? `; ${crashes.length} row(s) crashed` : ''})`,
    head: ['variant', 'signal', 'waiters', 'enqueue ns/call', 'heap B/waiter', 'external B/waiter', 'of which wasm',
      'externref slots/waiter', 'total B/waiter', 'timers', 'waiting / timerArmed', 'abort all', 'AbortErrors',
      'other outcomes', 'retained B/waiter', 'timers after'],
    rows: wait.map((w) => w.row),
    notes: crashNote,
  }, {
    id: 'scale-drain',
    title: 'Scale: wake-ups while a queue drains',
    what: `n calls queued at once on one gate, drained at the rate shown (inner fetch answers at once); wakeups = timer ` +
      `firings from stats(); waiters = n - burst (the calls that had to wait); peak timers = most 'Timeout' handles seen ` +
      `while draining (sampled every ~5 ms); wall = from the end of the enqueue loop to the last admission; wall/ideal = wall / (waiters / perSecond)`,
    target: 'one timer per gate, at most one wake-up per admission',
    verdict: `${oneTimer && ratios.length && ratios.every((r) => r <= 1) ? 'met' : 'MISSED'} (wake-ups per waiter ` +
      `${ratios.map((r) => fix(r, 3)).join(', ')}; peak timers ${drains.map((d) => d.peakTimers ?? '-').join(', ')})`,
    head: ['variant', 'n', 'rate', 'outcomes', 'admitted', 'wakeups', 'wakeups/admitted', 'wakeups/waiter', 'peak timers', 'wall (s)', 'wall/ideal'],
    rows: drains.map((d) => d.row),
  }];
}

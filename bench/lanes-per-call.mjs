// A new lane() per call, as an app that makes one per request would (issue #50 asks that a lane
// nobody holds and nothing waits in cost nothing): 40,000 calls one after another through a stub
// inner fetch (no network), each on a lane made for it, beside the same calls on one lane made
// once; the event loop gets a turn every 100 calls, as a server's does between requests (lanes are
// let go when the garbage collector finalises them). Each way in a fresh process; per 10,000
// calls: wasm memory (it never shrinks: the peak so far) and microseconds per call over those
// 10,000. `node bench/run.mjs --only lanes-per-call` writes its table.
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { fix, loadPkg } from './lib/util.mjs';

const CALLS = 40_000;
const STEP = 10_000;

async function measure(perCall) {
  const { createFetch, wasmMemoryBytes } = await loadPkg();
  const fetch = async () => new Response('{}');
  const f = createFetch({ fetch, rate: { burst: 1e6, perSecond: 1e9 }, threads: false });
  const once = f.lane({ weight: 1 });
  const marks = [];
  let last = performance.now();
  for (let i = 1; i <= CALLS; i++) {
    const lane = perCall ? f.lane({ weight: 1 }) : once;
    const r = await lane('http://127.0.0.1:9/v1/events/e1/odds/snapshot', { headers: { 'X-API-Key': 'bench-lanes-per-call' } });
    await r.text();
    if (i % 100 === 0) await new Promise((resolve) => setImmediate(resolve));
    if (i % STEP === 0) {
      const now = performance.now();
      marks.push({ calls: i, wasmMb: wasmMemoryBytes() / 1e6, usPerCall: ((now - last) * 1000) / STEP });
      last = now;
    }
  }
  return marks;
}

function inChild(perCall) {
  return new Promise((resolve, reject) => {
    const child = fork(fileURLToPath(import.meta.url), ['--child', perCall ? 'per-call' : 'once'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    child.on('message', resolve);
    child.on('exit', (code) => code && reject(new Error(`lanes per call: exited with ${code}`)));
  });
}

export async function run() {
  const perCall = await inChild(true);
  const once = await inChild(false);
  const rows = perCall.map((m, i) => [m.calls.toLocaleString('en-US'), fix(m.wasmMb, 1), fix(once[i].wasmMb, 1), fix(m.usPerCall, 0), fix(once[i].usPerCall, 0)]);
  const [second, last, one] = [perCall[1], perCall.at(-1), once.at(-1)];
  const growth = last.usPerCall / second.usPerCall;
  const held = last.wasmMb - one.wasmMb;
  const verdict = (ok) => (ok ? 'met' : 'MISSED');
  return [{
    id: 'lanes-per-call',
    title: 'A lane per call: 40,000 calls',
    what: 'one wrapper, a stub inner fetch (no network), 40,000 calls one after another, each on a lane() made for it, beside the ' +
      'same calls on one lane made once, each way in a fresh process; the event loop gets a turn every 100 calls; per 10,000 calls ' +
      'the wasm memory (the peak so far: it never shrinks) and microseconds per call over those 10,000',
    target: 'a lane nobody holds and nothing waits in costs nothing (issue #50): with a lane per call, the CPU per call over the last 10,000 calls at most 1.1 x that over the second 10,000 (no growth with the lanes made before), and wasm memory within 16 MB of one lane\'s',
    verdict: `CPU ${verdict(growth <= 1.1)} (${fix(growth, 2)} x; ${fix(last.usPerCall / one.usPerCall, 2)} x one lane's, making the lane included); ` +
      `memory ${verdict(held <= 16)} (wasm +${fix(held, 1)} MB: a lane let go is freed when the garbage collector finalises its function, and the wasm memory it holds does not hasten that)`,
    head: ['calls', 'wasm MB, a lane per call', 'wasm MB, one lane', 'us per call, a lane per call', 'us per call, one lane'],
    rows,
  }];
}

if (process.argv[2] === '--child') {
  const marks = await measure(process.argv[3] === 'per-call');
  process.send(marks, () => process.disconnect());
}

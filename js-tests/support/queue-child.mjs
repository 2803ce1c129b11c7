// Child process for node20-crash.test.mjs: queues many calls on one gate from one hot loop, as
// a user's `Array.from({ length: n }, () => fetchImpl(url, init))` does, and prints what settled.
// argv: n, then `from` (Array.from) or `deopt` (a getter on init.headers deoptimises the hot
// caller while the call into the wasm module is running).
import { createFetch } from '../../pkg/index.js';

const [n, how] = [Number(process.argv[2]), process.argv[3]];
const url = 'http://127.0.0.1:9/v1/events/e1/odds/snapshot'; // never contacted
const response = new Response('{}');

if (how === 'from') {
  // A burst of 100: all but the first 100 calls queue. With a bucket of one, a token every
  // 10 us and timers of a millisecond, the queue would go at one call a timer (10 to 30 s here
  // on Node 24, idle between timers).
  const fetchImpl = createFetch({ rate: { burst: 100, perSecond: 1e5 }, fetch: async () => response });
  const calls = Array.from({ length: n }, () => fetchImpl(url, { headers: { 'X-API-Key': 'stress' } }));
  const settled = await Promise.allSettled(calls);
  console.log(JSON.stringify({ settled: settled.length, fulfilled: settled.filter((s) => s.status === 'fulfilled').length }));
} else {
  const fetchImpl = createFetch({ rate: { burst: 1e9, perSecond: 1e9 }, retry: false, fetch: () => response });
  globalThis.oddsGateMode = 1;
  let flip = false;
  const headers = { 'X-API-Key': 'deopt' };
  // Changing a global the optimised caller depends on deoptimises it lazily, mid-call.
  const init = { get headers() { if (flip) { flip = false; globalThis.oddsGateMode = 2; } return headers; } };
  const hot = () => (globalThis.oddsGateMode === 1 ? fetchImpl(url, init) : null);
  let calls = 0;
  for (let i = 0; i < n; i++) {
    if (i === n - 10) flip = true;
    if (hot()) calls++;
  }
  console.log(JSON.stringify({ calls, mode: globalThis.oddsGateMode }));
}

// A process of its own whose 4 worker threads share one cache through 64 KiB (cache.test.mjs):
// the threads' shared memory is made here, so no other test's cache sized its ring. Each thread
// gets 16 URLs of its own, one at a time, in rounds (64 in all, 6 KB each); then thread 0 asks for all 64:
// its own, then the others', each newest first; every answer a 200. Prints { first, second, ring, bodiesMatch } as one JSON line.
//   node ring-scenario.mjs BASE_URL API_KEY
import { getEnvironmentData } from 'node:worker_threads';
import { SHARED_MEMORY } from './shared-memory-name.mjs';
import { group, threadMember } from './cache-group.mjs';
// The main thread makes the shared memory the workers inherit.
import '../../pkg/index.js';

const [baseUrl, apiKey] = process.argv.slice(2);
const THREADS = 4;
const EACH = 16;
const url = (n) => `${baseUrl}/events/e${n}/odds/snapshot`;

const g = await group(threadMember, THREADS, { rate: { burst: 64, perSecond: 64 }, cache: { maxBytes: 65_536 } });
const got = new Map();
const first = [];
const ask = async (m, n) => {
  const reply = await m.ask({ op: 'get', url: url(n), apiKey, n: 1 });
  if (reply.error !== undefined || reply.statuses[0] !== 200) throw new Error(`e${n}: ${reply.error ?? reply.statuses[0]}`);
  return reply;
};
// In rounds, so the last round's entries are the last put.
for (let i = 0; i < EACH; i++) {
  await Promise.all(g.members.map(async (m, t) => {
    const n = t * EACH + i;
    const reply = await ask(m, n);
    got.set(n, reply.bodies[0]);
    first.push(reply.marks[0]);
  }));
}
// Its own first, then the others', each newest first: a thread that kept copies of its own
// beside the threads' would answer ten of each.
const order = [];
for (let t = 0; t < THREADS; t++) for (let i = EACH - 1; i >= 0; i--) order.push(t * EACH + i);
const second = [];
let bodiesMatch = true;
for (const n of order) {
  const reply = await ask(g.members[0], n);
  second.push(reply.marks[0]);
  // What memory answers is the body first fetched (a new request may bring a newer one).
  if (reply.marks[0] !== null) bodiesMatch &&= reply.bodies[0] === got.get(n);
}
// The ring's buffer as the threads share it (this thread made the shared memory they found).
const [, ring] = getEnvironmentData(SHARED_MEMORY) ?? [];
await g.quit();
process.stdout.write(`${JSON.stringify({ first, second, ring: ring?.byteLength ?? -1, bodiesMatch })}\n`);

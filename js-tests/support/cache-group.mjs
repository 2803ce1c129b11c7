// A group sharing one cache (js-tests/cache*.test.mjs): processes through a real redis-server,
// or worker threads of this process (support/cache-child.mjs), each answering commands in turn.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { Worker } from 'node:worker_threads';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const CHILD = new URL('./cache-child.mjs', import.meta.url);

function member(send, onReply, end) {
  const queue = [];
  onReply((reply) => queue.shift()?.(reply));
  const ready = new Promise((resolve) => queue.push(resolve));
  const ask = (command) => new Promise((resolve) => {
    queue.push(resolve);
    send(command);
  });
  return { ready, ask, end };
}

export function processMember(job) {
  const proc = spawn(process.execPath, [CHILD.pathname, JSON.stringify(job)], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: proc.stdout });
  const exited = new Promise((resolve) => proc.once('exit', resolve));
  const end = () => (proc.kill(), exited);
  return member((c) => proc.stdin.write(`${JSON.stringify(c)}\n`), (on) => lines.on('line', (l) => on(JSON.parse(l))), end);
}

export function threadMember(job) {
  const worker = new Worker(CHILD, { workerData: job });
  return member((c) => worker.postMessage(c), (on) => worker.on('message', on), () => worker.terminate());
}

export async function group(make, n, job) {
  const members = Array.from({ length: n }, () => make(job));
  await Promise.all(members.map((m) => m.ready));
  const all = (command) => Promise.all(members.map((m) => m.ask(command)));
  // Quit closes each member's Redis client; then the member goes.
  const quit = () => Promise.all(members.map((m) => Promise.race([m.ask({ op: 'quit' }), sleep(2_000)]).then(m.end)));
  return { all, quit, members };
}


// A process that used the wrapper, and waited on its gate, exits on its own once idle: no
// timer, listener or handle is left behind.
import assert from 'node:assert/strict';
import test from 'node:test';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const pkg = fileURLToPath(new URL('../pkg/index.js', import.meta.url));

const child = `
import { createFetch } from ${JSON.stringify(pkg)};
import { startFakeOddsApi } from ${JSON.stringify(fileURLToPath(new URL('./support/fake-odds-api.mjs', import.meta.url)))};
const api = await startFakeOddsApi({ burst: 1, perSecond: 10 });
const fetchImpl = createFetch({ rate: { burst: 1, perSecond: 10 } });
const signal = new AbortController().signal; // a long-lived signal must not hold the process
const headers = { 'X-API-Key': 'idle-exit' };
const calls = [1, 2, 3].map((n) => fetchImpl(api.baseUrl + '/events/' + n + '/odds/snapshot', { headers, signal }));
if (!fetchImpl.stats().gates[0].timerArmed) throw new Error('expected callers to wait');
for (const response of await Promise.all(calls)) await response.text();
await api.close();
console.log(JSON.stringify(fetchImpl.stats()));
`;

test('a child process that used the wrapper exits on its own when idle', async () => {
  const proc = spawn(process.execPath, ['--input-type=module', '-e', child], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  proc.stdout.on('data', (d) => { out += d; });
  // A generous bound: this only catches a process held open for good, never measures speed.
  const killer = setTimeout(() => proc.kill('SIGKILL'), 20_000);
  const [code, signal] = await new Promise((resolve) => proc.on('exit', (...a) => resolve(a)));
  clearTimeout(killer);
  assert.equal(signal, null, 'the child had to be killed: something kept it alive');
  assert.equal(code, 0);
  const stats = JSON.parse(out);
  assert.equal(stats.admitted, 3);
  assert.equal(stats.gates[0].timerArmed, false);
});

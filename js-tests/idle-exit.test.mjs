// A process that used the wrapper, and waited on its gate, exits on its own once idle: no
// timer, listener or handle is left behind.
import assert from 'node:assert/strict';
import test from 'node:test';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const child = fileURLToPath(new URL('./support/idle-child.mjs', import.meta.url));

test('a child process that used the wrapper exits on its own when idle', async () => {
  const proc = spawn(process.execPath, [child], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  proc.stdout.on('data', (d) => { out += d; });
  // A generous bound: this only catches a process held open for good, never measures speed.
  const killer = setTimeout(() => proc.kill('SIGKILL'), 20_000);
  const [code, signal] = await new Promise((resolve) => proc.on('exit', (...a) => resolve(a)));
  clearTimeout(killer);
  assert.equal(signal, null, 'the child had to be killed: something kept it alive');
  assert.equal(code, 0);
  const [stats, atExit] = out.trim().split('\n').map((line) => JSON.parse(line));
  assert.equal(stats.admitted, 3);
  assert.equal(stats.gates[0].timerArmed, false);
  assert.deepEqual(atExit, { gatesAtExit: 1 }, 'the process waited for a sweep before it exited');
});

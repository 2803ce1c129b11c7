// The simulator is a second module (#38): the main module, which every import compiles, holds
// none of it, and only simulate() or new Gate() loads it (pkg-template/sim.js).
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const exportsOf = async (path) =>
  WebAssembly.Module.exports(new WebAssembly.Module(await readFile(new URL(path, import.meta.url))))
    .map((e) => e.name);
const simPath = fileURLToPath(new URL('../pkg/sim/odds_gate_sim.cjs', import.meta.url));
// createRequire's cache is the process's one CommonJS cache, where sim.js's require lands.
const loaded = () => simPath in createRequire(import.meta.url).cache;

test('the main module exports no simulator, the second nothing of the fetch path', async () => {
  const main = await exportsOf('../pkg/odds_gate_bg.wasm');
  assert.ok(main.includes('transport_new'), 'the main module is the fetch path');
  assert.deepEqual(main.filter((name) => /simulate|gate_/.test(name)), []);
  const sim = await exportsOf('../pkg/sim/odds_gate_sim_bg.wasm');
  assert.ok(sim.includes('simulate') && sim.includes('gate_new'));
  assert.deepEqual(sim.filter((name) => /transport|gatedFunction|redisStore|registerErrors/.test(name)), []);
});

test('importing the package and fetching never loads the simulator; new Gate() does', async () => {
  const pkg = await import('../pkg/index.js');
  const fetchImpl = pkg.createFetch({
    rate: { burst: 1, perSecond: 1 },
    fetch: async () => new Response('{}', { status: 200 }),
  });
  assert.equal((await fetchImpl('http://127.0.0.1:1/v1/usage')).status, 200);
  assert.equal(loaded(), false, 'the simulator was loaded without being used');
  const gate = new pkg.Gate({ burst: 1, perSecond: 1 });
  assert.ok(loaded(), 'new Gate() loads the simulator');
  assert.ok(gate instanceof pkg.Gate);
  assert.equal(pkg.simulate({ shared: true }).completed, 8);
});

// The package in the edge runtimes, as their users get it: the tarball installed in a temp
// project, its export conditions resolved by Node's own resolver, and the worker bundled by
// esbuild the way Wrangler bundles for Cloudflare Workers (conditions `workerd`, `worker`; the
// wasm left a module of its own) and Vercel bundles for its edge (`edge-light`; `?module` a
// compiled WebAssembly.Module). The Workers bundle runs in Cloudflare's workerd (miniflare), the
// Vercel one in Vercel's edge-runtime, each against the fake Odds API on 127.0.0.1.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import * as esbuild from 'esbuild';
import { Miniflare } from 'miniflare';
import { EdgeRuntime } from 'edge-runtime';
import { startFakeOddsApi } from './support/fake-odds-api.mjs';
import { createTempProject, childEnv, run, show } from './support/temp-project.mjs';
import { runEdgeFleet } from './support/edge-fleet.mjs';

const SERVER = { burst: 2, perSecond: 2, retryAfterSeconds: 1 };
let project;

before(async () => {
  project = await createTempProject('odds-gate-edge-');
});
after(() => project?.cleanup());

// The worker: one wrapper for the isolate, as a Worker keeps it in module scope. A request
// `?n=8` makes 8 calls at once (the demo's eight workers), `&cache=1` the same GET through the
// cache; it answers each call's status (and whether it joined another's request) and the
// wrapper's figures.
const WORKER = `
import { createFetch } from 'odds-gate';
const fetchImpl = createFetch({ rate: { burst: ${SERVER.burst}, perSecond: ${SERVER.perSecond} } });
const cached = createFetch({ rate: { burst: ${SERVER.burst}, perSecond: ${SERVER.perSecond} }, cache: true });
export async function handle(request) {
  const q = new URL(request.url).searchParams;
  const f = q.get('cache') ? cached : fetchImpl;
  const url = q.get('api') + '/events/' + (q.get('cache') ? 'same-' : 'e') + q.get('tag') + '/odds/snapshot';
  const started = Date.now();
  const answers = await Promise.all(Array.from({ length: Number(q.get('n')) }, (_, i) =>
    f(q.get('cache') ? url : url + '?i=' + i, { headers: { 'x-api-key': 'edge-key' } }).then(
      async (r) => { await r.text(); return r.headers.get('x-odds-gate-cache') === 'coalesced' ? r.status + ' coalesced' : r.status; },
      (e) => e.name)));
  const s = f.stats();
  return Response.json({ answers, ms: Date.now() - started, waiting: s.gates.reduce((n, g) => n + g.waiting, 0), describe: f.describe().text });
}
`;

async function bundle(conditions, entry, plugins = []) {
  writeFileSync(join(project.project, 'worker.js'), entry);
  const out = await esbuild.build({
    entryPoints: [join(project.project, 'worker.js')],
    bundle: true, write: false, format: 'esm', platform: 'neutral', conditions, mainFields: ['module', 'main'],
    external: ['*.wasm'], plugins, logLevel: 'silent',
  });
  return out.outputFiles[0].text;
}

const resolved = async (conditions) => {
  const args = [...conditions.map((c) => `--conditions=${c}`), '--input-type=module', '-e', "console.log(import.meta.resolve('odds-gate'))"];
  const r = await run(process.execPath, args, { cwd: project.project, env: childEnv() });
  assert.equal(r.code, 0, show(r));
  return r.stdout.trim().replace(/^.*\/node_modules\/odds-gate\//, '');
};

test('the export conditions give workerd and worker the edge entry, edge-light its ?module twin, everything else index.js', async () => {
  assert.equal(await resolved(['workerd']), 'edge.js');
  assert.equal(await resolved(['worker']), 'edge.js');
  assert.equal(await resolved(['edge-light']), 'light.js');
  assert.equal(await resolved([]), 'index.js');
  for (const file of ['edge.js', 'light.js', 'odds_gate_edge.js', 'face.js', 'edge/worker_threads.js', 'edge/crypto.js']) {
    assert.ok(project.packed.some((f) => f.path === file), `${file} is in the tarball`);
  }
  const glue = readFileSync(join(project.installed, 'odds_gate_edge.js'), 'utf8');
  assert.doesNotMatch(glue, /from 'node:|readFileSync|new WebAssembly\.Module\(/, 'no Node builtin, no file, no compile from bytes');
});

test('in workerd: the eight workers make 8 attempts and no 429, requests at once share the gate, and the cache sends one request for many', async () => {
  const api = await startFakeOddsApi(SERVER);
  const script = await bundle(['workerd', 'worker'], `${WORKER}\nexport default { fetch: handle };\n`);
  const mf = new Miniflare({
    modules: [
      { type: 'ESModule', path: 'worker.js', contents: script },
      { type: 'CompiledWasm', path: 'odds_gate_bg.wasm', contents: readFileSync(join(project.installed, 'odds_gate_bg.wasm')) },
    ],
    compatibilityDate: '2025-01-01',
  });
  try {
    const ask = async (query) => (await mf.dispatchFetch(`http://worker/?api=${encodeURIComponent(api.baseUrl)}&${query}`)).json();
    const eight = await ask('n=8&tag=1');
    assert.deepEqual(eight.answers, Array(8).fill(200));
    assert.deepEqual([api.stats().attempts, api.stats().throttled], [8, 0]);
    // burst 2 at 2/s: the eighth goes at 3 s.
    assert.ok(eight.ms >= 2_900 && eight.ms < 6_000, `${eight.ms} ms`);
    assert.match(eight.describe, /threads: false/, 'no threads on the edge, and describe() says so');
    // Two requests at once on the isolate's one gate: neither is stranded when the other ends
    // first (each waiting call keeps a timer of its own request), and they share the allowance.
    const [one, more] = await Promise.all([ask('n=1&tag=2'), ask('n=4&tag=3')]);
    assert.deepEqual([...one.answers, ...more.answers], Array(5).fill(200));
    assert.deepEqual([api.stats().attempts, api.stats().throttled], [13, 0]);
    assert.equal(more.waiting, 0, 'nothing left waiting when the last request answers');
    const cached = await ask('n=8&cache=1&tag=4');
    assert.deepEqual(cached.answers, [200, ...Array(7).fill('200 coalesced')]);
    assert.equal(api.stats().attempts, 14, 'eight identical GETs in one request: one request sent');
    // Three requests at once for one snapshot: one request, the others' copies made in their own
    // requests (a Response made in one request cannot be read in another's).
    const three = await Promise.all([1, 2, 3].map(() => ask('n=1&cache=1&tag=5')));
    assert.deepEqual(three.flatMap((r) => r.answers).sort(), [200, '200 coalesced', '200 coalesced']);
    assert.equal(api.stats().attempts, 15, 'one request for three requests');
  } finally {
    await mf.dispose();
    await api.close();
  }
});

test("in Vercel's edge-runtime: the eight workers make 8 attempts and no 429", async () => {
  const api = await startFakeOddsApi(SERVER);
  // As Vercel's bundler does: `?module` is the compiled module, bound where the code runs.
  const wasmModule = {
    name: 'wasm-module',
    setup(build) {
      build.onResolve({ filter: /\.wasm\?module$/ }, (args) => ({ path: args.path, namespace: 'wasm' }));
      build.onLoad({ filter: /.*/, namespace: 'wasm' }, () => ({ contents: 'export default globalThis.__oddsGateWasm;', loader: 'js' }));
    },
  };
  const script = await bundle(['edge-light'], `${WORKER}\nglobalThis.handle = handle;\n`, [wasmModule]);
  const compiled = new WebAssembly.Module(readFileSync(join(project.installed, 'odds_gate_bg.wasm')));
  const runtime = new EdgeRuntime({ extend: (context) => Object.assign(context, { __oddsGateWasm: compiled }) });
  try {
    // An ES module bundle made a script: the runtime evaluates scripts.
    runtime.evaluate(script.replace(/^export\s*\{[^}]*\};?\s*$/m, ''));
    const url = `http://edge/?api=${encodeURIComponent(api.baseUrl)}&n=8&tag=1`;
    const answer = await runtime.evaluate(`handle(new Request(${JSON.stringify(url)})).then((r) => r.json())`);
    assert.deepEqual(answer.answers, Array(8).fill(200));
    assert.deepEqual([api.stats().attempts, api.stats().throttled], [8, 0]);
    assert.ok(answer.ms >= 2_900 && answer.ms < 6_000, `${answer.ms} ms`);
  } finally {
    await api.close();
  }
});

// Isolates share one allowance through Redis over HTTP: an @upstash/redis client (each isolate
// its own, as each Worker makes its own) to a REST endpoint in front of a real redis-server.
test('in workerd: 4 isolates share one allowance through @upstash/redis over HTTP: 64 calls, no 429', async () => {
  const fleet = await runEdgeFleet({ project: project.project });
  console.log(`4 isolates x 16 calls through @upstash/redis over HTTP (burst 4, 16/s): ${fleet.attempts} attempts, ${fleet.throttled} 429s, ${fleet.wall.toFixed(2)} s against a floor of ${fleet.floor} s (${(fleet.wall / fleet.floor).toFixed(3)}x), ${fleet.storeRequests} store requests`);
  assert.deepEqual(fleet.answers, Array(64).fill(200));
  assert.deepEqual([fleet.attempts, fleet.throttled], [64, 0]);
  assert.match(fleet.store, /redis/i);
  // Wiring in real time, with a wide bound (bench/edge.mjs measures it): isolates at the whole
  // allowance each would collect 429s, not time.
  assert.ok(fleet.wall <= fleet.floor * 1.5, `${fleet.wall.toFixed(2)} s, floor ${fleet.floor} s`);
});

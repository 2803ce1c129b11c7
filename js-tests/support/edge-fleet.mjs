// Isolates that share one allowance through Redis over HTTP, in Cloudflare's workerd: each a
// Miniflare of its own running a worker (bundled by esbuild from the package in `modules`, as
// Wrangler bundles) whose one wrapper keeps its gates in Redis through an @upstash/redis client,
// to a REST endpoint in front of a real redis-server. edge.test.mjs checks the wiring with it and
// bench/edge.mjs measures it.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as esbuild from 'esbuild';
import { Miniflare } from 'miniflare';
import { startFakeOddsApi } from './fake-odds-api.mjs';
import { startRedis } from './redis-server.mjs';
import { startUpstashRest } from './upstash-rest.mjs';

const REPO_MODULES = new URL('../../node_modules', import.meta.url).pathname;

const worker = ({ burst, perSecond }) => `
import { createFetch, redisStore } from 'odds-gate';
import { Redis } from '@upstash/redis';
let fetchImpl;
export default {
  async fetch(request) {
    const q = new URL(request.url).searchParams;
    const client = new Redis({ url: q.get('store'), token: q.get('token'), automaticDeserialization: false, enableTelemetry: false });
    fetchImpl ??= createFetch({ rate: { burst: ${burst}, perSecond: ${perSecond} }, store: redisStore(client, { prefix: q.get('prefix') }) });
    const answers = await Promise.all(Array.from({ length: Number(q.get('n')) }, (_, i) =>
      fetchImpl(q.get('api') + '/events/' + q.get('tag') + '-' + i + '/odds/snapshot', { headers: { 'x-api-key': 'fleet-key' } })
        .then(async (r) => { await r.text(); return r.status; }, (e) => e.name + ': ' + e.message)));
    return Response.json({ answers, store: fetchImpl.describe().store });
  },
};
`;

/**
 * `isolates` isolates make `calls` calls each at once on one key (the server's allowance
 * `rate`, the gates told it): `{ answers, attempts, throttled, wall (s), floor (s), storeRequests }`.
 * `project`: a folder whose node_modules has the package as `odds-gate`.
 */
export async function runEdgeFleet({ project, isolates = 4, calls = 16, rate = { burst: 4, perSecond: 16 } }) {
  const redis = await startRedis();
  const rest = await startUpstashRest(redis.port);
  const api = await startFakeOddsApi({ ...rate, retryAfterSeconds: 1 });
  const out = await esbuild.build({
    stdin: { contents: worker(rate), resolveDir: project, loader: 'js' },
    bundle: true, write: false, format: 'esm', platform: 'neutral', conditions: ['workerd', 'worker'],
    mainFields: ['module', 'main'], nodePaths: [REPO_MODULES], external: ['*.wasm'], logLevel: 'silent',
  });
  const wasm = readFileSync(join(project, 'node_modules', 'odds-gate', 'odds_gate_bg.wasm'));
  const all = Array.from({ length: isolates }, () => new Miniflare({
    modules: [{ type: 'ESModule', path: 'worker.js', contents: out.outputFiles[0].text }, { type: 'CompiledWasm', path: 'odds_gate_bg.wasm', contents: wasm }],
    compatibilityDate: '2025-01-01',
  }));
  try {
    await Promise.all(all.map((mf) => mf.ready));
    const query = (i) => new URLSearchParams({ api: api.baseUrl, store: rest.url, token: rest.token, prefix: 'edge-fleet', n: String(calls), tag: `i${i}` });
    const started = performance.now();
    const answered = await Promise.all(all.map(async (mf, i) => (await mf.dispatchFetch(`http://worker/?${query(i)}`)).json()));
    const wall = (performance.now() - started) / 1000;
    const { attempts, throttled } = api.stats();
    return {
      answers: answered.flatMap((a) => a.answers),
      store: answered[0].store,
      attempts,
      throttled,
      wall,
      floor: (isolates * calls - rate.burst) / rate.perSecond,
      storeRequests: rest.stats().requests,
    };
  } finally {
    await Promise.all(all.map((mf) => mf.dispose()));
    await api.close();
    await rest.close();
    await redis.stop();
  }
}

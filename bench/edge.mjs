// Cold start on the edge: from a new isolate to its first answered call, in Cloudflare's workerd
// (miniflare: a new workerd with the worker each sample, so its process start is in every row)
// and in Vercel's edge-runtime (a new context each sample, the wasm compiled once, as Vercel
// compiles it at deploy). Each contender is a worker bundled by esbuild (as Wrangler and Vercel
// bundle) that makes its limiter and sends one GET to a local server, body read; "adds" is its
// median less the raw fetch's, over interleaved rounds. @upstash/ratelimit asks Redis through a
// REST endpoint on 127.0.0.1 in front of a real redis-server, as it must; so does the row of
// odds-gate with a store. Then a fleet: 4 workerd isolates sharing one key through that store.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import http from 'node:http';
import * as esbuild from 'esbuild';
import { Miniflare } from 'miniflare';
import { EdgeRuntime } from 'edge-runtime';
import { loadPkg, median, fix, rotate } from './lib/util.mjs';
import { startRedis } from '../js-tests/support/redis-server.mjs';
import { startUpstashRest } from '../js-tests/support/upstash-rest.mjs';
import { runEdgeFleet } from '../js-tests/support/edge-fleet.mjs';

const PKG = new URL('../pkg/', import.meta.url).pathname;
const RATE = 'burst: 10, perSecond: 5';
const upstash = "new Redis({ url: q.get('store'), token: q.get('token'), automaticDeserialization: false, enableTelemetry: false })";
// Each contender: its imports and limiter (made once, in module scope, as a worker keeps it),
// then how it sends the one GET (`url`).
const CONTENDERS = {
  'raw fetch': ['', 'fetch(url)'],
  'odds-gate': [`import { createFetch } from 'odds-gate';\nconst gated = createFetch({ rate: { ${RATE} } });`, 'gated(url)'],
  'odds-gate + store over HTTP': [`import { createFetch, redisStore } from 'odds-gate';\nimport { Redis } from '@upstash/redis';\nlet gated;`,
    `(gated ??= createFetch({ rate: { ${RATE} }, store: redisStore(${upstash}) }))(url)`],
  // Made at the first request: Workers refuse its timer in module scope.
  bottleneck: ["import Bottleneck from 'bottleneck';\nlet limiter;",
    '(limiter ??= new Bottleneck({ reservoir: 10, reservoirRefreshAmount: 10, reservoirRefreshInterval: 2000, minTime: 200 })).schedule(() => fetch(url))'],
  '@upstash/ratelimit': ["import { Ratelimit } from '@upstash/ratelimit';\nimport { Redis } from '@upstash/redis';\nlet limiter;",
    `(limiter ??= new Ratelimit({ redis: ${upstash}, limiter: Ratelimit.tokenBucket(5, '1 s', 10), ephemeralCache: new Map() })).limit('key').then(() => fetch(url))`],
};
const NAMES = Object.keys(CONTENDERS);

const source = ([imports, send]) => `${imports}
export async function handle(request) {
  const q = new URL(request.url).searchParams;
  const url = q.get('url');
  const response = await ${send};
  await response.text();
  return new Response(String(response.status));
}`;

// A project whose node_modules has the built package under its name (so its export conditions
// pick the entry); the other packages are the repository's.
const project = mkdtempSync(join(tmpdir(), 'odds-gate-edge-bench-'));
mkdirSync(join(project, 'node_modules'));
symlinkSync(PKG, join(project, 'node_modules', 'odds-gate'), 'dir');

async function bundle(name, conditions, entry, plugins = []) {
  const out = await esbuild.build({
    stdin: { contents: `${source(CONTENDERS[name])}\n${entry}`, resolveDir: project, loader: 'js' },
    bundle: true, write: false, format: 'esm', platform: 'neutral', conditions, mainFields: ['module', 'main'],
    nodePaths: [new URL('../node_modules', import.meta.url).pathname], external: ['*.wasm'], plugins, logLevel: 'silent',
  });
  return out.outputFiles[0].text;
}

// Vercel's `?module`: the compiled module, bound where the code runs.
const wasmGlobal = {
  name: 'wasm-module',
  setup(build) {
    build.onResolve({ filter: /\.wasm\?module$/ }, (args) => ({ path: args.path, namespace: 'wasm' }));
    build.onLoad({ filter: /.*/, namespace: 'wasm' }, () => ({ contents: 'export default globalThis.__oddsGateWasm;', loader: 'js' }));
  },
};

export async function run({ quick }) {
  await loadPkg(); // waits out a concurrent build
  const rounds = quick ? 3 : 21;
  const server = http.createServer((req, res) => res.end('{"ok":true}'));
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const redis = await startRedis();
  const rest = await startUpstashRest(redis.port);
  const query = new URLSearchParams({ url: `http://127.0.0.1:${server.address().port}/v1/events/e1/odds/snapshot`, store: rest.url, token: rest.token });
  const wasm = readFileSync(`${PKG}odds_gate_bg.wasm`);
  const compiled = new WebAssembly.Module(wasm);
  const runtimes = {
    workerd: {
      build: (name) => bundle(name, ['workerd', 'worker'], 'export default { fetch: handle };'),
      async sample(script) {
        const started = performance.now();
        const mf = new Miniflare({
          modules: [{ type: 'ESModule', path: 'worker.js', contents: script }, { type: 'CompiledWasm', path: 'odds_gate_bg.wasm', contents: wasm }],
          compatibilityDate: '2025-01-01',
        });
        try {
          const answer = await (await mf.dispatchFetch(`http://worker/?${query}`)).text();
          if (answer !== '200') throw new Error(`answered ${answer}`);
          return performance.now() - started;
        } finally {
          await mf.dispose();
        }
      },
    },
    'edge-runtime': {
      build: (name) => bundle(name, ['edge-light'], 'globalThis.handle = handle;', [wasmGlobal]),
      async sample(script) {
        const started = performance.now();
        // The context's timers, cleared after the sample: an isolate that is gone runs none
        // (here they are the host's: bottleneck's refill interval would run on for ever).
        const timers = [];
        const runtime = new EdgeRuntime({
          extend: (context) => {
            for (const [set, clear] of [['setTimeout', 'clearTimeout'], ['setInterval', 'clearInterval']]) {
              const made = context[set];
              context[set] = (...args) => {
                const id = made(...args);
                timers.push(() => context[clear](id));
                return id;
              };
            }
            return Object.assign(context, { __oddsGateWasm: compiled });
          },
        });
        try {
          runtime.evaluate(script.replace(/^export\s*\{[^}]*\};?\s*$/m, ''));
          const answer = await runtime.evaluate(`handle(new Request(${JSON.stringify(`http://edge/?${query}`)})).then((r) => r.text())`);
          if (answer !== '200') throw new Error(`answered ${answer}`);
          return performance.now() - started;
        } finally {
          for (const clear of timers) clear();
        }
      },
    },
  };
  const tables = [];
  try {
    for (const [runtime, { build, sample }] of Object.entries(runtimes)) {
      const scripts = Object.fromEntries(await Promise.all(NAMES.map(async (n) => [n, await build(n)])));
      const times = Object.fromEntries(NAMES.map((n) => [n, []]));
      for (let r = 0; r < rounds; r++) {
        for (const name of rotate(NAMES, r)) times[name].push(await sample(scripts[name]));
      }
      const med = (name) => median(times[name]);
      const adds = (name) => med(name) - med('raw fetch');
      const ours = adds('odds-gate');
      const theirs = Math.min(adds('bottleneck'), adds('@upstash/ratelimit'));
      tables.push({
        id: `edge-${runtime}`,
        title: `Cold start on the edge: a new isolate to its first answered call (${runtime})`,
        what: `${rounds} interleaved rounds, medians, ms: a new ${runtime === 'workerd' ? 'workerd process with the worker (miniflare)' : 'edge-runtime context'}, the bundle's module evaluated, its limiter made, one GET to a local server, body read; "adds" is the median less raw fetch's; the bundles' sizes are esbuild's, the wasm apart`,
        target: 'odds-gate adds no more than bottleneck and @upstash/ratelimit',
        verdict: `${ours <= theirs ? 'met' : 'MISSED'} (odds-gate adds ${fix(ours, 1)} ms; bottleneck ${fix(adds('bottleneck'), 1)}, @upstash/ratelimit ${fix(adds('@upstash/ratelimit'), 1)})`,
        head: ['contender', 'median', 'adds', 'bundle (KB)'],
        rows: NAMES.map((name) => [name, fix(med(name), 1), name === 'raw fetch' ? '-' : fix(adds(name), 1), fix(scripts[name].length / 1000, 1)]),
      });
    }
    // The fleet: each run its own Redis, endpoint and fake API (js-tests/support/edge-fleet.mjs).
    const fleets = [];
    for (let r = 0; r < (quick ? 1 : 5); r++) fleets.push(await runEdgeFleet({ project }));
    const ratio = median(fleets.map((f) => f.wall / f.floor));
    const trips = median(fleets.map((f) => f.storeRequests / f.attempts));
    const throttled = fleets.reduce((n, f) => n + f.throttled, 0);
    const rows = fleets.map((f, i) => [String(i + 1), `${f.attempts}/${f.answers.filter((a) => a === 200).length}`, String(f.throttled), fix(f.wall, 2), fix(f.wall / f.floor, 3), fix(f.storeRequests / f.attempts, 2)]);
    tables.push({
      id: 'edge-fleet',
      title: 'A fleet of isolates: 4 in workerd share one key through @upstash/redis over HTTP',
      what: `${fleets.length} runs, each: 4 new workerd isolates (miniflare), 16 calls at once in each, one key at burst 4, 16/s (floor ${fleets[0].floor} s), their gates in a real redis-server through a REST endpoint on 127.0.0.1; wall from the four requests sent to the last answered; store requests are the endpoint's HTTP requests`,
      target: '0 429s, wall <= 1.05 x floor; one store round trip per admission at most',
      verdict: `${throttled === 0 && ratio <= 1.05 ? 'met' : 'MISSED'} (429s ${throttled}, median wall/floor ${fix(ratio, 3)}); round trips ${trips <= 1 ? 'met' : 'MISSED'} (median ${fix(trips, 2)} an admission)`,
      head: ['run', 'attempts/200s', '429s', 'wall (s)', 'wall/floor', 'store requests/admission'],
      rows,
    });
  } finally {
    rmSync(project, { recursive: true, force: true });
    server.close();
    await rest.close();
    await redis.stop();
  }
  return tables;
}

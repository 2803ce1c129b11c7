// An installable package: pkg/ packed with `npm pack` and installed from the tarball into a
// fresh project in os.tmpdir() (support/temp-project.mjs), then used only through what npm put
// in node_modules: the tarball's contents, `exports`/`main`/`types`/`bin`/`engines`, the types
// under `tsc --strict` from a consumer's project, and the shipped eight-worker demo.
import assert from 'node:assert/strict';
import { before, after, test } from 'node:test';
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join, posix, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createTempProject, demoRows, run, show, PKG, REPO } from './support/temp-project.mjs';

const TSC = join(REPO, 'node_modules', 'typescript', 'bin', 'tsc');
let project; // { dir, project, installed, tarball, packed, cleanup }

before(async () => { project = await createTempProject('odds-gate-package-'); });
after(() => project?.cleanup());

/** Every file under `dir`, as '/'-separated paths relative to `root`. */
function walk(dir, root = dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    return e.isDirectory() ? walk(path, root) : [relative(root, path).split('\\').join('/')];
  });
}

/** Runs `node <args>` inside the temp project. */
const node = (args, opts = {}) => run(process.execPath, args, { cwd: project.project, ...opts });

test('the tarball holds exactly what package.json `files` names, plus package.json', () => {
  const manifest = JSON.parse(readFileSync(join(PKG, 'package.json'), 'utf8'));
  // What `files` names, read from pkg/ itself: a folder entry means everything under it.
  const expected = new Set(['package.json']);
  for (const entry of manifest.files) {
    const path = join(PKG, entry);
    if (statSync(path).isDirectory()) for (const f of walk(path, PKG)) expected.add(f);
    else expected.add(entry);
  }
  const packed = project.packed.map((f) => f.path);
  assert.deepEqual([...packed].sort(), [...expected].sort());

  // The pieces a user needs, by name, and nothing of the build.
  for (const f of ['package.json', 'README.md', 'LICENSE', 'index.js', 'index.d.ts', 'errors.js', 'odds_gate.js',
    'odds_gate_bg.wasm', 'bin/odds-gate.js', 'bin/timeline-svg.js', 'demo/eight-workers.js',
    'demo/fake-odds-api.js', 'demo/sdk-client.js', 'demo/workers.js']) {
    assert.ok(packed.includes(f), `${f} is not in the tarball`);
  }
  // The bindings' snippets are folded into odds_gate.js (scripts/inline-snippets.mjs).
  assert.ok(!packed.some((f) => f.startsWith('snippets/')), 'wasm-bindgen snippets left unfolded in the tarball');
  for (const f of packed) assert.doesNotMatch(f, /^(src|target|tests|types|js-tests|node_modules)\//, f);
  assert.equal(project.packed.find((f) => f.path === 'bin/odds-gate.js').mode & 0o111, 0o111, 'bin/odds-gate.js is not executable');

  // npm install unpacked exactly that.
  assert.deepEqual(walk(project.installed).sort(), [...packed].sort());

  // Every relative import of a shipped module lands on a shipped file (not on something that
  // only exists in this repository, like ../js-tests/ or ../pkg-template/).
  const IMPORT = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)['"](\.{1,2}\/[^'"]+)['"]/g;
  for (const file of packed.filter((f) => /\.(m?js|d\.ts)$/.test(f))) {
    const source = readFileSync(join(project.installed, file), 'utf8');
    for (const [, spec] of source.matchAll(IMPORT)) {
      // A bundler's query (`?module`: Vercel's compiled wasm) names the file before it.
      const target = posix.normalize(posix.join(posix.dirname(file), spec.replace(/\?module$/, '')));
      assert.ok(packed.includes(target), `${file} imports ${spec}, which is not in the tarball`);
    }
  }
});

test('the package\'s README is the repository\'s, with the guide it links to (docs/)', () => {
  const packed = project.packed.map((f) => f.path);
  const same = (file) => assert.equal(readFileSync(join(project.installed, file), 'utf8'), readFileSync(join(REPO, file), 'utf8'),
    `the package's ${file} is not the repository's: scripts/build.sh copies it`);
  same('README.md');
  const guide = readdirSync(join(REPO, 'docs')).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`);
  assert.deepEqual(packed.filter((f) => f.startsWith('docs/')).sort(), guide, 'the package ships another guide than docs/*.md');
  for (const file of guide) same(file);
});

test('installed: `exports`, `main`, `types` and `engines` work from a consumer module', async () => {
  const manifest = JSON.parse(readFileSync(join(project.installed, 'package.json'), 'utf8'));
  assert.equal(manifest.engines?.node, '>=20');
  // The versions scripts/test.sh runs the wiring on (scripts/setup.sh pins their majors).
  assert.equal(manifest.engines?.bun, '>=1.4');
  assert.equal(manifest.engines?.deno, '>=2.9');
  // OpenTelemetry is for those who pass a `meter`: an optional peer, never installed with us
  // (the install above ran offline, so it would have failed to fetch it).
  assert.equal(manifest.peerDependenciesMeta?.['@opentelemetry/api']?.optional, true);
  assert.ok(manifest.peerDependencies['@opentelemetry/api']);
  assert.equal(manifest.dependencies, undefined);
  assert.ok(!existsSync(join(project.project, 'node_modules', '@opentelemetry')), 'npm installed @opentelemetry');
  assert.equal(manifest.type, 'module');
  // `main` and `types` are for tools that predate `exports`: they must name the same files.
  assert.equal(manifest.exports['.'].default, manifest.main);
  assert.equal(manifest.exports['.'].types, manifest.types);
  // The edge runtimes' conditions first (each with its own types: edge.test.mjs runs them), then
  // "types" before "default", or TypeScript would not see it.
  assert.deepEqual(Object.keys(manifest.exports['.']), ['workerd', 'worker', 'edge-light', 'types', 'default']);
  for (const edge of ['workerd', 'worker', 'edge-light']) assert.deepEqual(Object.keys(manifest.exports['.'][edge]), ['types', 'default'], edge);

  // A module of the consumer's own, resolved by Node from the project's node_modules.
  writeFileSync(join(project.project, 'consumer.mjs'), `
    import * as gate from 'odds-gate';
    const { default: manifest } = await import('odds-gate/package.json', { with: { type: 'json' } });
    const fetchImpl = gate.createFetch({ rate: { burst: 2, perSecond: 2 } });
    const sim = gate.simulate();
    const err = new gate.GateAbandonedError('gave up', { reason: 'attempts' });
    console.log(JSON.stringify({
      resolved: import.meta.resolve('odds-gate'),
      names: Object.keys(gate).sort(),
      kinds: Object.fromEntries(Object.entries(gate).map(([k, v]) => [k, typeof v])),
      version: manifest.version,
      describe: fetchImpl.describe().text.split('\\n')[0],
      stats: typeof fetchImpl.stats().admitted,
      sim: [sim.attempts, sim.throttled, sim.completed],
      gateAdmits: new gate.Gate({ burst: 1, perSecond: 1 }).admitAt(0),
      errors: [err instanceof gate.OddsGateError, err.name, err.reason, gate.OddsGateError.is(err)],
      store: typeof gate.redisStore,
    }));
  `);
  const r = await node(['consumer.mjs'], { timeoutMs: 60_000 });
  assert.equal(r.code, 0, show(r));
  const out = JSON.parse(r.stdout);
  assert.equal(out.resolved, pathToFileURL(join(project.installed, manifest.main)).href, 'odds-gate resolved to the installed copy');
  assert.deepEqual(out.names, ['Gate', 'GateAbandonedError', 'OddsGateError', 'QuotaExhaustedError', 'createFetch', 'redisStore', 'simulate']);
  for (const name of out.names) assert.equal(out.kinds[name], 'function', name);
  assert.equal(out.version, manifest.version);
  assert.equal(out.describe, 'odds-gate configuration');
  assert.equal(out.stats, 'number');
  assert.deepEqual(out.sim, [20, 12, 8]);
  assert.equal(out.gateAdmits, 0);
  assert.deepEqual(out.errors, [true, 'GateAbandonedError', 'attempts', true]);
});

test('npm publish --dry-run: the manifest needs no auto-correction', async () => {
  // npm 11 "corrects" a manifest at publish time, and drops a `bin` written as "./bin/x.js"
  // (only a warning, exit 0; `npm pack` keeps it): what installs from a tarball today would
  // publish without its CLI. Dry run of the unpacked tarball: nothing is sent anywhere (offline,
  // a loopback registry that is never contacted).
  const r = await run('npm', ['publish', project.installed, '--dry-run', '--offline', '--registry=http://127.0.0.1:9/',
    `--cache=${join(project.dir, 'npm-cache')}`, '--loglevel=warn', '--json'], { cwd: project.dir, timeoutMs: 60_000 });
  assert.equal(r.code, 0, show(r));
  assert.doesNotMatch(r.stderr, /auto-corrected|invalid and removed|was normalized/, r.stderr);
  assert.equal(JSON.parse(r.stdout)['odds-gate'].files.length, project.packed.length);
});

test('installed bin: node_modules/.bin/odds-gate simulate --independent --json', async () => {
  assert.ok(statSync(join(project.project, 'node_modules', '.bin', 'odds-gate')).mode & 0o100, 'the .bin link is not executable');
  // Through the shebang, as npx or a package.json script runs it.
  const r = await run(join(project.project, 'node_modules', '.bin', 'odds-gate'),
    ['simulate', '--independent', '--json', '--svg', 'independent.svg'], { cwd: project.project, timeoutMs: 60_000 });
  assert.equal(r.code, 0, show(r));
  const out = JSON.parse(r.stdout);
  assert.deepEqual([out.attempts, out.throttled, out.completed, out.abandoned, out.lastAttemptMs], [20, 12, 8, 0, 3000]);
  assert.equal(out.svg, join(project.project, 'independent.svg'));
  const svg = readFileSync(out.svg, 'utf8');
  assert.ok(/<svg[\s>]/.test(svg) && svg.trimEnd().endsWith('</svg>'), `${out.svg} is not an SVG document`);

  const usage = await run(join(project.project, 'node_modules', '.bin', 'odds-gate'), ['--nope'], { cwd: project.project, timeoutMs: 60_000 });
  assert.equal(usage.code, 2, show(usage));
  assert.match(usage.stderr, /Usage:/);
});

test('tsc --strict: an SDK-shaped client takes the installed wrapper as its fetchImpl', async () => {
  const ts = join(project.project, 'ts');
  // Nothing from this repository but the compiler: 'odds-gate' resolves through the temp
  // project's node_modules, by package.json "exports" (NodeNext) and by "types" (node10, which
  // ignores "exports"), and `types: []` keeps every @types package out.
  const base = {
    strict: true,
    noEmit: true,
    target: 'ES2022',
    lib: ['ES2022', 'DOM', 'DOM.Iterable'],
    types: [],
    skipLibCheck: false,
  };
  writeFileSync(join(project.project, 'tsconfig.json'), JSON.stringify({
    compilerOptions: { ...base, module: 'NodeNext', moduleResolution: 'NodeNext' }, files: ['ts/consumer.ts'],
  }, null, 2));
  writeFileSync(join(project.project, 'tsconfig.node10.json'), JSON.stringify({
    compilerOptions: { ...base, module: 'ES2022', moduleResolution: 'node10' }, files: ['ts/consumer.ts'],
  }, null, 2));
  mkdirSync(ts, { recursive: true });
  writeFileSync(join(ts, 'consumer.ts'), `
import {
  createFetch, simulate, Gate, redisStore, GateAbandonedError, QuotaExhaustedError, OddsGateError,
  type GatedFetch, type Stats, type Description, type SimulateResult,
} from 'odds-gate';

// The SDK's shape (@odds-api/client is not on npm): its fetchImpl option, exactly as it declares it.
type SdkFetch = (input: string | URL, init?: RequestInit) => Promise<Response>;
class OddsApiClient {
  readonly #apiKey: string | undefined;
  readonly #baseUrl: string;
  readonly #fetchImpl: SdkFetch;
  constructor({ apiKey, baseUrl = 'https://api.odds-api.net/v1', fetchImpl = fetch }: {
    apiKey?: string; baseUrl?: string; fetchImpl?: SdkFetch;
  } = {}) {
    this.#apiKey = apiKey;
    this.#baseUrl = baseUrl;
    this.#fetchImpl = fetchImpl;
  }
  async getOddsSnapshot(eventId: string): Promise<unknown> {
    const headers: Record<string, string> = { Accept: 'application/json' };
    if (this.#apiKey) headers['X-API-Key'] = this.#apiKey;
    const response = await this.#fetchImpl(\`\${this.#baseUrl}/events/\${encodeURIComponent(eventId)}/odds/snapshot\`, { method: 'GET', headers });
    return response.json();
  }
}

const fetchImpl: GatedFetch = createFetch({ rate: { burst: 2, perSecond: 2 }, retry: { maxAttempts: 3 } });
const client = new OddsApiClient({ apiKey: 'key', fetchImpl });
const round = new OddsApiClient({ apiKey: 'key', fetchImpl: fetchImpl.batch({ deadlineMs: 5_000, retryBudget: 4 }) });
export async function refresh(ids: string[]): Promise<unknown[]> {
  return Promise.all([...ids.map((id) => client.getOddsSnapshot(id)), round.getOddsSnapshot('e0')]);
}

const stats: Stats = fetchImpl.stats();
const waiting: number = stats.waiting + stats.gates.reduce((n, g) => n + g.admissionWaitMs.count, 0);
const summary: Description = fetchImpl.describe();
const text: string = summary.text;
const remaining: number | undefined = fetchImpl.batch({ deadlineMs: 1_000 }).stats().batch?.remainingMs;
const sim: SimulateResult = simulate({ shared: true });
const next: number = new Gate({ burst: 2, perSecond: 2 }).admitAt(sim.lastAttemptMs);
const shared = createFetch({ rate: { burst: 2, perSecond: 2 }, store: redisStore({ script: async () => 'sha', evalsha: async () => [] }, { onFailure: 'local' }) });
export function why(err: unknown): string | undefined {
  if (err instanceof GateAbandonedError) return err.reason;
  if (err instanceof QuotaExhaustedError) return String(err.periodEnd);
  return OddsGateError.is(err) ? 'odds-gate' : undefined;
}
void [waiting, text, remaining, next, shared];

// Types that went \`any\` would accept this; the misspelt field must be refused.
// @ts-expect-error: 'perSec' is not a field of Rate ('perSecond' is)
createFetch({ rate: { burst: 2, perSec: 2 } });
`);
  for (const config of ['tsconfig.json', 'tsconfig.node10.json']) {
    const r = await node([TSC, '-p', join(project.project, config)], { timeoutMs: 180_000 });
    assert.equal(r.code, 0, `${config}: ${show(r)}`);
  }
  // The checks above only mean something if the compiler does fail on a type error here.
  writeFileSync(join(ts, 'consumer.ts'), `import { createFetch } from 'odds-gate';\ncreateFetch({ rate: { burst: 'two', perSecond: 2 } });\n`);
  const bad = await node([TSC, '-p', join(project.project, 'tsconfig.json')], { timeoutMs: 180_000 });
  assert.notEqual(bad.code, 0, 'tsc accepted a string burst');
  assert.match(bad.stdout, /TS2322/);
});

test('the shipped eight-worker demo runs from the installed package', { timeout: 150_000 }, async () => {
  const r = await node([join('node_modules', 'odds-gate', 'bin', 'odds-gate.js'), 'demo'], { timeoutMs: 120_000 });
  assert.equal(r.code, 0, show(r));
  const rows = demoRows(r.stdout);
  const gated = rows.get('odds-gate shared gate');
  const plain = rows.get('plain fetch + fixed 1 s retry');
  assert.ok(gated && plain, `no demo table in:\n${r.stdout}`);
  assert.deepEqual([gated.attempts, gated.throttled, gated.completed], [8, 0, 8], r.stdout);
  assert.equal(plain.completed, 8, r.stdout);
  assert.ok(plain.attempts > 8 && plain.throttled > 0, `plain fetch should collide:\n${r.stdout}`);
  // The allowance's floor is (8 - 2) / 2 = 3 s; the upper bound only catches a hang.
  assert.ok(gated.wall >= 2.9 && gated.wall < 60, `gated wall ${gated.wall} s`);
});


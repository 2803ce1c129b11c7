// Every code block in README.md, CONTRIBUTING.md and the guide (docs/*.md) is extracted and run or
// checked, so the docs cannot drift (a failure names the block as file:line, docs/cache.md:40):
// - ```js blocks run as ES modules in a temp project where `odds-gate` is the packed and
//   installed package (support/temp-project.mjs) and `@odds-api/client` a stand-in talking to a
//   fake Odds API on 127.0.0.1; each must exit 0 on its own (connections closed);
// - ```sh lines must be real commands: scripts and files they name exist, `npx odds-gate ...`
//   lines run (through the installed bin) and exit 0;
// - untagged blocks are outputs, compared with a real run of what they show; one this test does
//   not know fails, so a new block is never left unchecked;
// - markdown tables stand apart from the text around them (else they render as a paragraph).
import assert from 'node:assert/strict';
import { before, after, test } from 'node:test';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createTempProject, childEnv, demoRows, run, show, REPO } from './support/temp-project.mjs';
import { startFakeOddsApi } from './support/fake-odds-api.mjs';
import { startRedis } from './support/redis-server.mjs';
import { startUpstashRest } from './support/upstash-rest.mjs';

/** The files whose code blocks are checked: the README, CONTRIBUTING.md and every page of the guide. */
const DOC_FILES = ['README.md', 'CONTRIBUTING.md',
  ...readdirSync(join(REPO, 'docs')).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`)];
const DOCS = DOC_FILES.map((file) => ({ file, lines: readFileSync(join(REPO, file), 'utf8').split('\n') }));

/**
 * A file's fenced blocks: `{ file, lang, code, line (of the opening fence, 1-based), before (the
 * prose just above) }`.
 */
function fencedBlocks({ file, lines: LINES }) {
  const blocks = [];
  for (let i = 0; i < LINES.length; i++) {
    const open = /^( *)(`{3,})([^`\s]*)\s*$/.exec(LINES[i]);
    if (!open) continue;
    const [, indent, fence, lang] = open;
    let end = i + 1;
    while (end < LINES.length && !(LINES[end].trim() === fence)) end++;
    assert.ok(end < LINES.length, `${file}:${i + 1}: the code fence is never closed`);
    // A fence inside a list item is indented; its lines carry that indentation too.
    const code = LINES.slice(i + 1, end).map((l) => (l.startsWith(indent) ? l.slice(indent.length) : l)).join('\n');
    let start = i;
    while (start > 0 && LINES[start - 1].trim() === '') start--;
    while (start > 0 && LINES[start - 1].trim() !== '') start--;
    blocks.push({ file, lang, code, line: i + 1, before: LINES.slice(start, i).join('\n').trim() });
    i = end;
  }
  return blocks;
}

const BLOCKS = DOCS.flatMap(fencedBlocks);
const where = (block) => `${block.file}:${block.line}`;
const firstLine = (block) => block.code.split('\n').find((l) => l.trim() !== '') ?? '';

// ---- the temp project, the fake API, Redis ------------------------------------------------------

let project; // support/temp-project.mjs
let api; // the fake Odds API on 127.0.0.1
let redis; // a throwaway redis-server, only when some block needs one
let rest; // a REST endpoint in front of it, for @upstash/redis, when some block needs one
const BIN = () => join(project.project, 'node_modules', '.bin', 'odds-gate');
// The installed bin as npx runs it: through its `#!/usr/bin/env node`. Under Bun or Deno (the
// wiring runs of scripts/test.sh) that line would pick Node, so the runtime itself runs the
// bin's script, as `bun x --bun odds-gate` or `deno run npm:odds-gate` would.
const OTHER_RUNTIME = Boolean(process.versions.bun || process.versions.deno);
const runBin = (args, options) => (OTHER_RUNTIME
  ? run(process.execPath, [realpathSync(BIN()), ...args], options)
  : run(BIN(), args, options));
const apiKey = `readme-test-key-${process.pid}`;

before(async () => {
  project = await createTempProject('odds-gate-readme-');
  api = await startFakeOddsApi({ burst: 2, perSecond: 2, retryAfterSeconds: 1 });
  const modules = join(project.project, 'node_modules');

  // `@odds-api/client` is not on npm, and no test may reach the real API: a tiny package that
  // re-exports the installed package's SDK stand-in (same contract: class OddsApiClient,
  // getOddsSnapshot, { apiKey, baseUrl, bearerToken, fetchImpl }) with its default baseUrl
  // taken from ODDS_API_BASE_URL, the fake Odds API this test started on 127.0.0.1.
  mkdirSync(join(modules, '@odds-api', 'client'), { recursive: true });
  writeFileSync(join(modules, '@odds-api', 'client', 'package.json'), JSON.stringify({
    name: '@odds-api/client', version: '0.0.0-stand-in', type: 'module', exports: './index.js',
  }));
  writeFileSync(join(modules, '@odds-api', 'client', 'index.js'), `
    import { OddsApiClient as StandIn } from '../../odds-gate/demo/sdk-client.js';
    export { OddsApiError } from '../../odds-gate/demo/sdk-client.js';
    const baseUrl = process.env.ODDS_API_BASE_URL;
    if (!/^http:\\/\\/127\\.0\\.0\\.1:\\d+\\//.test(baseUrl ?? '')) throw new Error('ODDS_API_BASE_URL must be the fake API on 127.0.0.1');
    export class OddsApiClient extends StandIn {
      constructor(options = {}) { super({ ...options, baseUrl: options.baseUrl ?? baseUrl }); }
    }
  `);
  // Loaded before every block (--import): a fetch to anything but 127.0.0.1 fails at once,
  // so a block that finds its way to a real host fails here instead of reaching it.
  writeFileSync(join(project.project, 'loopback-only.mjs'), `
    const realFetch = globalThis.fetch;
    globalThis.fetch = function fetch(input, init) {
      const url = new URL(input instanceof Request ? input.url : String(input));
      if (url.hostname !== '127.0.0.1') return Promise.reject(new TypeError(\`a docs block tried to reach \${url.origin}; tests stay on 127.0.0.1\`));
      return realFetch(input, init);
    };
  `);
  // Any other package a block imports (ioredis, redis, @opentelemetry/*) is the repository's
  // devDependency, linked in: Node follows the link, so its own dependencies resolve there.
  for (const name of new Set(BLOCKS.filter((b) => b.lang === 'js').flatMap((b) => otherPackages(b)))) {
    const target = join(REPO, 'node_modules', name);
    if (!existsSync(target)) continue; // the block's test says so
    mkdirSync(join(modules, name, '..'), { recursive: true });
    symlinkSync(target, join(modules, name), 'dir');
  }
  if (BLOCKS.some((b) => b.lang === 'js' && /REDIS_URL|\b(ioredis|redis)\b/.test(b.code))) redis = await startRedis();
  if (BLOCKS.some((b) => b.lang === 'js' && /UPSTASH_REDIS_REST_URL/.test(b.code))) rest = await startUpstashRest(redis.port);
});

after(async () => {
  await api?.close();
  await rest?.close();
  await redis?.stop();
  project?.cleanup();
});

/** Bare package names a block imports, besides odds-gate, the SDK and Node's own modules. */
function otherPackages(block) {
  const specs = [...block.code.matchAll(/^\s*(?:import|export)\s+(?:[^'";]*?\s+from\s+)?['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/gm)]
    .map((m) => m[1] ?? m[2]);
  return specs
    .filter((s) => !s.startsWith('.') && !s.startsWith('/') && !isBuiltin(s))
    .map((s) => s.split('/').slice(0, s.startsWith('@') ? 2 : 1).join('/'))
    .filter((n) => n !== 'odds-gate' && n !== '@odds-api/client');
}

// The installed demo (`odds-gate demo`, about 7 s) serves the README's first table and the
// `npx odds-gate demo` lines: run once.
let demoRun;
const runDemo = () => (demoRun ??= runBin(['demo'], { cwd: project.project, timeoutMs: 120_000 }));

/** A fresh folder in the temp project to run a command in (so its files are its own). */
let dirs = 0;
const freshDir = () => mkdtempSync(join(project.project, `run-${++dirs}-`));

// ---- ```js blocks ----------------------------------------------------------------------------

// What a block needs that it does not say itself, keyed by a distinctive line of the block.
// A block that matches none runs as written. Prefer fixing the docs over adding entries here.
const PREAMBLES = [
  {
    // docs/edge.md's Next.js route: its handler asked once.
    key: "export const runtime = 'edge';",
    postamble: `const answer = await GET(new Request('http://route/?event=evt-1'));
if (!answer.ok) throw new Error(\`the route answered \${answer.status}\`);
await answer.text();`,
    expect: (stats) => assert.equal(stats.ok, 1, 'the route fetched one snapshot'),
  },
  {
    key: 'await Promise.all(eventIds.map((id) => client.getOddsSnapshot(id)));',
    // The docs' promise: the workers' snapshots, one allowance, no 429 (the fake API's
    // allowance is the block's `rate`).
    expect: (stats) => {
      assert.ok(stats.ok >= 1, `the fake API served ${stats.ok} snapshots`);
      assert.equal(stats.throttled, 0, 'the gated calls collected 429s');
    },
  },
];

for (const block of BLOCKS.filter((b) => b.lang === 'js')) {
  test(`${where(block)}: the js block runs (${firstLine(block).trim()})`, { timeout: 120_000 }, async () => {
    const missing = otherPackages(block).filter((n) => !existsSync(join(REPO, 'node_modules', n)));
    assert.deepEqual(missing, [], `${where(block)} imports ${missing.join(', ')}: not a devDependency of the repository, so this test cannot provide it`);
    const entries = PREAMBLES.filter((p) => block.code.includes(p.key));
    const source = [...entries.map((p) => p.preamble ?? ''), block.code, ...entries.map((p) => p.postamble ?? '')].join('\n');
    const dir = freshDir();
    let file = join(dir, 'block.mjs');
    const loopbackOnly = pathToFileURL(join(project.project, 'loopback-only.mjs')).href;
    // Deno takes `--import` and ignores it: there the guard is the block's first import.
    const guarded = (code) => (process.versions.deno ? `import ${JSON.stringify(loopbackOnly)};\n${code}` : code);
    writeFileSync(file, guarded(source));
    if (/^export default \{/m.test(block.code)) {
      // A Worker (docs/edge.md): its handler is asked once, the environment its bindings, from a
      // module of its own (Bun would serve a module whose default export has a `fetch`).
      file = join(dir, 'run-worker.mjs');
      writeFileSync(file, guarded(`import worker from './block.mjs';
const response = await worker.fetch(new Request('http://worker/?event=evt-1'), process.env);
if (!response.ok) throw new Error(\`the worker answered \${response.status}: \${await response.text()}\`);
await response.text();`));
    }
    api.reset();
    const r = await run(process.execPath, ['--import', loopbackOnly, file], {
      cwd: project.project,
      timeoutMs: 60_000,
      env: childEnv({ ODDS_API_KEY: apiKey, ODDS_API_BASE_URL: api.baseUrl, ...(redis && { REDIS_URL: redis.url }),
        ...(rest && { UPSTASH_REDIS_REST_URL: rest.url, UPSTASH_REDIS_REST_TOKEN: rest.token }) }),
    });
    if (r.code !== 0) {
      const hint = entries.length ? '' : '\nNo entry of PREAMBLES in js-tests/readme.test.mjs matches this block: if it uses names '
        + 'it does not define, define them in the block (what a reader would copy) or add an entry keyed by a distinctive line.'
        + '\nA block that never exits (a hung process is killed after 60 s) has left something open: a client to close?';
      assert.fail(`${where(block)}: the js block failed: ${show(r)}\n--- the block as run\n${source}${hint}`);
    }
    for (const entry of entries) entry.expect?.(api.stats());
  });
}

// ---- ```sh blocks ----------------------------------------------------------------------------

const SH = [
  // The repository's scripts: they exist (never run here: setup/build/demo/test are slow or recurse).
  [/^bash (scripts\/[\w.-]+\.sh)$/, (m) => assert.ok(existsSync(join(REPO, m[1])), `${m[1]} does not exist`)],
  [/^node ([\w./-]+\.m?js)(?: [\w.-]+)*$/, (m) => assert.ok(existsSync(join(REPO, m[1])), `${m[1]} does not exist`)],
  // "from your project, with the path to pkg/": the built package is there.
  [/^npm install \.\/(pkg)$/, (m) => {
    assert.equal(JSON.parse(readFileSync(join(REPO, m[1], 'package.json'), 'utf8')).name, 'odds-gate');
  }],
  // CONTRIBUTING.md's test commands: what they name exists (never run here: they are the suites
  // this test is one of, or the Rust build). A `--test` target is a file or a folder of tests/.
  [/^cargo test(?: --test ([\w-]+))?(?: -- --ignored)?$/, (m) => {
    if (m[1]) assert.ok(existsSync(join(REPO, 'tests', `${m[1]}.rs`)) || existsSync(join(REPO, 'tests', m[1], 'main.rs')), `no tests/${m[1]}.rs or tests/${m[1]}/main.rs`);
    else assert.ok(existsSync(join(REPO, 'Cargo.toml')), 'no Cargo.toml');
  }],
  [/^node --test((?: --[\w-]+(?:=\w+)?)*)((?: js-tests\/[\w*.-]+\.test\.mjs)+)$/, (m) => {
    for (const file of m[2].trim().split(' ')) {
      const name = file.slice('js-tests/'.length);
      const pattern = new RegExp(`^${name.replace(/[.]/g, '\\.').replace(/\*/g, '[^/]*')}$`);
      assert.ok(readdirSync(join(REPO, 'js-tests')).some((f) => pattern.test(f)), `${file} names no test file`);
    }
  }],
  // The CLI, through the installed package's bin (what npx runs).
  [/^npx odds-gate((?: [\w.=-]+)*)$/, async (m) => {
    const args = m[1].trim().split(' ');
    const cwd = freshDir();
    const r = args[0] === 'demo' ? await runDemo() : await runBin(args, { cwd, timeoutMs: 60_000 });
    assert.equal(r.code, 0, show(r));
    const svg = args.indexOf('--svg');
    if (svg !== -1) assert.ok(existsSync(join(cwd, args[svg + 1])), `no ${args[svg + 1]} written`);
  }],
];

for (const block of BLOCKS.filter((b) => b.lang === 'sh')) {
  test(`${where(block)}: every command of the sh block is real (${firstLine(block).trim()})`, { timeout: 180_000 }, async () => {
    for (const [i, raw] of block.code.split('\n').entries()) {
      const line = raw.replace(/(^|\s)#.*$/, '').trim(); // comments off
      for (const command of line ? line.split(/\s*&&\s*/) : []) {
        const rule = SH.find(([pattern]) => pattern.test(command));
        assert.ok(rule, `${block.file}:${block.line + 1 + i}: \`${command}\` is a command js-tests/readme.test.mjs does not know: teach it (SH) how to check it`);
        await rule[1](rule[0].exec(command));
      }
    }
  });
}

// ---- untagged blocks: outputs --------------------------------------------------------------

/**
 * console.table's rows: [{ column: cell }] with strings unquoted. Runtimes draw the same table a
 * little differently (the index column is Node's `(index)`, Deno's `(idx)`, Bun's blank; Deno
 * quotes strings with "): read as Node's.
 */
function consoleTable(text) {
  const rows = text.split('\n').filter((l) => l.startsWith('│')).map((l) => l.split('│').slice(1, -1).map((c) => c.trim().replace(/^'(.*)'$|^"(.*)"$/, '$1$2')));
  const [head, ...body] = rows;
  if (head && ['', '(idx)'].includes(head[0])) head[0] = '(index)';
  return body.map((cells) => Object.fromEntries(head.map((h, i) => [h, cells[i]])));
}

const OUTPUTS = [
  {
    name: 'the eight-worker demo (odds-gate demo)',
    first: /^\s+attempts\s+429s\s+completed\s+wall \(s\)$/,
    async check(block) {
      const r = await runDemo();
      assert.equal(r.code, 0, show(r));
      const shown = demoRows(block.code);
      const real = demoRows(r.stdout);
      assert.deepEqual([...shown.keys()], [...real.keys()], `${where(block)}: the block's rows are not the demo's:\n${r.stdout}`);
      assert.equal(block.code.split('\n')[0].trimEnd(), r.stdout.split('\n')[0].trimEnd(), `${where(block)}: the header differs`);
      // The setup in the prose above is the demo's own.
      const prose = /burst (\d+), (\d+) per second, `Retry-After: (\d+)`/.exec(block.before);
      const footnote = /\(burst (\d+), (\d+)\/s, Retry-After: (\d+)\)/.exec(r.stdout);
      assert.ok(prose && footnote, `${where(block)}: cannot read the server's setup from the prose above the block or from:\n${r.stdout}`);
      assert.deepEqual(prose.slice(1), footnote.slice(1), `${where(block)}: the prose describes another server than the demo runs`);

      const gate = 'odds-gate shared gate';
      const plain = 'plain fetch + fixed 1 s retry';
      const counts = (row) => [row.attempts, row.throttled, row.completed];
      assert.deepEqual(counts(shown.get(gate)), counts(real.get(gate)), `the gated row:\n${r.stdout}`);
      // Plain fetch in real time: 20 attempts, 12 429s almost always, but a stall of a few hundred
      // ms between the retries lets one more through. The block's figures must be the
      // article's (the same setup on the virtual clock), the real run the same collision.
      const { simulate } = await import(pathToFileURL(join(project.installed, 'index.js')).href);
      const [burst, perSecond, retryAfter] = footnote.slice(1).map(Number);
      const model = simulate({ burst, perSecond, retryAfterMs: retryAfter * 1000 });
      assert.deepEqual(counts(shown.get(plain)), [model.attempts, model.throttled, model.completed], `${where(block)}: the plain row is not the article's`);
      const p = real.get(plain);
      assert.equal(p.completed, model.completed, r.stdout);
      assert.ok(p.throttled > 0 && p.attempts - p.throttled === p.completed, `plain fetch should collide:\n${r.stdout}`);
      assert.ok(Math.abs(p.attempts - model.attempts) <= 4, `plain fetch made ${p.attempts} attempts, the article ${model.attempts}:\n${r.stdout}`);
      // Wall times: the block's respect the floor it states; the real run's only within wide bounds.
      const floor = (8 - burst) / perSecond;
      assert.ok(shown.get(gate).wall >= floor, `${where(block)}: the gated wall ${shown.get(gate).wall} s is under the floor ${floor} s`);
      for (const row of real.values()) assert.ok(row.wall >= floor - 0.1 && row.wall < 60, `wall ${row.wall} s:\n${r.stdout}`);
    },
  },
  {
    name: 'describe().text with the defaults',
    first: /^odds-gate configuration$/,
    async check(block) {
      const expr = /`(createFetch\([^`]*\))\.describe\(\)\.text` is:$/.exec(block.before)?.[1];
      assert.ok(expr, `${where(block)}: the prose above no longer says which createFetch(...) prints this: teach the test`);
      const file = join(freshDir(), 'describe.mjs');
      writeFileSync(file, `import { createFetch } from 'odds-gate';\nprocess.stdout.write(${expr}.describe().text);\n`);
      const r = await run(process.execPath, [file], { cwd: project.project, timeoutMs: 60_000 });
      assert.equal(r.code, 0, show(r));
      assert.equal(r.stdout.trimEnd(), block.code.trimEnd(), `${where(block)}: describe().text (actual) is not what the block shows (expected)`);
    },
  },
  {
    name: 'odds-gate simulate output',
    first: /^odds-gate simulate: /,
    async check(block) {
      const args = /`npx odds-gate (simulate[\w .:=-]*)` prints:$/.exec(block.before)?.[1];
      assert.ok(args, `${where(block)}: the prose above no longer says which \`npx odds-gate simulate ...\` prints this: teach the test`);
      const cwd = freshDir();
      const r = await runBin(args.split(' '), { cwd, timeoutMs: 60_000 });
      assert.equal(r.code, 0, show(r));
      // The one line that depends on where it ran: the block shows the timeline written into
      // /path/to/project; here it is the run's own folder.
      const printed = r.stdout.split(cwd).join('/path/to/project');
      assert.equal(printed.trimEnd(), block.code.trimEnd(), `${where(block)}: \`odds-gate ${args}\` printed (actual) what the block does not show (expected)`);
    },
  },
  {
    name: 'a month of odds-gate simulate --quota-limit',
    first: /^quota: /,
    async check(block) {
      const args = /`npx odds-gate (simulate[\w .:=-]*)` prints,\s+after\s+the\s+table:$/.exec(block.before)?.[1];
      assert.ok(args, `${where(block)}: the prose above no longer says which \`npx odds-gate simulate ...\` prints this: teach the test`);
      const r = await runBin(args.split(' '), { cwd: freshDir(), timeoutMs: 60_000 });
      assert.equal(r.code, 0, show(r));
      // The block's lines, in order, `...` standing for rows left out.
      const printed = r.stdout.split('\n').map((l) => l.trimEnd());
      let at = 0;
      for (const line of block.code.split('\n').map((l) => l.trimEnd()).filter((l) => l !== '...')) {
        const found = printed.indexOf(line, at);
        assert.ok(found !== -1, `${where(block)}: \`odds-gate ${args}\` did not print the block's line "${line}" where it shows it:\n${r.stdout}`);
        at = found + 1;
      }
    },
  },
  {
    name: 'the fleet demo (node demo/fleet.mjs N)',
    first: /^\d+ processes x 8 workers, one key, /,
    async check(block) {
      const n = /`node demo\/fleet\.mjs (\d+)`/.exec(block.before)?.[1];
      assert.ok(n, `${where(block)}: the prose above no longer says which \`node demo/fleet.mjs N\` prints this: teach the test`);
      // A repository demo (it runs pkg/ and its own redis-server), about 30 s on 2 cores.
      const r = await run(process.execPath, ['demo/fleet.mjs', n], { cwd: REPO, timeoutMs: 240_000 });
      assert.equal(r.code, 0, show(r));
      assert.equal(block.code.split('\n')[0], r.stdout.split('\n')[0]);
      const shown = consoleTable(block.code);
      const real = consoleTable(r.stdout);
      assert.deepEqual(shown.map((row) => Object.keys(row)), real.map((row) => Object.keys(row)), `the columns differ:\n${r.stdout}`);
      assert.deepEqual(shown.map((row) => row.gate), real.map((row) => row.gate), `the rows differ:\n${r.stdout}`);
      const pick = (rows, gate) => rows.find((row) => row.gate === gate);
      const redisRow = (rows) => pick(rows, 'one gate through Redis');
      const counts = (row) => ['jobs', 'completed', 'attempts', '429s'].map((c) => Number(row[c]));
      // Through Redis the block shows the floor: every job once, no 429. A real run matches it,
      // but for one thing the gate cannot see: at the exact allowance the server's bucket is empty,
      // so an admitted call that reaches it late (a loaded machine, two CI jobs on two cores) lands
      // next to the following one and is answered 429, then retried. One such retry is allowed.
      const [sJobs, sDone, sAttempts, sRejected] = counts(redisRow(shown));
      assert.deepEqual([sDone, sAttempts, sRejected], [sJobs, sJobs, 0], `${where(block)}: the Redis row is not the floor:\n${block.code}`);
      const [rJobs, rDone, rAttempts, rRejected] = counts(redisRow(real));
      assert.deepEqual([rJobs, rDone, rAttempts], [sJobs, sJobs, sJobs + rRejected], `through Redis:\n${r.stdout}`);
      assert.ok(rRejected <= 1, `through Redis, more than one late arrival answered 429:\n${r.stdout}`);
      // The prose's numbers are the table's.
      const prose = /through\s+Redis\s+the\s+(\d+)\s+jobs\s+take\s+(\d+)\s+attempts/.exec(block.before);
      assert.ok(prose, `${where(block)}: the prose above no longer says what the Redis run takes: teach the test`);
      const [jobs, , attempts] = counts(redisRow(shown));
      assert.deepEqual(prose.slice(1).map(Number), [jobs, attempts], `${where(block)}: the prose's jobs and attempts are not the table's`);
      // A gate per process: its counts vary run to run; the block's and the real run's both
      // overrun the key.
      for (const rows of [shown, real]) {
        const [jobs, completed, attempts, throttled] = counts(pick(rows, 'a gate per process'));
        assert.equal(jobs, Number(n) * 8);
        assert.ok(completed <= jobs && attempts > jobs && throttled > 0, `a gate per process:\n${r.stdout}`);
      }
    },
  },
];

for (const block of BLOCKS.filter((b) => b.lang === '')) {
  const known = OUTPUTS.find((o) => o.first.test(firstLine(block)));
  test(`${where(block)}: the output block matches a real run (${known?.name ?? firstLine(block).trim()})`, { timeout: 300_000 }, async () => {
    assert.ok(known, `${where(block)}: an untagged block js-tests/readme.test.mjs does not know (first line "${firstLine(block)}"): `
      + 'teach it about the block (add it to OUTPUTS, with a check against a real run), or tag the block\'s language');
    await known.check(block);
  });
}

test('every kind of output block the test knows is still shown somewhere (none lost in a move)', () => {
  const outputs = BLOCKS.filter((b) => b.lang === '');
  const lost = OUTPUTS.filter((o) => !outputs.some((b) => o.first.test(firstLine(b)))).map((o) => o.name);
  assert.deepEqual(lost, [], 'no block of README.md, CONTRIBUTING.md or docs/*.md shows these any more: drop them from OUTPUTS, or put the block back');
});

test('every code block is of a kind this test checks (js, sh, or an untagged output)', () => {
  const other = BLOCKS.filter((b) => !['js', 'sh', ''].includes(b.lang));
  assert.deepEqual(other.map((b) => `${where(b)} \`\`\`${b.lang}`), [], 'teach js-tests/readme.test.mjs about these blocks');
  assert.ok(BLOCKS.filter((b) => b.lang === 'js').length >= 2 && BLOCKS.filter((b) => b.lang === '').length >= 4, 'the docs lost their blocks?');
  for (const file of ['README.md', 'docs/README.md']) assert.ok(DOC_FILES.includes(file), `${file} is not read`);
});

// ---- markdown tables ---------------------------------------------------------------------------

for (const { file, lines: LINES } of DOCS) test(`${file}: every markdown table stands apart, with one indentation, inside its list item`, () => {
  const isRow = (l) => /^\s*\|.*\|\s*$/.test(l);
  let inFence = false;
  for (let i = 0; i < LINES.length; i++) {
    if (/^\s*```/.test(LINES[i])) inFence = !inFence;
    if (inFence || !isRow(LINES[i])) continue;
    let end = i;
    while (end < LINES.length && isRow(LINES[end])) end++;
    const rows = LINES.slice(i, end);
    const at = `${file}:${i + 1}`;
    const indent = /^ */.exec(rows[0])[0].length;
    assert.ok(i === 0 || LINES[i - 1].trim() === '', `${at}: a table needs a blank line before it`);
    assert.ok(end === LINES.length || LINES[end].trim() === '', `${at}: a table needs a blank line after it, or it runs into the next paragraph`);
    assert.ok(rows.every((r) => /^ */.exec(r)[0].length === indent), `${at}: the table's rows are indented differently`);
    assert.match(rows[1] ?? '', /^\s*\|(\s*:?-+:?\s*\|)+\s*$/, `${at}: the second row must be the delimiter row`);
    const cells = (r) => r.trim().slice(1, -1).split('|').length;
    assert.ok(rows.every((r) => cells(r) === cells(rows[0])), `${at}: rows with different numbers of cells`);
    if (indent > 0) {
      // Indented, it belongs to the list item above: at exactly that item's content column.
      let j = i - 1;
      while (j >= 0 && !/^\s*([-*+]|\d+[.)]) +\S/.test(LINES[j])) j--;
      const item = /^(\s*([-*+]|\d+[.)]) +)/.exec(LINES[j] ?? '');
      assert.ok(item, `${at}: an indented table outside a list item renders as code`);
      assert.equal(indent, item[1].length, `${at}: the table is not at its list item's content column (${file}:${j + 1})`);
    }
    i = end;
  }
});

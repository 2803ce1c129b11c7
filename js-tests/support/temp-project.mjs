// A fresh npm project in os.tmpdir() with the built package installed from its tarball, the way a
// user gets it: `npm pack pkg/`, then `npm install <tarball> --offline`. package.test.mjs and
// readme.test.mjs both use it, so they test what npm would publish, not the pkg/ folder (a file
// left out of `files`, or a path that only resolves inside this repository, fails there first).
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO = fileURLToPath(new URL('../../', import.meta.url));
export const PKG = join(REPO, 'pkg');

/**
 * The environment for child processes: the Node running the tests first on PATH (so `npm` and
 * the bin's `#!/usr/bin/env node` use it: the suite runs on Node 20 and again on Node 24), and
 * without what a parent `npm run` or `node --test` put there (npm_* settings would steer the
 * nested npm; NODE_TEST_CONTEXT would make a child `node` talk the test runner's protocol).
 */
export function childEnv(extra = {}) {
  const env = { ...process.env };
  for (const name of Object.keys(env)) {
    if (/^npm_/i.test(name) || name === 'NODE_TEST_CONTEXT') delete env[name];
  }
  env.PATH = [dirname(process.execPath), env.PATH].filter(Boolean).join(delimiter);
  return { ...env, ...extra };
}

/** Runs a command to completion, killed after `timeoutMs`; resolves with code, output and ms. */
export function run(command, args, { cwd, env = childEnv(), timeoutMs = 120_000 } = {}) {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const proc = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (d) => { stdout += d; });
    proc.stderr.on('data', (d) => { stderr += d; });
    const killer = setTimeout(() => proc.kill('SIGKILL'), timeoutMs);
    proc.on('error', (err) => { clearTimeout(killer); reject(err); });
    proc.on('close', (code, signal) => {
      clearTimeout(killer);
      resolve({ code, signal, stdout, stderr, ms: Math.round(performance.now() - started) });
    });
  });
}

/** What a failed child printed, for assertion messages. */
export const show = (r) => `exit ${r.code}${r.signal ? ` (${r.signal})` : ''} after ${r.ms} ms\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`;

// Never the registry: the tarball has no dependencies, and a private cache in the temp dir
// keeps ~/.npm (and its logs) out of it.
const NPM_FLAGS = ['--offline', '--no-audit', '--no-fund', '--loglevel=error'];

/**
 * Packs pkg/ and installs the tarball into `<tmp>/project` (package.json `"type": "module"`).
 * Returns `{ dir, project, installed, tarball, packed, cleanup }`; `packed` is the file list
 * of `npm pack --json`.
 */
export async function createTempProject(prefix = 'odds-gate-project-') {
  if (!existsSync(join(PKG, 'package.json'))) {
    throw new Error(`no built package at ${PKG}: build it first with \`bash scripts/build.sh\``);
  }
  const dir = mkdtempSync(join(tmpdir(), prefix));
  try {
    const cache = join(dir, 'npm-cache');
    const pack = await run('npm', ['pack', PKG, '--json', '--pack-destination', dir, `--cache=${cache}`, ...NPM_FLAGS], { cwd: dir });
    if (pack.code !== 0) throw new Error(`npm pack failed: ${show(pack)}`);
    const [info] = JSON.parse(pack.stdout);
    const tarball = join(dir, info.filename);

    const project = join(dir, 'project');
    mkdirSync(project);
    writeFileSync(join(project, 'package.json'), `${JSON.stringify({ name: 'odds-gate-consumer', version: '1.0.0', private: true, type: 'module' }, null, 2)}\n`);
    const install = await run('npm', ['install', tarball, `--cache=${cache}`, ...NPM_FLAGS], { cwd: project });
    if (install.code !== 0) throw new Error(`npm install of the tarball failed: ${show(install)}`);

    return {
      dir,
      project,
      installed: join(project, 'node_modules', 'odds-gate'),
      tarball,
      packed: info.files,
      cleanup: () => rmSync(dir, { recursive: true, force: true }),
    };
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

/**
 * The rows of the eight-worker demo's table (`odds-gate demo`, README's first table):
 * label -> { attempts, throttled, completed, wall }.
 */
export function demoRows(text) {
  const rows = new Map();
  for (const line of text.split('\n')) {
    const m = /^(\S.*?)\s{2,}(\d+)\s+(\d+)\s+(\d+)\s+(\d+(?:\.\d+)?)$/.exec(line.trimEnd());
    if (m) rows.set(m[1], { attempts: +m[2], throttled: +m[3], completed: +m[4], wall: +m[5] });
  }
  return rows;
}

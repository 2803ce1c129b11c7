// Shared helpers: statistics, table formatting, memory/timer probes, and loading the built package.
import { fork } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

export { sleep };

export function median(xs) {
  if (!xs.length) return NaN;
  const s = Float64Array.from(xs).sort();
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}
// Nearest-rank percentile.
export function percentile(xs, p) {
  if (!xs.length) return NaN;
  const s = Float64Array.from(xs).sort();
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
}

export const fix = (x, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : String(x));
export const int = (x) => (Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : String(x));

// Rotate a list so that round r starts at a different entry (interleaved rounds).
export const rotate = (list, r) => list.map((_, i) => list[(i + r) % list.length]);

export const timersAlive = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

export async function settle(ms = 20) {
  for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
  await sleep(ms);
  if (globalThis.gc) { globalThis.gc(); globalThis.gc(); }
}

// Formats a table (head: string[], rows: any[][]) as aligned text or as Markdown: columns of
// figures are right-aligned, the others left-aligned.
const numeric = (rows, i) => rows.every((r) => /^[-+>\d.,/ ]*$/.test(String(r[i])));
export function textTable(head, rows) {
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const right = head.map((_, i) => numeric(rows, i));
  const line = (c) => c.map((x, i) => (right[i] ? String(x).padStart(w[i]) : String(x).padEnd(w[i]))).join('  ');
  return [line(head), line(w.map((n) => '-'.repeat(n))), ...rows.map(line)].join('\n').replace(/ +$/gm, '');
}
export function mdTable(head, rows) {
  const esc = (x) => String(x).replaceAll('|', '\\|');
  return [`| ${head.map(esc).join(' | ')} |`, `|${head.map((_, i) => (numeric(rows, i) ? '---:' : ':---')).join('|')}|`,
    ...rows.map((r) => `| ${r.map(esc).join(' | ')} |`)].join('\n');
}

// Loads ../pkg/index.js, waiting (bounded) for a concurrent `scripts/build.sh` to finish, and
// captures the package's WebAssembly.Memory by watching WebAssembly.Instance during the import.
let loaded;
export async function loadPkg() {
  if (loaded) return loaded;
  const dir = new URL('../../pkg/', import.meta.url);
  const files = ['index.js', 'odds_gate.js', 'odds_gate_bg.wasm'].map((f) => new URL(f, dir));
  const stamp = () => (files.every((f) => existsSync(f)) ? files.map((f) => statSync(f).mtimeMs).join() : null);
  for (let i = 0, prev = null; i < 240; i++) { // <= 120 s
    const now = stamp();
    if (now && now === prev) break;
    if (i === 239) throw new Error('pkg/ missing or still changing: run bash scripts/build.sh');
    prev = now;
    await sleep(500);
  }
  let exports = null;
  const Instance = WebAssembly.Instance;
  WebAssembly.Instance = new Proxy(Instance, {
    construct(target, args, newTarget) {
      const inst = Reflect.construct(target, args, newTarget);
      if (inst.exports?.memory instanceof WebAssembly.Memory) exports ??= inst.exports;
      return inst;
    },
  });
  try {
    const wasmFile = new URL('odds_gate_bg.wasm', dir);
    const build = `wasm sha256 ${createHash('sha256').update(readFileSync(wasmFile)).digest('hex').slice(0, 12)}, ` +
      `built ${statSync(wasmFile).mtime.toISOString()}`; // several builds can land during one run
    const mod = await import(new URL('index.js', dir).href);
    const table = () => Object.values(exports ?? {}).find((x) => x instanceof WebAssembly.Table);
    loaded = {
      ...mod,
      build,
      wasmMemoryBytes: () => (exports ? exports.memory.buffer.byteLength : NaN),
      wasmTableLength: () => table()?.length ?? NaN, // wasm-bindgen's externref table: JS values held by wasm
    };
  } finally {
    WebAssembly.Instance = Instance;
  }
  return loaded;
}

// Resolves to the promise's value, or to `fallback` after ms; the timer is cleared either way.
export async function within(promise, ms, fallback = null) {
  let timer;
  const t = new Promise((r) => { timer = setTimeout(() => r(fallback), ms); });
  try { return await Promise.race([promise, t]); } finally { clearTimeout(timer); }
}

// Waits for every one of `runs` (a contender's workers) or for `stop` to abort (the run's
// cut-off, whose timer `cap` is then cleared); after a cut-off the stragglers get `drainMs` to
// notice, so the wait is bounded either way. When they all ended (null when cut off first), and
// whether they did.
export async function finishOrCutOff(runs, stop, cap, drainMs) {
  let endedAt = null;
  const all = Promise.all(runs).then(() => {
    endedAt = performance.now();
    return 'done';
  });
  const aborted = new Promise((resolve) => stop.signal.addEventListener('abort', resolve, { once: true }));
  const first = await Promise.race([all, aborted.then(() => 'cut off')]);
  clearTimeout(cap);
  const drained = first === 'done' || (await within(all, drainMs, 'stuck')) === 'done';
  return { endedAt, drained };
}

/**
 * Runs `script` (a bench file that answers `--child PKG MODE` with one message, then exits) once
 * per mode and build, each in a fresh process with --expose-gc and `env` added: [row label, its
 * answer], in order. The builds: this package, and with ODDS_GATE_BEFORE_PKG=<a pkg/ dir> that
 * one (" (before)"), run in the same rounds.
 */
export async function perModeAndBuild(script, modes, env = {}) {
  const builds = [['', fileURLToPath(new URL('../../pkg', import.meta.url))]];
  if (process.env.ODDS_GATE_BEFORE_PKG) builds.push([' (before)', process.env.ODDS_GATE_BEFORE_PKG]);
  const out = [];
  for (const mode of modes) {
    for (const [label, pkg] of builds) {
      const answer = await new Promise((resolve, reject) => {
        const child = fork(fileURLToPath(script), ['--child', pkg, mode],
          { execArgv: ['--expose-gc'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'], env: { ...process.env, ...env } });
        child.on('message', resolve);
        child.on('exit', (code) => code && reject(new Error(`${fileURLToPath(script)} ${mode}: exited with ${code}`)));
      });
      out.push([`${mode}${label}`, answer]);
    }
  }
  return out;
}

// 5. Size: the shipped WebAssembly module, raw and gzipped (zlib level 9), and its code by part.
// ODDS_GATE_BEFORE=<dir> (another checkout, built: its pkg/ and target/odds_gate_bg.named.wasm)
// puts that build's figures beside this one's, for a before-and-after table.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { loadPkg, int, fix } from './lib/util.mjs';
import { parts } from './lib/wasm-parts.mjs';

// 150 KB gzipped (decimal), issue #26; it supersedes #13's 100 KB.
const TARGET = 150 * 1000;
// The module as wasm-bindgen wrote it, names kept, before wasm-opt (scripts/build.sh).
const NAMED = new URL('../target/odds_gate_bg.named.wasm', import.meta.url);

/** The size of the code section of a module. */
function codeBytes(buf) {
  for (let at = 8; at < buf.length;) {
    const id = buf[at++];
    let size = 0;
    for (let shift = 0; ; shift += 7) {
      const byte = buf[at++];
      size += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) break;
    }
    if (id === 10) return size;
    at += size;
  }
  return 0;
}

/** A built checkout's files: `pkg/...` and `target/...`, by path under it. */
const before = process.env.ODDS_GATE_BEFORE?.replace(/\/$/, '');
const read = (dir, path) => (dir ? readFileSync(`${dir}/${path}`) : readFileSync(new URL(`../${path}`, import.meta.url)));
const has = (dir, path) => existsSync(dir ? `${dir}/${path}` : new URL(`../${path}`, import.meta.url));
const stamp = (buf) => createHash('sha256').update(buf).digest('hex').slice(0, 12);

export async function run() {
  await loadPkg(); // waits out a concurrent build
  // The simulator's module (sim.js loads sim/ on first use) where the build has one.
  const files = ['odds_gate_bg.wasm', 'odds_gate.js', 'index.js', 'errors.js', 'sim.js',
    'sim/odds_gate_sim_bg.wasm', 'sim/odds_gate_sim.cjs']
    .filter((f) => has(null, `pkg/${f}`));
  const gzip = (buf) => gzipSync(buf, { level: 9 }).length;
  const rows = files.map((f) => {
    const buf = read(null, `pkg/${f}`);
    const gz = gzip(buf);
    const row = [`pkg/${f}`, int(buf.length), fix(buf.length / 1000, 1), int(gz), fix(gz / 1000, 1)];
    if (!before) return row;
    const was = has(before, `pkg/${f}`) ? gzip(read(before, `pkg/${f}`)) : null;
    return [...row, was === null ? '-' : fix(was / 1000, 1), was === null ? '-' : fix((gz - was) / 1000, 1)];
  });
  const wasm = read(null, 'pkg/odds_gate_bg.wasm');
  const gz = gzip(wasm);
  const wasBuf = before && read(before, 'pkg/odds_gate_bg.wasm');
  const since = before ? `; before: wasm ${stamp(wasBuf)}, ${fix(gzip(wasBuf) / 1000, 1)} KB gzipped, ${fix(wasBuf.length / 1000, 1)} KB raw` : '';
  const tables = [{
    id: 'size',
    title: 'Size of the package',
    what: 'bytes of the built files in pkg/ (after wasm-opt -O3, as scripts/build.sh makes them), raw and gzipped with zlib level 9; KB = 1000 bytes',
    target: 'pkg/odds_gate_bg.wasm <= 150 KB gzipped (issue #26; it supersedes the 100 KB of #13)',
    verdict: `${gz <= TARGET ? 'met' : 'MISSED'} (${fix(gz / 1000, 1)} KB gzipped, ${fix(wasm.length / 1000, 1)} KB raw; ${fix(gz / TARGET, 2)} x the target${since})`,
    head: ['file', 'bytes', 'KB', 'gzip bytes', 'gzip KB', ...(before ? ['gzip KB before', 'change'] : [])],
    rows,
  }];
  if (!existsSync(NAMED)) {
    console.error(`no ${NAMED.pathname}: run bash scripts/build.sh for the table of the module's parts`);
    return tables;
  }
  const byPart = parts(readFileSync(NAMED));
  const total = byPart.reduce((sum, [, bytes]) => sum + bytes, 0);
  const wasParts = before && has(before, 'target/odds_gate_bg.named.wasm')
    ? new Map(parts(read(before, 'target/odds_gate_bg.named.wasm')).map(([p, b, c]) => [p, [b, c]])) : null;
  const beside = (part, bytes) => {
    if (!wasParts) return [];
    const [was, count] = wasParts.get(part);
    return [int(count), int(was), `${bytes - was > 0 ? '+' : ''}${int(bytes - was)}`];
  };
  const shipped = codeBytes(wasm);
  tables.push({
    id: 'size-parts',
    title: 'Size of the module by part',
    what: "bytes of code of each part of the module, from its function names: the module as wasm-bindgen writes it, before wasm-opt (which inlines across parts, so the shipped module's functions no longer say whose they are); std's generics instantiated on our types count as ours; bench/lib/wasm-parts.mjs says which names go where",
    target: 'pkg/odds_gate_bg.wasm <= 150 KB gzipped (issue #26): its code section is most of it',
    verdict: `${int(total)} bytes of code before wasm-opt, ${int(shipped)} in the shipped module's code section (${fix(shipped / wasm.length * 100, 0)}% of its ${int(wasm.length)} bytes)${wasParts ? `; before: ${int([...wasParts.values()].reduce((sum, [bytes]) => sum + bytes, 0))} bytes of code` : ''}`,
    head: ['part', 'functions', 'bytes of code', 'share', ...(wasParts ? ['functions before', 'bytes before', 'change'] : [])],
    rows: byPart.map(([part, bytes, count]) => [part, int(count), int(bytes), `${fix(bytes / total * 100, 1)}%`, ...beside(part, bytes)]),
  });
  return tables;
}

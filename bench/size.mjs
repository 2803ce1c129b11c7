// 5. Size: the shipped WebAssembly module, raw and gzipped (zlib level 9), and its code by part.
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

export async function run() {
  await loadPkg(); // waits out a concurrent build
  // The simulator's module (sim.js loads sim/ on first use) where the build has one.
  const files = ['odds_gate_bg.wasm', 'odds_gate.js', 'index.js', 'errors.js', 'sim.js',
    'sim/odds_gate_sim_bg.wasm', 'sim/odds_gate_sim.cjs']
    .filter((f) => existsSync(new URL(`../pkg/${f}`, import.meta.url)));
  const rows = files.map((f) => {
    const buf = readFileSync(new URL(`../pkg/${f}`, import.meta.url));
    const gz = gzipSync(buf, { level: 9 }).length;
    return [`pkg/${f}`, int(buf.length), fix(buf.length / 1000, 1), int(gz), fix(gz / 1000, 1)];
  });
  const wasm = readFileSync(new URL('../pkg/odds_gate_bg.wasm', import.meta.url));
  const gz = gzipSync(wasm, { level: 9 }).length;
  const tables = [{
    id: 'size',
    title: 'Size of the package',
    what: 'bytes of the built files in pkg/ (after wasm-opt -O3, as scripts/build.sh makes them), raw and gzipped with zlib level 9; KB = 1000 bytes',
    target: 'pkg/odds_gate_bg.wasm <= 150 KB gzipped (issue #26; it supersedes the 100 KB of #13)',
    verdict: `${gz <= TARGET ? 'met' : 'MISSED'} (${fix(gz / 1000, 1)} KB gzipped, ${fix(wasm.length / 1000, 1)} KB raw; ${fix(gz / TARGET, 2)} x the target)`,
    head: ['file', 'bytes', 'KB', 'gzip bytes', 'gzip KB'],
    rows,
  }];
  if (!existsSync(NAMED)) {
    console.error(`no ${NAMED.pathname}: run bash scripts/build.sh for the table of the module's parts`);
    return tables;
  }
  const byPart = parts(readFileSync(NAMED));
  const total = byPart.reduce((sum, [, bytes]) => sum + bytes, 0);
  const shipped = codeBytes(wasm);
  tables.push({
    id: 'size-parts',
    title: 'Size of the module by part',
    what: "bytes of code of each part of the module, from its function names: the module as wasm-bindgen writes it, before wasm-opt (which inlines across parts, so the shipped module's functions no longer say whose they are); std's generics instantiated on our types count as ours; bench/lib/wasm-parts.mjs says which names go where",
    target: 'pkg/odds_gate_bg.wasm <= 150 KB gzipped (issue #26): its code section is most of it',
    verdict: `${int(total)} bytes of code before wasm-opt, ${int(shipped)} in the shipped module's code section (${fix(shipped / wasm.length * 100, 0)}% of its ${int(wasm.length)} bytes)`,
    head: ['part', 'functions', 'bytes of code', 'share'],
    rows: byPart.map(([part, bytes, count]) => [part, int(count), int(bytes), `${fix(bytes / total * 100, 1)}%`]),
  });
  return tables;
}

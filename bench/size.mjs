// 5. Size: the shipped WebAssembly module, raw and gzipped (zlib level 9).
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { loadPkg, int, fix } from './lib/util.mjs';

const TARGET = 100 * 1000; // 100 KB gzipped (decimal), issue #13

export async function run() {
  await loadPkg(); // waits out a concurrent build
  const files = ['odds_gate_bg.wasm', 'odds_gate.js', 'index.js', 'errors.js'];
  const rows = files.map((f) => {
    const buf = readFileSync(new URL(`../pkg/${f}`, import.meta.url));
    const gz = gzipSync(buf, { level: 9 }).length;
    return [`pkg/${f}`, int(buf.length), fix(buf.length / 1000, 1), int(gz), fix(gz / 1000, 1)];
  });
  const wasm = readFileSync(new URL('../pkg/odds_gate_bg.wasm', import.meta.url));
  const gz = gzipSync(wasm, { level: 9 }).length;
  return [{
    id: 'size',
    title: 'Size of the package',
    what: 'bytes of the built files in pkg/ (after wasm-opt -O3, as scripts/build.sh makes them), raw and gzipped with zlib level 9; KB = 1000 bytes',
    target: 'pkg/odds_gate_bg.wasm <= 100 KB gzipped',
    verdict: `${gz <= TARGET ? 'met' : 'MISSED'} (${fix(gz / 1000, 1)} KB gzipped, ${fix(wasm.length / 1000, 1)} KB raw; ${fix(gz / TARGET, 2)} x the target)`,
    head: ['file', 'bytes', 'KB', 'gzip bytes', 'gzip KB'],
    rows,
  }];
}

// Makes odds_gate_edge.js, the module the edge entries (edge.js, light.js) load, from
// odds_gate.js: the same glue and snippets, but instantiated by the entry from the compiled module
// it imports (Workers and Vercel's edge compile wasm at deploy time and forbid compiling bytes at
// run time, and neither may read a file; each names the import its own way), and
// the two Node builtins the snippets import come from edge/, where a runtime without threads
// finds none (shared_memory.js then leaves every gate this isolate's own). It understands only
// the lines wasm-bindgen and inline-snippets.mjs write, and stops on anything else.
//
// Run as `node scripts/edge-glue.mjs <dir>` on the package's directory.
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const dir = resolve(process.argv[2] ?? 'pkg');
let src = readFileSync(join(dir, 'odds_gate.js'), 'utf8');
const swap = (from, to) => {
  if (!src.includes(from)) {
    console.error(`edge-glue: odds_gate.js has no line ${JSON.stringify(from)}`);
    process.exit(1);
  }
  src = src.replace(from, to);
};
swap("import * as __node_crypto from 'node:crypto';", "import * as __node_crypto from './edge/crypto.js';");
swap("import * as __node_worker_threads from 'node:worker_threads';", "import * as __node_worker_threads from './edge/worker_threads.js';");
swap("import { readFileSync } from 'node:fs';\n", '');
// Instantiated by the entry, with the compiled module it imports as its runtime asks.
swap(
  "const wasmUrl = new URL('odds_gate_bg.wasm', import.meta.url);\n" +
    'const wasmBytes = readFileSync(wasmUrl);\n' +
    'const wasmModule = new WebAssembly.Module(wasmBytes);\n' +
    'let wasmInstance = new WebAssembly.Instance(wasmModule, __wbg_get_imports());\n' +
    'let wasm = wasmInstance.exports;\n' +
    'wasm.__wbindgen_start();\n',
  'let wasm;\n' +
    '/** Instantiates the glue from its compiled wasm module: once, before anything else. */\n' +
    'export function __instantiate(module) {\n' +
    '  wasm = new WebAssembly.Instance(module, __wbg_get_imports()).exports;\n' +
    '  wasm.__wbindgen_start();\n' +
    '}\n',
);
if (/from 'node:|readFileSync|import\.meta/.test(src)) {
  console.error('edge-glue: odds_gate_edge.js still reaches for Node or a file');
  process.exit(1);
}
writeFileSync(join(dir, 'odds_gate_edge.js'), src);

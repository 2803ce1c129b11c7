// Node 20's V8 (11.3) aborted the process ("unreachable code" in
// Deoptimizer::DoComputeBuiltinContinuation) when hot JavaScript that had a call to one of our wasm
// exports inlined was deoptimised while that call ran: its deoptimizer can rebuild an inlined
// JS-to-wasm call only when the export's result is a number, and ours returned externrefs. No
// export returns a lone externref now (src/js/mod.rs, `Exported`); these tests hold that line.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const child = fileURLToPath(new URL('./support/queue-child.mjs', import.meta.url));
const wasmPath = new URL('../pkg/odds_gate_bg.wasm', import.meta.url);

/** Reads an unsigned LEB128 at `at`; returns [value, next offset]. */
function leb(bytes, at) {
  let value = 0;
  let shift = 0;
  for (;;) {
    const byte = bytes[at++];
    value += (byte & 0x7f) * 2 ** shift;
    shift += 7;
    if (byte < 0x80) return [value, at];
  }
}

/** The result types of every exported function, by export name, read from the binary. */
function exportResults(bytes) {
  const types = [];
  const functionTypes = []; // by function index: imported functions first, then defined ones
  const exports = [];
  let at = 8; // magic and version
  while (at < bytes.length) {
    const id = bytes[at++];
    let size;
    [size, at] = leb(bytes, at);
    const end = at + size;
    let p = at;
    let count;
    if (id === 1) { // type section: func types
      [count, p] = leb(bytes, p);
      for (let i = 0; i < count; i++) {
        assert.equal(bytes[p++], 0x60, 'a function type');
        let n;
        [n, p] = leb(bytes, p);
        p += n; // parameters: one byte each (numbers and externref)
        [n, p] = leb(bytes, p);
        types.push([...bytes.subarray(p, p + n)]);
        p += n;
      }
    } else if (id === 2) { // imports: functions come first in the index space
      [count, p] = leb(bytes, p);
      for (let i = 0; i < count; i++) {
        for (let s = 0; s < 2; s++) { let n; [n, p] = leb(bytes, p); p += n; }
        const kind = bytes[p++];
        if (kind === 0) { let t; [t, p] = leb(bytes, p); functionTypes.push(t); }
        else if (kind === 1) { p++; const flags = bytes[p++]; [, p] = leb(bytes, p); if (flags & 1) [, p] = leb(bytes, p); }
        else if (kind === 2) { const flags = bytes[p++]; [, p] = leb(bytes, p); if (flags & 1) [, p] = leb(bytes, p); }
        else if (kind === 3) { p += 2; }
        else assert.fail(`import kind ${kind}`);
      }
    } else if (id === 3) { // function section: a type index per defined function
      [count, p] = leb(bytes, p);
      for (let i = 0; i < count; i++) { let t; [t, p] = leb(bytes, p); functionTypes.push(t); }
    } else if (id === 7) { // exports
      [count, p] = leb(bytes, p);
      for (let i = 0; i < count; i++) {
        let n;
        [n, p] = leb(bytes, p);
        const name = new TextDecoder().decode(bytes.subarray(p, p + n));
        p += n;
        const kind = bytes[p++];
        let index;
        [index, p] = leb(bytes, p);
        if (kind === 0) exports.push([name, index]);
      }
    }
    at = end;
  }
  assert.ok(functionTypes.length > 0 && exports.length > 0, 'sections found');
  return new Map(exports.map(([name, index]) => [name, types[functionTypes[index]]]));
}

test('no wasm export returns a lone externref, so V8 never inlines one that returns a JS value', async () => {
  const results = exportResults(new Uint8Array(await readFile(wasmPath)));
  const EXTERNREF = 0x6f;
  const lone = [...results].filter(([, r]) => r.length === 1 && r[0] === EXTERNREF).map(([name]) => name);
  assert.deepEqual(lone, [], `exports returning one externref: ${lone.join(', ')}`);
  // The check reads real signatures: the hot export hands back a JavaScript value as a
  // `Result`, three i32s (a table slot for the value or the error, and which it is).
  assert.deepEqual(results.get('transport_call'), [0x7f, 0x7f, 0x7f]);
});

test('a hot caller deoptimised in the middle of a call survives', async () => {
  const { stdout } = await run(process.execPath, [child, '200000', 'deopt'], { timeout: 120_000 });
  assert.deepEqual(JSON.parse(stdout), { calls: 199_991, mode: 2 });
});

test('100,000 calls queued from Array.from all complete, three runs, no crash', { timeout: 900_000 }, async () => {
  for (let runIndex = 0; runIndex < 3; runIndex++) {
    const { stdout } = await run(process.execPath, [child, '100000', 'from'], { timeout: 300_000 });
    assert.deepEqual(JSON.parse(stdout), { settled: 100_000, fulfilled: 100_000 }, `run ${runIndex + 1}`);
  }
});

// Bytes of code by part of a WebAssembly module that still has its name section (the module
// cargo writes, before wasm-bindgen and wasm-opt strip the names): each function body's size,
// named from the "function names" subsection and put into a part by its name. No tool needed.

// Reads an unsigned LEB128 at `at`; returns [value, next offset].
function leb(buf, at) {
  let value = 0;
  let shift = 0;
  for (;;) {
    const byte = buf[at++];
    value += (byte & 0x7f) * 2 ** shift;
    if (byte < 0x80) return [value, at];
    shift += 7;
  }
}

// Skips an import's description (kind byte then its type) and returns the offset after it.
function skipImport(buf, at, kind) {
  if (kind === 0 || kind === 4) return leb(buf, at)[1]; // function: type index; tag: attribute, type
  if (kind === 1) at += 1; // table: element type, then limits
  if (kind === 3) return at + 2; // global: value type, mutability
  const flags = buf[at++];
  [, at] = leb(buf, at);
  return flags & 1 ? leb(buf, at)[1] : at; // limits: min and maybe max
}

/** Every defined function's body size and name: [{ name, bytes }]. */
export function functions(buf) {
  let at = 8;
  let imported = 0;
  let bodies = [];
  const names = new Map();
  while (at < buf.length) {
    const id = buf[at++];
    let size;
    [size, at] = leb(buf, at);
    const end = at + size;
    if (id === 2) { // imports: they come first in the function index space
      let count;
      [count, at] = leb(buf, at);
      for (let i = 0; i < count; i++) {
        for (let s = 0; s < 2; s++) { let n; [n, at] = leb(buf, at); at += n; } // module, field
        const kind = buf[at++];
        if (kind === 0) imported++;
        at = kind === 4 ? leb(buf, at + 1)[1] : skipImport(buf, at, kind);
      }
    } else if (id === 10) { // code
      let count;
      [count, at] = leb(buf, at);
      for (let i = 0; i < count; i++) {
        let n;
        [n, at] = leb(buf, at);
        bodies.push(n);
        at += n;
      }
    } else if (id === 0) { // custom: the "name" section's function names
      let n;
      [n, at] = leb(buf, at);
      const section = buf.toString('utf8', at, at + n);
      at += n;
      while (section === 'name' && at < end) {
        const sub = buf[at++];
        let len;
        [len, at] = leb(buf, at);
        if (sub === 1) {
          let count;
          let p = at;
          [count, p] = leb(buf, p);
          for (let i = 0; i < count; i++) {
            let index;
            let k;
            [index, p] = leb(buf, p);
            [k, p] = leb(buf, p);
            names.set(index, buf.toString('utf8', p, p + k));
            p += k;
          }
        }
        at += len;
      }
    }
    at = end;
  }
  return bodies.map((bytes, i) => ({ name: names.get(imported + i) ?? `func${imported + i}`, bytes }));
}

// The parts, first match wins, tried on names without their crate hashes (`core[c5930c85]::`).
// Code of std or a dependency instantiated on our types (drop glue, `<ours as Trait>::method`)
// is ours; a generic of std instantiated elsewhere is std's.
const OURS = (path) => new RegExp(`^(<|core::ptr::drop_in_place<)?odds_gate::(${path})::`);
export const PARTS = [
  ['simulator (src/core/sim, src/js/model.rs)', /odds_gate::core::sim::|odds_gate::js::model::/],
  ['our core (src/core, src/store)', OURS('core|store')],
  ['bindings (src/js)', OURS('js')],
  ['serde, serde-wasm-bindgen', /serde/],
  ['formatting and panics (core::fmt, core::panicking)', /fmt|panic|flt2dec|unicode|escape_debug|core::str::|slice_(error|index)_fail|unwrap_failed|assert_failed/],
  ['wasm-bindgen glue, js-sys, web-sys, futures', /wasm_bindgen|js_sys|web_sys|externref|Externref|^__wbindgen|^__wbg|^[a-z]+_[A-Za-z]+$|^[a-zA-Z]+$/],
  ['collections, allocator (std alloc, hashbrown, talc)', /hashbrown|alloc::|talc|__rust_(alloc|dealloc|realloc)|core::slice::sort/],
];

/** Bytes of code by part: [[part, bytes, functions]], in PARTS order, then "other". */
export function parts(buf) {
  const sums = new Map([...PARTS.map(([p]) => [p, [0, 0]]), ['other (std, sha2, getrandom, compiler builtins)', [0, 0]]]);
  const other = [...sums.keys()].at(-1);
  for (const { name, bytes } of functions(buf)) {
    const plain = name.replace(/\[[0-9a-f]+\]/g, '');
    const s = sums.get(PARTS.find(([, re]) => re.test(plain))?.[0] ?? other);
    s[0] += bytes;
    s[1] += 1;
  }
  return [...sums].map(([part, [bytes, count]]) => [part, bytes, count]);
}

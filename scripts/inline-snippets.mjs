// Folds wasm-bindgen's snippets (our src/js/*.js, copied to <pkg>/snippets/) into odds_gate.js,
// so importing the package loads three JS modules instead of one per snippet: on a cold start
// every module is a resolve, a file read and a compile in Node's loader (about 4.5 ms for eight
// snippets on Node 20 and 24). Each snippet becomes a function scope, evaluated in the order ES module
// evaluation would have run it, that hands its exports to the import sites; node: imports become
// namespace imports at the top of the file. It understands only the forms our snippets use and
// stops on anything else.
//
// Run as `node scripts/inline-snippets.mjs <dir>` on wasm-bindgen's output directory.
import { readFileSync, writeFileSync, rmSync, existsSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const dir = resolve(process.argv[2] ?? 'pkg');
const main = join(dir, 'odds_gate.js');
const fail = (why) => {
  console.error(`inline-snippets: ${why}`);
  process.exit(1);
};

const NAMED = /^import\s*\{([^}]*)\}\s*from\s*(['"])([^'"]+)\2;?[ \t]*$/gm;
const STAR = /^import\s*\*\s*as\s+([\w$]+)\s+from\s*(['"])([^'"]+)\2;?[ \t]*$/gm;
const names = (list) =>
  list
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((s) => {
      const m = /^([\w$]+)(?:\s+as\s+([\w$]+))?$/.exec(s);
      if (!m) fail(`cannot read import name "${s}"`);
      return m[2] ? `${m[1]}: ${m[2]}` : m[1];
    });

// Builtins: one binding per module at the top of the file.
const builtins = new Map();
const builtin = (spec) => {
  if (!builtins.has(spec)) builtins.set(spec, `__node_${spec.slice(5).replace(/\W/g, '_')}`);
  return builtins.get(spec);
};

// Snippets in evaluation order (depth first, dependencies first, each once).
const order = [];
const seen = new Map();
function load(file) {
  if (seen.has(file)) return seen.get(file);
  if (!existsSync(file)) fail(`missing ${file}`);
  const id = `__snippet_${seen.size}_${file.replace(/^.*\//, '').replace(/\W/g, '_')}`;
  seen.set(file, id);
  let src = readFileSync(file, 'utf8');
  const deps = [];
  const rewrite = (spec, bind) => {
    if (spec.startsWith('node:')) return `const ${bind} = ${builtin(spec)};`;
    if (!spec.startsWith('.')) fail(`${file}: import of "${spec}" (only node: and relative imports)`);
    deps.push(resolve(dirname(file), spec));
    return { spec: resolve(dirname(file), spec), bind };
  };
  const lines = [];
  src = src.replace(NAMED, (_, list, __, spec) => {
    const r = rewrite(spec, `{ ${names(list).join(', ')} }`);
    lines.push(r);
    return `/*import:${lines.length - 1}*/`;
  });
  src = src.replace(STAR, (_, name, __, spec) => {
    const r = rewrite(spec, name);
    lines.push(r);
    return `/*import:${lines.length - 1}*/`;
  });
  for (const d of deps) load(d);
  src = src.replace(/\/\*import:(\d+)\*\//g, (_, i) => {
    const r = lines[i];
    return typeof r === 'string' ? r : `const ${r.bind} = ${seen.get(r.spec)};`;
  });
  const exports = [];
  src = src.replace(/^export\s+((?:async\s+)?function\s*\*?\s*|const\s+|let\s+|class\s+)([\w$]+)/gm, (_, kind, name) => {
    exports.push(name);
    return `${kind}${name}`;
  });
  if (/^\s*(import|export)\b/m.test(src) || /\bimport\s*\(|\bimport\.meta\b/.test(src)) {
    fail(`${file}: an import or export form this script does not fold`);
  }
  order.push({ id, file, body: src, exports });
  return id;
}

let out = readFileSync(main, 'utf8');
const sites = [];
out = out.replace(NAMED, (all, list, _, spec) => {
  if (!spec.startsWith('./snippets/')) return all;
  sites.push(spec);
  return `/*site:${sites.length - 1}:{ ${names(list).join(', ')} }*/`;
});
out = out.replace(STAR, (all, name, _, spec) => {
  if (!spec.startsWith('./snippets/')) return all;
  sites.push(spec);
  return `/*site:${sites.length - 1}:${name}*/`;
});
if (sites.length === 0) fail('odds_gate.js imports no snippets: nothing to fold (already folded?)');
for (const spec of sites) load(join(dir, spec));
out = out.replace(/\/\*site:(\d+):(.*?)\*\//g, (_, i, bind) => `const ${bind} = ${seen.get(join(dir, sites[i]))};`);
if (/^\s*import\b(?!\s*\{[^}]*\}\s*from\s*['"]node:)/m.test(out)) fail('odds_gate.js keeps an import this script does not fold');

const head = [...builtins].map(([spec, name]) => `import * as ${name} from '${spec}';`);
const blocks = order.map(
  ({ id, file, body, exports }) =>
    `// ---- ${relative(dir, file)} ----\nconst ${id} = (() => {\n${body}\nreturn { ${exports.join(', ')} };\n})();`,
);
// The types marker stays the first line.
const first = out.indexOf('\n');
const marker = out.startsWith('/* @ts-self-types') ? out.slice(0, first + 1) : '';
writeFileSync(main, `${marker}${head.join('\n')}\n${blocks.join('\n')}\n${out.slice(marker.length)}`);
rmSync(join(dir, 'snippets'), { recursive: true });
console.log(`inline-snippets: ${order.length} snippets folded into odds_gate.js`);

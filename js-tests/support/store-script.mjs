// A Redis script of src/store as the package loads it: build.rs heads it with the protocol's
// constants it names (src/core/base/protocol.rs, generated into src/js/protocol.js).
import { readFileSync } from 'node:fs';
import * as protocol from '../../src/js/protocol.js';

/** The script `name` (`gate.lua`, ...) headed by the protocol's constants it names. */
export function storeScript(name) {
  const source = readFileSync(new URL(`../../src/store/${name}`, import.meta.url), 'utf8');
  const named = Object.entries(protocol).filter(([n]) => n !== 'PROTOCOL' && new RegExp(`\\b${n}\\b`).test(source));
  if (named.length === 0) return source;
  return `local ${named.map(([n]) => n).join(', ')} = ${named.map(([, v]) => v).join(', ')}\n${source}`;
}

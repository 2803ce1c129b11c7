// What the edge entry's glue gets for `node:crypto`: only the threads' shared cache (arena.js)
// hashes with it, and on the edge there are no threads to share a cache with.
export function createHash() {
  throw new Error('odds-gate: no shared memory on the edge, so nothing to hash');
}

// @ts-check
// The cache shared beyond this thread, for cache.js: the fleet's through the store's Redis
// client (cache.lua, run by the module), or the process's threads' (a cell per request in their
// shared memory, the bytes in its ring). The core decides (shared_cache.rs; cache_cells.rs and
// arena.rs for the threads): what an answer means, how long a claim holds, how long to wait,
// where bytes go and whether they are intact; this file moves bytes. Either side answers `ask`
// with [code, ms] (codes below), a fresh entry as [FRESH, ms fresh left, { since, status,
// statusText, headers, bytes, age, place }] (`place`: the threads' ring holds its bytes, which
// `read` gives again); a side that fails answers ALONE, so a call never fails because the
// shared cache does.
import { current } from './shared_memory.js';
import { ASKED_ALONE as ALONE, ASKED_FRESH as FRESH } from './protocol.js';


/** The shared side of `transport`'s cache, or null when nothing shares it. */
export function shareOf(transport) {
  switch (transport.cacheShared()) {
    case 2: return fleet(transport);
    case 1: return current() === null ? null : threads(transport);
    default: return null;
  }
}

/** `promise`'s value, or `failed` when it fails or takes longer than `ms`. */
function bounded(promise, ms, failed) {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(failed), ms);
    timer.unref?.();
    const done = (value) => {
      clearTimeout(timer);
      resolve(value);
    };
    promise.then(done, () => done(failed));
  });
}

const bytesOf = (chunks) => Buffer.concat(chunks);

function fleet(transport) {
  const wait = transport.cacheStoreWait();
  const FAILED = Symbol('failed');
  const quietly = (promise) => bounded(promise, wait, FAILED);
  return {
    async ask(facts, asked) {
      const r = await quietly(transport.cacheAsk(facts, asked));
      if (r === FAILED) transport.cacheStoreFailed();
      if (!Array.isArray(r)) return [ALONE, 0];
      if (r[0] !== FRESH) return [r[0], r[1]];
      try {
        const entry = { since: r[2], status: r[3], statusText: r[4], headers: JSON.parse(r[5]), bytes: Buffer.from(r[6], 'base64'), age: Number(r[7]) || 0 };
        return [FRESH, r[1], entry];
      } catch {
        return [ALONE, 0];
      }
    },
    put(facts, asked, freshMs, kept, chunks) {
      const body = bytesOf(chunks).toString('base64');
      quietly(transport.cachePut(facts, asked, freshMs, kept.status, kept.statusText, JSON.stringify(kept.headers), body, String(kept.age)));
    },
    release(facts, asked) {
      quietly(transport.cacheRelease(facts, asked));
    },
  };
}

// An entry in the ring: a 4-byte length, then [status, statusText, headers, age] as JSON,
// then the body.
function pack(kept, chunks) {
  const meta = Buffer.from(JSON.stringify([kept.status, kept.statusText, kept.headers, kept.age]));
  const head = Buffer.alloc(4);
  head.writeUInt32BE(meta.byteLength, 0);
  return Buffer.concat([head, meta, ...chunks]);
}

function unpack(bytes) {
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const n = b.readUInt32BE(0);
  const [status, statusText, headers, age] = JSON.parse(b.toString('utf8', 4, 4 + n));
  return { status, statusText, headers, age, bytes: b.subarray(4 + n) };
}

function threads(transport) {
  transport.cacheArenaBound();
  // The request's claim and its bytes' place are the core's (authority/cache_cells.rs and
  // rules/arena.rs, on the shared memory's cells and ring); this side packs and unpacks.
  return {
    async ask(facts, asked) {
      const name = transport.cacheName(facts, asked);
      if (name === '') return [ALONE, 0];
      const [code, ms, since, place, bytes] = transport.cacheClaimCell(name);
      return code === FRESH ? [FRESH, ms, { ...unpack(bytes), since, place }] : [code, ms];
    },
    put(facts, asked, freshMs, kept, chunks) {
      const name = transport.cacheName(facts, asked);
      if (name === '') return undefined;
      const place = transport.cacheArenaKeep(pack(kept, chunks));
      // Without a place (the ring could not take the bytes) the cell is let go, entry-less.
      transport.cacheSettleCell(name, freshMs, place);
      return place.length > 0 ? place : undefined;
    },
    release(facts, asked) {
      const name = transport.cacheName(facts, asked);
      if (name !== '') transport.cacheSettleCell(name, -1, []);
    },
    /** The entry kept at `place` ({ status, statusText, headers, bytes, age }), when the ring still holds it. */
    read(place) {
      const bytes = transport.cacheArenaTake(place);
      return bytes === undefined ? undefined : unpack(bytes);
    },
  };
}

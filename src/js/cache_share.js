// The cache shared beyond this thread, for cache.js: the fleet's through the store's Redis
// client (cache.lua, run by the module), or the process's threads' (a cell per request in their
// shared memory, entries passed along a BroadcastChannel). The core decides (shared_cache.rs,
// and cache_cells.rs for the threads' claims): what an answer means, how long a claim holds, how
// long to wait; this file moves bytes. Either side answers `ask` with [code, ms] (codes below), a fresh
// entry as [FRESH, ms fresh left, { since, status, statusText, headers, bytes, age }]; a side
// that fails answers ALONE, so a call never fails because the shared cache does.
import { BroadcastChannel } from 'node:worker_threads';
import { current, sharedNow } from './shared_memory.js';
// WANT is the threads' own: answered to cache.js as WAIT.
import { ASKED_ALONE as ALONE, ASKED_FRESH as FRESH, ASKED_LEAD as LEAD, ASKED_WAIT as WAIT, ASKED_WANT as WANT } from './protocol.js';


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

const CHANNEL = 'odds-gate/cache/v1';

// Entries fetched by this thread's caches and the other threads', by shared name, while
// fresh: { name, at, until, entry } (put at, fresh until: shared clock). One channel and one
// map per thread, made when a cache first shares with the threads. The core's index
// (arrivals.rs, through `owner`, any of the thread's transports) says which to keep: no more
// than the caches' maxBytes, none past its lifetime, dropped at a wake-up of an unref'd timer.
let arrived = null;
// When this thread last asked the others for an entry's bytes it never received, by name
// (shared clock): until they come or it claims the fetch.
const wanted = new Map();
let channel = null;
let listening = 0; // since when (shared clock) this thread hears the channel
let owner = null;
let sweeper;
let wakeAt = Infinity;

const drop = (names) => {
  for (const name of names) arrived.delete(name);
};

function schedule() {
  const at = owner.cacheArrivedWake();
  if (at < 0 || at >= wakeAt) return;
  clearTimeout(sweeper);
  wakeAt = at;
  sweeper = setTimeout(() => {
    wakeAt = Infinity;
    drop(owner.cacheArrivedSweep(sharedNow()));
    schedule();
  }, Math.max(0, at - sharedNow()) + 1);
  sweeper.unref?.();
}

function arrive(message) {
  // Another thread asks for an entry it never received: whoever holds it fresh posts it again.
  if (typeof message?.want === 'string') {
    const held = arrived.get(message.want);
    if (held !== undefined && owner.cacheArrivedLeft(message.want, sharedNow()) > 0) channel.postMessage(held);
    return;
  }
  const bytes = message?.entry?.bytes?.byteLength;
  if (typeof message?.name !== 'string' || typeof bytes !== 'number' || typeof message.until !== 'number') return;
  arrived.set(message.name, message);
  wanted.delete(message.name);
  drop(owner.cacheArrive(message.name, bytes, message.until, sharedNow()));
  schedule();
}

function threads(transport) {
  if (channel === null) {
    arrived = new Map();
    owner = transport;
    listening = sharedNow();
    channel = new BroadcastChannel(CHANNEL);
    channel.unref();
    channel.onmessage = ({ data }) => arrive(data);
  }
  transport.cacheArrivalsBound();

  // The request's claim is the core's (authority/cache_cells.rs, on the shared memory's
  // cells); this side posts and hears the bytes.
  return {
    async ask(facts, asked) {
      const name = transport.cacheName(facts, asked);
      if (name === '') return [ALONE, 0];
      const [code, ms, now] = transport.cacheClaimCell(name, listening, wanted.get(name) ?? -1);
      if (code === WANT) {
        wanted.set(name, now);
        channel.postMessage({ want: name });
        return [WAIT, ms];
      }
      if (code === LEAD) wanted.delete(name);
      if (code !== FRESH) return [code, ms];
      const here = arrived.get(name);
      return here === undefined ? [ALONE, 0] : [FRESH, ms, { ...here.entry, since: now - here.at }];
    },
    put(facts, asked, freshMs, kept, chunks) {
      const name = transport.cacheName(facts, asked);
      const now = name === '' ? -1 : transport.cacheSettleCell(name, freshMs);
      if (now < 0) return;
      const entry = { status: kept.status, statusText: kept.statusText, headers: kept.headers, bytes: bytesOf(chunks), age: kept.age };
      const message = { name, at: now, until: now + freshMs, entry };
      // This thread's other caches find it here; the other threads', on the channel.
      arrive(message);
      channel.postMessage(message);
    },
    release(facts, asked) {
      const name = transport.cacheName(facts, asked);
      if (name !== '') transport.cacheSettleCell(name, -1);
    },
  };
}

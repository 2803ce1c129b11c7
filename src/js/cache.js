// @ts-check
// One request per snapshot (`createFetch({ cache })`), the JavaScript side. The core decides
// (cache_flow.rs): every call reports to it, and this file performs the actions it answers
// (`run`): it keeps the entries' bytes, makes every caller its own Response, sends, copies,
// asks the shared cache (cache_share.js), and settles each caller's promise once.
import { requestFacts, cacheFacts, callerSignal } from './reads.js';
import * as P from './protocol.js';
import { perRequest } from './requests.js';

const MARK = 'x-odds-gate-cache';
const MARKS = new Map([[P.ACT_HIT, 'hit'], [P.ACT_STALE, 'stale'], [P.ACT_COALESCED, 'coalesced'], [P.ACT_COPY, 'coalesced']]);
const isObject = (v) => v !== null && typeof v === 'object';

/** `clone`'s status, headers and whole body; null when its body is longer than `limit` bytes or cannot be read. */
async function copyOf(clone, limit) {
  const copy = { status: clone.status, statusText: clone.statusText, headers: [...clone.headers], chunks: [], bytes: 0 };
  if (clone.body === null) return copy;
  const reader = clone.body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return copy;
      copy.bytes += value.byteLength;
      if (copy.bytes > limit) {
        reader.cancel().catch(() => {});
        return null;
      }
      copy.chunks.push(value);
    }
  } catch {
    return null;
  }
}

/** A JSON body's `ttl_seconds`, when it says one. */
async function ttlOf(body) {
  try {
    const ttl = JSON.parse(await body.text())?.ttl_seconds;
    return typeof ttl === 'number' ? ttl : undefined;
  } catch {
    return undefined;
  }
}

// Statuses whose Response has no body (the constructor refuses one).
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

/**
 * A kept answer as it is now: here, or (`kept.place`) read again from the threads' ring, which
 * holds its only copy; undefined when the ring no longer holds it.
 */
function now(side, kept) {
  if (kept.place === undefined) return kept;
  const entry = side.share?.read?.(kept.place);
  return entry && { status: entry.status, statusText: entry.statusText, headers: entry.headers, body: entry.bytes };
}

/** A caller's own Response of a kept answer, marked with how it came and its `Age`. */
function answer(kept, mark, age) {
  const headers = new Headers(kept.headers);
  headers.set(MARK, mark);
  headers.set('age', String(age));
  const body = NULL_BODY.has(kept.status) ? null : kept.body;
  return new Response(body, { status: kept.status, statusText: kept.statusText, headers });
}

/** The cache's JavaScript side, one for every wrapper sharing the transport's cache. */
function sideOf(transport) {
  let side = transport.cacheSide();
  if (side === undefined) {
    const shareOf = transport.cacheShareOf();
    const share = shareOf === undefined ? null : shareOf(transport);
    // calls: the callers' promises by the machine's numbers; leaders: what a request led for
    // them holds (its request, signal, response or error, copy); entries: the kept bytes.
    side = { transport, limit: transport.cacheEntryBytes(), share, calls: new Map(), leaders: new Map(), entries: new Map() };
    transport.setCacheSide(side, share !== null);
  }
  return side;
}

/** Call `id`'s caller, taken from those waiting (undefined when it has settled or left). */
function take(side, id) {
  const w = side.calls.get(id);
  if (w === undefined) return undefined;
  side.calls.delete(id);
  w.signal?.removeEventListener('abort', w.onAbort);
  clearInterval(w.keep);
  return w;
}

/** Call `id` settles with `make()`'s Response (or what it throws). */
function settle(side, id, make) {
  const w = take(side, id);
  if (w === undefined) return;
  // Where each request is a context of its own, the caller makes it, in its own (see `cached`).
  if (perRequest()) return w.resolve(make);
  try {
    w.resolve(make());
  } catch (failed) {
    w.reject(failed);
  }
}

/** Call `id` goes to the gate as it is. */
function forward(side, id) {
  const w = take(side, id);
  if (w === undefined) return;
  let sent;
  try {
    sent = w.send(w.input, w.init);
  } catch (error) {
    sent = Promise.reject(error);
  }
  Promise.resolve(sent).then(w.resolve, w.reject);
}

/** What call `id`'s request, led for everyone waiting for it, holds (made when it first leads or asks). */
function leaderOf(side, id) {
  let l = side.leaders.get(id);
  if (l === undefined) {
    const w = side.calls.get(id);
    l = { facts: w.facts, asked: w.asked, input: w.input, init: w.init, send: w.send, controller: new AbortController() };
    side.leaders.set(id, l);
  }
  return l;
}

/** Call `id` sends its request under a signal of its own: it goes on while anyone waits for it. */
function lead(side, id) {
  const l = leaderOf(side, id);
  const own = Object.assign({}, isObject(l.init) ? l.init : undefined, { signal: l.controller.signal });
  let sent;
  try {
    sent = l.send(l.input, own);
  } catch (error) {
    sent = Promise.reject(error); // refused at once: whoever joined hears the same
  }
  const ended = (response, error) => {
    l.response = response;
    l.error = error;
    run(side, side.transport.cacheEnded(id, response, error));
  };
  Promise.resolve(sent).then((response) => ended(response, undefined), (error) => ended(undefined, error));
}

/** Call `id` asks the shared cache for its request; a side that fails answers as one alone. */
function ask(side, id) {
  const l = leaderOf(side, id);
  const asked = (code, ms, entry) => {
    if (entry !== undefined) {
      const { status, statusText, headers, place } = entry;
      // An entry the threads' ring holds is read from it again for each answer, not kept here.
      l.kept = place === undefined ? { status, statusText, headers, body: new Blob([entry.bytes]) } : { place };
      l.chunks = place === undefined ? [entry.bytes] : undefined;
    }
    const bytes = entry === undefined ? -1 : entry.bytes.byteLength;
    const age = entry === undefined ? 0 : entry.age * 1000 + entry.since;
    run(side, side.transport.cacheAsked(id, code, ms, bytes, age));
  };
  let asking;
  try {
    asking = side.share.ask(l.facts, l.asked);
  } catch (error) {
    asking = Promise.reject(error);
  }
  asking.then(([code, ms, entry]) => asked(code, ms, entry), () => asked(0, 0, undefined));
}

/** `leader`'s response: a clone read whole, the response itself to its caller when `give`, else its body cancelled. */
async function copyResponse(side, leader, give, ttl) {
  const l = side.leaders.get(leader);
  const response = l.response;
  let clone;
  try {
    clone = response.clone();
  } catch {
    clone = undefined;
  }
  if (give) settle(side, leader, () => response);
  else response.body?.cancel().catch(() => {});
  const copy = clone === undefined ? null : await copyOf(clone, side.limit);
  let seconds;
  if (copy !== null) {
    const body = new Blob(copy.chunks);
    l.kept = { status: copy.status, statusText: copy.statusText, headers: copy.headers, body };
    l.chunks = copy.chunks;
    if (ttl) seconds = await ttlOf(body);
  }
  const header = (name) => copy?.headers.find(([n]) => n === name)?.[1];
  run(side, side.transport.cacheCopied(leader, copy?.status ?? 0, copy?.bytes ?? 0, copy !== null,
    header('cache-control'), header('expires'), header('date'), header('age'), header('vary'), seconds));
}

/** Performs the core's actions (`words`, four numbers each: cache_flow.rs's `CacheAction::words`). */
export function run(side, words) {
  const { leaders, entries, share } = side;
  for (let i = 0; i < words.length; i += 4) {
    const [code, a, b, c] = [words[i], words[i + 1], words[i + 2], words[i + 3]];
    switch (code) {
      case P.ACT_HIT: case P.ACT_STALE: case P.ACT_COALESCED: case P.ACT_COPY: {
        const kept = code === P.ACT_COPY ? leaders.get(b)?.kept : entries.get(b);
        const got = kept === undefined ? undefined : now(side, kept);
        if (got !== undefined) {
          settle(side, a, () => answer(got, MARKS.get(code), c));
          break;
        }
        // Bytes the ring overwrote: the entry goes, and the call sends its own request.
        if (kept !== undefined && code !== P.ACT_COPY) run(side, side.transport.cacheLost(b, code));
        forward(side, a);
        break;
      }
      case P.ACT_FORWARD: forward(side, a); break;
      case P.ACT_LEAD: lead(side, a); break;
      case P.ACT_ASK: ask(side, a); break;
      case P.ACT_REJECT: {
        const w = take(side, a);
        w?.reject(leaders.get(b)?.error);
        break;
      }
      case P.ACT_TAKE: copyResponse(side, a, b === 1, c === 1); break;
      case P.ACT_KEEP: {
        const kept = leaders.get(b)?.kept;
        if (kept !== undefined) entries.set(a, kept);
        break;
      }
      case P.ACT_DROP: entries.delete(a); break;
      case P.ACT_PUT: {
        const l = leaders.get(a);
        const place = share?.put(l.facts, l.asked, b, { ...l.kept, age: c }, l.chunks);
        // In the threads' ring, the entry counts once for the whole process: read from there.
        if (place !== undefined) {
          for (const field of Object.keys(l.kept)) delete l.kept[field];
          l.kept.place = place;
          l.chunks = undefined;
        }
        break;
      }
      case P.ACT_RELEASE: {
        const l = leaders.get(a);
        share?.release(l.facts, l.asked);
        break;
      }
      case P.ACT_CANCEL: leaders.get(a)?.controller.abort(); break;
      case P.ACT_DISCARD: leaders.get(a)?.response?.body?.cancel().catch(() => {}); break;
      case P.ACT_DONE: leaders.delete(a); break;
    }
  }
}

/** `send` (the wrapper's gated fetch) behind the transport's cache. */
export function cached(transport, send) {
  const side = sideOf(transport);
  return (input, init) => {
    const signal = callerSignal(input, init);
    const facts = requestFacts(input, init);
    const asked = cacheFacts(input, init);
    const out = transport.cacheBegin(facts, asked, signal?.aborted === true);
    const id = out[0];
    // The core's one action for this very call, done at once: its answer from a kept entry, or
    // the gate's own promise.
    if (out.length === 5 && out[2] === id) {
      const code = out[1];
      const answers = code === P.ACT_HIT || code === P.ACT_STALE;
      const kept = answers ? side.entries.get(out[3]) : undefined;
      const got = kept === undefined ? undefined : now(side, kept);
      if (got !== undefined) {
        try {
          return Promise.resolve(answer(got, MARKS.get(code), out[4]));
        } catch (failed) {
          return Promise.reject(failed);
        }
      }
      if (kept !== undefined) run(side, transport.cacheLost(out[3], code));
      if (code === P.ACT_FORWARD || answers) {
        try {
          return send(input, init);
        } catch (error) {
          return Promise.reject(error);
        }
      }
    }
    const waits = new Promise((resolve, reject) => {
      const w = { resolve, reject, input, init, signal, onAbort: undefined, facts, asked, send, keep: undefined };
      // Where each request is a context of its own (requests.js), a caller waiting for another
      // request's answer keeps a timer of its own request, or the runtime calls it hung.
      if (perRequest()) w.keep = setInterval(() => {}, 1_000);
      side.calls.set(id, w);
      if (signal && !signal.aborted) {
        w.onAbort = () => {
          if (take(side, id) === undefined) return;
          reject(signal.reason);
          run(side, transport.cacheLeave(id));
        };
        signal.addEventListener('abort', w.onAbort, { once: true });
      }
      run(side, out.slice(1));
    });
    // A Response made in one request's context cannot be read in another's (workerd): where each
    // request is one, the caller's own continuation makes its Response from the kept bytes.
    return perRequest() ? waits.then((got) => (typeof got === 'function' ? got() : got)) : waits;
  };
}

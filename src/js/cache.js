// One request per snapshot (`createFetch({ cache })`), the JavaScript side. The core decides
// (cache.rs asks its rules which GETs join a request in flight, which a fresh entry answers,
// which a stale one answers instead of the gate's hold or refusal, how long an answer is kept
// and which entries go); this file keeps the entries' bytes, makes every caller its own
// Response, and passes aborts on. A call that is not a GET without a body goes to the gate as
// it is. When the cache is shared (cache_share.js: the process's threads, or the fleet through
// the store), a call that would lead a request asks there first.
import { requestFacts, cacheFacts, callerSignal } from './reads.js';
import { FRESH, LEAD, WAIT } from './cache_share.js';

const MARK = 'x-odds-gate-cache';
const isObject = (v) => v !== null && typeof v === 'object';

/** `response`'s status, headers and whole body, read from a clone (the caller's is left unread); null when its body is longer than `limit` bytes or cannot be read. */
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

/** A JSON body's `ttl_seconds`, when it is JSON and says one. */
function ttlOf(copy, body) {
  const type = copy.headers.find(([name]) => name === 'content-type')?.[1] ?? '';
  if (!type.includes('json')) return Promise.resolve(undefined);
  return body.text().then((text) => {
    try {
      const ttl = JSON.parse(text)?.ttl_seconds;
      return typeof ttl === 'number' ? ttl : undefined;
    } catch {
      return undefined;
    }
  });
}

// Statuses whose Response has no body (the constructor refuses one).
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

/** A caller's own Response of an answer the cache holds, marked with how it came (`hit`, `coalesced`, `stale`) and its age. */
function answer(kept, mark, now) {
  const headers = new Headers(kept.headers);
  headers.set(MARK, mark);
  headers.set('age', String(kept.age + Math.floor(Math.max(0, now - kept.at) / 1000)));
  const body = NULL_BODY.has(kept.status) ? null : kept.body;
  return new Response(body, { status: kept.status, statusText: kept.statusText, headers });
}

/** The cache's JavaScript side, one for every wrapper sharing the transport's cache. */
function sideOf(transport) {
  let side = transport.cacheSide();
  if (side === undefined) {
    const shareOf = transport.cacheShareOf();
    const share = shareOf === undefined ? null : shareOf(transport);
    side = { entries: new Map(), waiters: new Map(), requests: new Map(), last: 0, share };
    transport.setCacheSide(side);
  }
  return side;
}

/** `send` (the wrapper's gated fetch) behind the transport's cache. */
export function cached(transport, send) {
  const limit = transport.cacheEntryBytes();
  const side = sideOf(transport);
  const { entries, waiters, requests, share } = side;

  // The waiter `id` gets its answer (`how` does it) once, unless it left.
  const take = (id) => {
    const w = waiters.get(id);
    if (w === undefined) return undefined;
    waiters.delete(id);
    w.signal?.removeEventListener('abort', w.onAbort);
    return w;
  };

  // A landing `out` (the core's Settled::words: [kept, ms to share for, n, n entries to drop,
  // m, m calls that send their own, calls...]): drops and keeps what it says; every call that
  // sends its own does; the calls to answer.
  const store = (out, kept) => {
    for (let i = 0; i < out[2]; i++) entries.delete(out[3 + i]);
    if (out[0] > 0 && kept !== null) entries.set(out[0], kept);
    const m = out[3 + out[2]];
    for (const call of out.slice(4 + out[2], 4 + out[2] + m)) {
      const w = take(call);
      if (w !== undefined) send(w.input, w.init).then(w.resolve, w.reject);
    }
    return out.slice(4 + out[2] + m);
  };

  // Waiter `w` gets its own Response of `kept`, marked `mark`.
  const give = (w, kept, mark, now) => {
    try {
      w.resolve(answer(kept, mark, now));
    } catch (failed) {
      w.reject(failed); // settled all the same, and the others after it too
    }
  };

  const leave = (id, reason) => {
    const w = take(id);
    if (w === undefined) return;
    w.reject(reason);
    const cancel = transport.cacheLeave(id);
    if (cancel >= 0) requests.get(cancel)?.abort(reason);
  };

  // The gate refused the request: `out` (cacheRefused's) names the stale entry that answers
  // instead and the calls it answers; the refusal's own answer, if any, goes unread.
  const refused = (facts, asked, out, response, error) => {
    response?.body?.cancel().catch(() => {});
    share?.release(facts, asked);
    const kept = entries.get(out[0]);
    const now = performance.now();
    for (let i = 1; i < out.length; i++) {
      const w = take(out[i]);
      if (w === undefined) continue;
      if (kept === undefined) {
        if (response === undefined) w.reject(error);
        else send(w.input, w.init).then(w.resolve, w.reject);
        continue;
      }
      give(w, kept, 'stale', now);
    }
  };

  // The request `id` leads has landed as `response` (or failed with `error`): who else waited
  // gets a copy (or, when its body could not be copied, sends its own), and what is kept is kept.
  // A rejection, or an answer the gate marked (x-odds-gate), may be the gate's refusal: the
  // core says whether a stale entry answers instead.
  const landed = async (id, facts, asked, response, error) => {
    if (response === undefined || response?.headers?.has?.('x-odds-gate')) {
      const out = transport.cacheRefused(id, facts, asked, response ?? error);
      if (out.length > 0) return refused(facts, asked, out, response, error);
    }
    let copy = null;
    let body = null;
    let ttl;
    if (response !== undefined) {
      let clone;
      try {
        clone = response.clone();
      } catch {
        clone = undefined;
      }
      const leader = take(id);
      // A leader that left never sees its response: its body goes (the copy reads on).
      if (leader !== undefined) leader.resolve(response);
      else response.body?.cancel().catch(() => {});
      copy = clone === undefined ? null : await copyOf(clone, limit);
      if (copy !== null) {
        body = new Blob(copy.chunks);
        if (copy.status === 200) ttl = await ttlOf(copy, body);
      }
    }
    const header = (name) => copy?.headers.find(([n]) => n === name)?.[1];
    const out = transport.cacheLanded(id, facts, asked, copy?.status ?? 0, copy?.bytes ?? 0, copy !== null,
      header('cache-control'), header('expires'), header('date'), header('age'), header('vary'), ttl);
    const now = performance.now();
    const kept = copy === null ? null : {
      status: copy.status, statusText: copy.statusText, headers: copy.headers, body, at: now,
      age: Number.parseInt(header('age') ?? '0', 10) || 0,
    };
    const calls = store(out, kept);
    // What others may take from the shared cache: what the core says to share; else the claim
    // goes.
    if (out[1] > 0 && kept !== null) share?.put(facts, asked, out[1], kept, copy.chunks);
    else share?.release(facts, asked);
    for (const call of calls) {
      const w = take(call);
      if (w === undefined) continue;
      if (response === undefined) w.reject(error);
      else if (kept === null) send(w.input, w.init).then(w.resolve, w.reject);
      else give(w, kept, 'coalesced', now);
    }
  };

  // The shared cache answered the request `id` was to lead with `entry`, fresh `left` ms more,
  // after it `waited` for another's request or not: it is kept here too, and answers every call
  // waiting (the leader's a hit, unless it waited: then it joined that request).
  const arrived = (id, facts, asked, left, entry, waited) => {
    requests.delete(id);
    const out = transport.cacheSharedLanded(id, facts, asked, entry.bytes.byteLength, left, waited);
    const now = performance.now();
    const { status, statusText, headers, age } = entry;
    const kept = { status, statusText, headers, body: new Blob([entry.bytes]), at: now - entry.since, age };
    for (const call of store(out, kept)) {
      const w = take(call);
      if (w !== undefined) give(w, kept, call === id && !waited ? 'hit' : 'coalesced', now);
    }
  };

  // The request `id` leads goes to the shared cache first: a fresh entry there answers; else
  // this call claims the fetch and leads, or waits for whoever holds it, asking again after
  // the core's backoff, and leads when the claim ends or it waited long enough. When everyone
  // left meanwhile (the controller aborted), it stops.
  const ask = async (id, input, init, facts, asked) => {
    const controller = new AbortController();
    requests.set(id, controller);
    const began = performance.now();
    for (let polls = 0; ; polls++) {
      const [code, ms, entry] = await share.ask(facts, asked);
      if (controller.signal.aborted) {
        requests.delete(id);
        if (code === LEAD) share.release(facts, asked);
        return;
      }
      if (code === FRESH) return arrived(id, facts, asked, ms, entry, polls > 0);
      const delay = code === WAIT ? transport.cacheFollow(performance.now() - began, polls, ms) : -1;
      if (delay < 0) return lead(id, input, init, facts, asked, controller);
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  };

  const lead = (id, input, init, facts, asked, controller = new AbortController()) => {
    // The request goes out under a signal of its own: it goes on while anyone waits for it.
    requests.set(id, controller);
    const own = Object.assign({}, isObject(init) ? init : undefined, { signal: controller.signal });
    let sent;
    try {
      sent = send(input, own);
    } catch (error) {
      sent = Promise.reject(error); // refused at once: whoever joined hears the same
    }
    sent.then(
      (response) => landed(id, facts, asked, response),
      (error) => landed(id, facts, asked, undefined, error),
    ).finally(() => requests.delete(id));
  };

  return (input, init) => {
    const signal = callerSignal(input, init);
    if (signal?.aborted) return send(input, init);
    side.last = side.last >= 0xfffffffe ? 1 : side.last + 1;
    const id = side.last;
    const facts = requestFacts(input, init);
    const asked = cacheFacts(input, init);
    const step = transport.cacheLookup(facts, asked, id);
    if (step === -2) return send(input, init);
    if (step > 0 || step <= -3) {
      // A fresh entry (`step`), or a stale one (`-2 - step`) the gate would hold or refuse.
      const kept = entries.get(step > 0 ? step : -2 - step);
      if (kept !== undefined) return Promise.resolve(answer(kept, step > 0 ? 'hit' : 'stale', performance.now()));
      return send(input, init);
    }
    return new Promise((resolve, reject) => {
      const w = { resolve, reject, input, init, signal, onAbort: undefined };
      if (signal) {
        w.onAbort = () => leave(id, signal.reason);
        signal.addEventListener('abort', w.onAbort, { once: true });
      }
      waiters.set(id, w);
      if (step === -1 && share === null) lead(id, input, init, facts, asked);
      // A shared cache that throws before it answered is one that does not answer.
      else if (step === -1) ask(id, input, init, facts, asked).catch(() => requests.has(id) && lead(id, input, init, facts, asked));
    });
  };
}

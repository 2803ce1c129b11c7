// The load of one contender in bench/no-harm.mjs: `calls` calls taken in turn by `workers` workers
// (workers = calls: every call starts at time 0), each call's start, end and outcome recorded,
// cut off at capS. Three kinds of call, each with the app's own retries as bench/learn.mjs's
// workers do them (a 429 waits its Retry-After, or 1 s; a 503 100 ms; at most MAX_ATTEMPTS):
//   raw: GET the snapshot with fetch's (input, init) (learn.mjs's getWithRetries);
//   sdk: getOddsSnapshot of an SDK-shaped client (js-tests/support/sdk-client.mjs) whose
//        fetchImpl is the contender's: the app sees OddsApiError's status, never a header, so a
//        429 waits 1 s (the server's Retry-After, which the SDK hides);
//   once: one call of the contender's fetchImpl, no retry of the app's; its refusal
//        (GateAbandonedError) is the outcome. The AWS limiter has no wait bound: the app gives
//        up at maxWaitMs after the call itself (a refusal too), with raw's retries until then.
import { setMaxListeners } from 'node:events';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleepFor } from 'node:timers/promises';
import { OddsApiClient, OddsApiError } from '../../js-tests/support/sdk-client.mjs';
import { DRAIN_MS, MAX_ATTEMPTS, RETRY_AFTER_S, getWithRetries } from '../learn.mjs';
import { finishOrCutOff } from './util.mjs';

export const UNAVAILABLE_WAIT_S = 0.1; // the AWS SDK's base retry delay, as learn-matrix.mjs
const RETRIED = { 429: RETRY_AFTER_S, 503: UNAVAILABLE_WAIT_S };

const bump = (errors, what) => { errors[what] = (errors[what] ?? 0) + 1; };
const errorText = (err) => `${err?.name ?? 'Error'}: ${String(err?.message ?? err).split('\n')[0].slice(0, 120)}`;

// The AWS limiter as a fetchImpl: a token before the attempt, the answer or failure told after.
export const limitedFetch = (limiter) => async (url, init) => {
  await limiter.getSendToken();
  let res;
  try {
    res = await fetch(url, init);
  } catch (err) {
    limiter.updateClientSendingRate(err);
    throw err;
  }
  limiter.updateClientSendingRate(res);
  return res;
};

// kind -> (contender { fetchImpl, limiter? }, { baseUrl, apiKey, signal, errors, maxWaitMs })
// -> (eventId) => Promise<{ done } | { refused, reason? } | {}>
const KINDS = {
  raw: (c, { baseUrl, apiKey, signal, errors }) => async (id) => ({
    done: await getWithRetries(c, snapshotUrl(baseUrl, id), {
      headers: headersOf(apiKey), signal, maxCalls: MAX_ATTEMPTS, errors, retried: RETRIED,
    }),
  }),
  sdk: (c, { baseUrl, apiKey, signal, errors }) => {
    const inner = c.limiter ? limitedFetch(c.limiter) : c.fetchImpl;
    // The signal only ends the run at its cut-off; the SDK itself passes none.
    const client = new OddsApiClient({ apiKey, baseUrl, fetchImpl: (url, init) => inner(url, { ...init, signal }) });
    return async (id) => {
      for (let n = 0; n < MAX_ATTEMPTS && !signal.aborted; n++) {
        try {
          await client.getOddsSnapshot(id);
          return { done: true };
        } catch (err) {
          if (signal.aborted) break;
          const waitS = err instanceof OddsApiError ? RETRIED[err.status] : RETRY_AFTER_S;
          if (!(err instanceof OddsApiError)) bump(errors, errorText(err)); // as getWithRetries counts them
          if (waitS === undefined) { bump(errors, `status ${err.status}`); break; }
          await sleepFor(waitS * 1000, undefined, { signal }).catch(() => {});
        }
      }
      return { done: false };
    };
  },
  once: (c, { baseUrl, apiKey, signal, errors, maxWaitMs }) => async (id) => {
    const url = snapshotUrl(baseUrl, id);
    if (c.limiter) {
      // The limiter's wait for a token takes no signal: the app stops waiting for the call at
      // its bound, and the call sends nothing after it (getWithRetries looks at the signal).
      // A timer of our own: Node 20 can collect AbortSignal.any's timeout signal before it fires.
      const bound = new AbortController();
      const givenUp = new Promise((resolve) => bound.signal.addEventListener('abort', () => resolve(false), { once: true }));
      const timer = setTimeout(() => bound.abort(), maxWaitMs);
      const stop = () => bound.abort();
      signal.addEventListener('abort', stop, { once: true });
      try {
        const calling = getWithRetries(c, url, { headers: headersOf(apiKey), signal: bound.signal, maxCalls: MAX_ATTEMPTS, errors, retried: RETRIED });
        const done = await Promise.race([calling, givenUp]);
        return done ? { done } : { refused: bound.signal.aborted && !signal.aborted, reason: 'the app\'s own bound' };
      } finally {
        clearTimeout(timer);
        signal.removeEventListener('abort', stop);
      }
    }
    try {
      const res = await c.fetchImpl(url, { headers: headersOf(apiKey), signal });
      await res.arrayBuffer();
      if (res.status === 200) return { done: true };
      bump(errors, `status ${res.status}`);
    } catch (err) {
      if (err?.name === 'GateAbandonedError') return { refused: true, reason: err.reason };
      if (!signal.aborted) bump(errors, errorText(err));
    }
    return {};
  },
};
const snapshotUrl = (baseUrl, id) => `${baseUrl}/events/${encodeURIComponent(id)}/odds/snapshot`;
const headersOf = (apiKey) => ({ 'X-API-Key': apiKey, Accept: 'application/json' });

// Runs one contender's load; wall time counts from t0 (the run's common start) to the last call
// settled, Infinity when cut off.
export async function runLoad(c, { kind, baseUrl, apiKey, t0, calls, workers = calls, capS, maxWaitMs }) {
  const stop = new AbortController();
  setMaxListeners(0, stop.signal); // every call's fetch and sleep listens to it
  const cap = setTimeout(() => stop.abort(), capS * 1000);
  const errors = {};
  const call = KINDS[kind](c, { baseUrl, apiKey, signal: stop.signal, errors, maxWaitMs });
  const records = [];
  let next = 0;
  const worker = async () => {
    while (next < calls && !stop.signal.aborted) {
      const i = next++;
      const startMs = performance.now() - t0;
      const out = await call(`evt-${i}`);
      records.push({ i, startMs, endMs: performance.now() - t0, cut: !out.done && stop.signal.aborted, ...out });
    }
  };
  const runs = Array.from({ length: Math.min(workers, calls) }, worker);
  const { endedAt, drained } = await finishOrCutOff(runs, stop, cap, DRAIN_MS);
  const timedOut = stop.signal.aborted;
  return {
    records,
    errors,
    done: records.filter((r) => r.done).length,
    refused: records.filter((r) => r.refused).length,
    failed: records.filter((r) => !r.done && !r.refused && !r.cut).length,
    timedOut,
    stuck: !drained,
    wallS: !timedOut && endedAt !== null ? (endedAt - t0) / 1000 : Infinity,
  };
}

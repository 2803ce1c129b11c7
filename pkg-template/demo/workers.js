// The article's naive worker pool: every worker fires at once and, on a 429,
// sleeps a fixed delay and tries again. Counts are client-side.
// Shipped in the package for the demo; js-tests/support/workers.mjs re-exports it.
import { setTimeout as sleep } from 'node:timers/promises';
import { performance } from 'node:perf_hooks';
import { OddsApiClient, OddsApiError } from './sdk-client.js';

export async function runWorkers({
  fetchImpl, baseUrl, apiKey, workers = 8, retryDelayMs = 1000, maxAttempts = 20, timeoutMs = 30000,
}) {
  const client = new OddsApiClient({ apiKey, baseUrl, fetchImpl });
  const counts = { attempts: 0, throttled: 0, completed: 0, failed: 0 };
  const started = performance.now();
  let stopped = false; // set on timeout so stray workers stop retrying

  const worker = async (i) => {
    for (let n = 0; n < maxAttempts && !stopped; n++) {
      counts.attempts++;
      try {
        await client.getOddsSnapshot(`evt-${i}`);
        counts.completed++;
        return;
      } catch (err) {
        if (!(err instanceof OddsApiError && err.status === 429)) break;
        counts.throttled++;
        if (n + 1 < maxAttempts) await sleep(retryDelayMs);
      }
    }
    counts.failed++;
  };

  const timeout = new AbortController();
  const all = Promise.all(Array.from({ length: workers }, (_, i) => worker(i)));
  const timer = sleep(timeoutMs, undefined, { signal: timeout.signal }).then(() => {
    stopped = true;
    throw new Error(`runWorkers timed out after ${timeoutMs} ms`);
  });
  timer.catch(() => {}); // the abort on success rejects too; nobody needs that
  try {
    await Promise.race([all, timer]);
  } finally {
    timeout.abort();
  }
  return { ...counts, wallMs: Math.round(performance.now() - started) };
}

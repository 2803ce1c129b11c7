// @ts-check
// describe(): the checklist's configuration summary, worded here from the facts the bindings
// pass (`rate` (null when learned without a ceiling), `learn`, `threads`, `waiting`, `metrics`,
// the core's `limits`, and `store`, `retry`, `budget`, `sharedMemory` (the threads' table), `lane` (a
// lane's name and weight), `cache` (its settings), `spread` (quota.spread's settings and stated
// costs) when there),
// so the sentences live in JavaScript rather than in the wasm module. `text` is one line per
// field, under the labels the checklist uses.

const LABELS = [
  ['scope', 'scope'], ['store', 'store'], ['admission', 'admission'], ['feedback', 'feedback'],
  ['retry', 'retry'], ['backoff', 'backoff'], ['bounds', 'bounds'], ['waiting', 'waiting'], ['lane', 'lane'], ['retryBudget', 'retry budget'],
  ['quota', 'quota'], ['spread', 'spread'], ['cache', 'cache'], ['metrics', 'metrics'], ['learned', 'learned'],
];

/** A Redis store, in one queue (`spreads`: with quota.spread, whose pace is shared the same way). */
const shared = ({ prefix, settings: s }, spreads) => `shared across processes through Redis (keys ${prefix}:{scope}:gate, Redis TIME as the clock); `
  + `if Redis does not answer within ${s.timeoutMs} ms, ${s.onFailure === 'local'
    ? `each process admits alone at ${s.localShare * 100}% of the allowance${spreads ? ' and of the spread\'s pace (told to Redis when it answers again)' : ''}`
    : 'calls fail with GateAbandonedError (store-unavailable)'}, `
  + `and Redis is asked again after ${s.retryMs} ms`;

/** The summary object, with its `text`. */
// Who shares the cache (the core's shared_cache::Sharing): its words.
const sharedBy = (store, threads) => (store
  ? 'across the fleet sharing the store (shared: the fleet): a process that misses asks Redis, where entries live with their lifetime and staleForMs; the first to ask claims the fetch for a lease and the others wait for its answer, polling with a short backoff, then fetch themselves when the lease ends; a store that does not answer leaves each process its own cache'
  : threads
    ? 'in this process, its worker threads included (shared: threads): a claim per request in the threads\' shared memory, the first thread to miss fetches and the others wait for its answer, whose bytes the threads keep once, in a ring in that memory (checked at every read, the oldest overwritten first)'
    : 'in this thread (shared: no; threads: false)');

// Who shares the spread's bucket: whoever shares the key's gate.
const spreadBy = (store, threads) => (store
  ? 'shared by the fleet through the store'
  : threads ? 'shared by every thread of the process' : "this thread's gates only (threads: false)");

export function summary({ rate, learn, store, threads, sharedMemory, retry, budget, waiting, metrics, lane, learned, limits, cache, spread }) {
  const s = { rate, learn };
  s.scope = 'one gate per credential (SHA-256 of X-API-Key, else Authorization), shared by every wrapper in the process';
  s.store = store ? shared(store, Boolean(spread)) : (threads
    ? 'in-process memory shared by every thread of the process (SharedArrayBuffer): one allowance per process, worker threads included; other processes have their own'
      + `; a slot per key, ${sharedMemory.slots} now, at most ${sharedMemory.most} (the table doubles while busy keys need more; an idle key's slot goes to the next)`
      + (sharedMemory.alone ? `; ${sharedMemory.alone} of this wrapper's keys found all ${sharedMemory.most} busy and keep${sharedMemory.alone === 1 ? 's' : ''} an allowance of their own in this thread (stats().gates[i].store.threads false)` : '')
    : 'in-process memory of this thread only (threads: false); other threads and processes have their own allowance');
  const held = retry ? [retry.backoff.baseMs, retry.backoff.capMs] : [limits.probeBaseMs, limits.probeCapMs];
  s.admission = `cooldown first, then token bucket; in call order (a retry keeps its place); one timer for every gate; refill after a burst timed from its first response; half rate while others drain the key (remaining < ${limits.lowRemaining * 100}% of limit); failures in a row (5xx, network failures, timeouts) hold the whole gate as a cooldown, uniform(0, min(${held[1]} ms, ${held[0]} ms * 2^(n-1))) for the n-th that holds (Retry-After instead when given): each before the server's first answer, after it each past the first ${limits.failuresTolerated} of a run`;
  s.feedback = retry
    ? 'Retry-After (seconds or HTTP-date) on 429/503 is the shared cooldown, extended never shortened; X-RateLimit-* and IETF RateLimit/RateLimit-Policy read on every response'
    : 'Retry-After (seconds or HTTP-date) on a 429 is the shared cooldown, extended never shortened; its X-RateLimit-* recorded; other responses are not read';
  if (retry) {
    s.retry = `on for ${retry.rules.statuses.join(', ')} and network failures / per-attempt timeouts (${retry.attemptTimeoutMs} ms); methods ${retry.rules.methods.join(', ')}, or any with an Idempotency-Key`;
    s.backoff = `Retry-After exactly when given; otherwise full jitter: uniform(0, min(${retry.backoff.capMs} ms, ${retry.backoff.baseMs} ms * 2^n))`;
    s.bounds = `${retry.maxAttempts} attempts per call, ${retry.timeBudgetMs} ms of retrying per call from its first send (never past the caller's AbortSignal)`;
  } else {
    s.retry = 'off: observe and admit only; the response goes back as it is';
  }
  const most = waiting.maxWaiting === null ? 'no limit to the queue' : `at most ${waiting.maxWaiting} calls in the queue (more are refused: queue-full)`;
  s.waiting = waiting.maxWaitMs === null
    ? `a call waits its turn however long the queue (no maxWaitMs); ${most}`
    : `a call predicted to wait more than ${waiting.maxWaitMs} ms is refused at once (queue-wait); ${most}`;
  if (lane !== undefined) {
    s.lane = `lane "${lane.name}", of weight ${lane.weight}: its calls wait in a queue of their own, and while other lanes' calls wait on the same gate the admissions go to the lanes in proportion to their weights (the wrapper's own calls: weight 1); a lane with nothing waiting lends its share${lane.reserve ? '; when the spread has no credit for the call up next, its calls go first with credits from the reserve, never past the limit' : ''}`;
  }
  s.retryBudget = budget
    ? `shared per gate: ${budget.capacity} tokens, a 429 retry costs ${budget.throttleCost}, a transient one ${budget.transientCost}, success refunds the retry's cost (+${budget.successRefill} for a first-time success); batch({ retryBudget }) adds a fixed allowance per round`
    : 'none';
  s.quota = `a 429 naming the quota, or ${limits.suspiciousRun} bare 429s in a row, triggers one GET /usage per gate, through its queue (after an answer that confirms nothing, the next waits ${limits.probeBaseMs / 1000} s, doubling to ${limits.probeCapMs / 1000} s); nothing else in the queue is sent until it answers; used >= limit ends calls at once, unsent, with the server's quota 429 given again (x-odds-gate: quota-exhausted; QuotaExhaustedError with typedErrors) until the period ends or resetQuota(); GET /usage and /limits are never refused for the quota`;
  if (spread) {
    const costs = spread.costs.map(([pattern, credits]) => `${pattern}: ${credits}`).join(', ');
    s.spread = `the key's credits paced to the end of its billing period: GET /usage on its first call and every ${spread.refreshMs} ms; `
      + `a call waits, as for a token, for its credits from a bucket refilling at (limit x (1 - ${spread.reserve}) - used) / (period end - now) per ms, less what others spend, `
      + `holding at most ${spread.burstMs} ms of refill and 5% of what is left; ${spread.reserve * 100}% of the limit kept in reserve; `
      + `credits per call ${costs ? `stated for ${costs}, ` : ''}${store || threads
        ? 'else 1 times a scale the readings teach (one for every route not stated, the calls of all who share the spread counted together), a reading due a second after the first once 10 credits were asked'
        : 'else learned per route from the readings, 1 until known, a reading due a second after the last once 5 calls of routes not yet measured went'}; ${spreadBy(store, threads)}`;
  }
  if (cache) {
    s.cache = `one request per snapshot ${sharedBy(store, threads)}: a GET without a body identical to one in flight (credential, URL, Accept) joins it; `
      + `a 200 is answered again without a request while fresh, for its Cache-Control (no-store, no-cache, max-age), else Expires and Age, else its JSON body's ttl_seconds, else ${cache.defaultTtlMs} ms; `
      + `bodies up to ${cache.maxEntryBytes} bytes kept, ${cache.maxBytes} in all, least recently used first out; `
      + (cache.staleForMs > 0
        ? `past its lifetime an entry answers for ${cache.staleForMs} ms more the calls the gate would hold in a cooldown or refuse (spent quota, queue-wait, credit-wait, queue-full, deadline, store-unavailable, retry-after-exceeds-deadline); `
        : 'no stale answers (staleForMs 0); ')
      + 'answers from it carry x-odds-gate-cache: hit | coalesced | stale and an Age';
  }
  s.metrics = 'stats(): requests, admitted, waiting, peakWaiting, abandonedInQueue, throttled, retries by cause, abandoned by reason, quota, retry budget, admission-wait and backoff histograms, what was learned; onEvent: throttled, retry, abandoned, quota-probe, learned, store-down/up, shared-memory-full';
  if (metrics) s.metrics += '; OpenTelemetry: the odds_gate.* counters, gauges and histograms on the given meter';
  if (learn) {
    const round = (n) => Number(n.toFixed(3));
    s.learned = learned.length === 0 ? 'nothing yet (no answer so far)' : learned.map(({ scope, learned: l }) => `${scope}: `
      + `${l.burst === null ? 'burst not learned (paced one at a time)' : `burst ${l.burst}`} at ${round(l.perSecond)} per second `
      + `(at least ${round(l.atLeast)}, confidence ${round(l.confidence)}; last 429 ${l.lastThrottle ? l.lastThrottle.toISOString() : 'never'})`).join('; ');
  }
  const lines = [learn
    ? `bucket: learned per credential from the responses${rate ? `, never above burst ${rate.burst} at ${rate.perSecond} per second` : ''}: one request in flight until the first answer; X-RateLimit-Limit is the burst, X-RateLimit-Remaining the tokens there now and, over time, a lower bound on the refill rate the pace follows; without them, the requests in flight grow with each answer until a 429, then the pace starts at 1 per second doubling each second until the next, and from then on each 429 cuts it to ${limits.learnCut}x and each success raises it a little; only answers that took a token raise it, and threads and processes sharing the gate follow one estimate; one gate per limiter (X-RateLimit-Bucket), up to ${limits.maxLimiters} limiters beside the first and ${limits.maxRoutes} routes per credential (the limiters past them share one more gate, which learns from any of their answers); an idle gate is forgotten and its estimate kept (for up to ${limits.maxRemembered} forgotten gates per thread, the oldest dropped first; a store keeps the fleet's), so a key that returns goes on from it (stats().gates[i].learned shows the estimate)`
    : `bucket: burst ${rate.burst} at ${rate.perSecond} per second, per credential (set it to the provider's allowance for the key)`,
  ];
  for (const [key, label] of LABELS) if (key in s) lines.push(`${label}: ${s[key]}`);
  s.text = `odds-gate configuration\n- ${lines.join('\n- ')}`;
  return s;
}

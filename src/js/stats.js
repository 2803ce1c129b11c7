// stats(), built in JavaScript from one array of numbers (figures.rs writes them, in the order
// read here) and one string of '\0'-separated texts: a call per stats(), not a call per figure,
// so thousands of gates cost milliseconds. NaN stands for null.

const orNull = (n) => (Number.isNaN(n) ? null : n);

/**
 * `numbers`: [gates, admitted, waiting, throttled, retries, abandoned], then per gate the
 * figures below; `strings`: per gate its scope, its store, the last feedback's bucket;
 * `reasons`: the abandonment reasons, '\0'-separated; `bounds`: the histograms' bucket bounds.
 */
export function buildStats(numbers, strings, reasons, bounds) {
  const names = reasons.split('\0');
  const texts = strings.split('\0');
  let at = 0;
  const next = () => numbers[at++];
  const histogram = () => {
    const h = { count: next(), sumMs: next(), maxMs: next(), buckets: [] };
    for (let i = 0; i <= bounds.length; i++) h.buckets.push({ leMs: i < bounds.length ? bounds[i] : Infinity, count: next() });
    return h;
  };
  const [count, admitted, waiting, throttled, retries, abandoned] = [next(), next(), next(), next(), next(), next()];
  const gates = [];
  for (let g = 0; g < count; g++) {
    const [scope, store, bucket] = texts.slice(3 * g, 3 * g + 3);
    const gate = { scope };
    gate.requests = next(); gate.admitted = next(); gate.waiting = next(); gate.peakWaiting = next();
    gate.cancelled = next(); gate.expired = next(); gate.throttled = next(); gate.wakeups = next();
    gate.timerArmed = next() === 1;
    gate.cooldownUntil = next(); gate.cooldownRemainingMs = next();
    gate.slow = next() === 1;
    gate.retries = { throttled: next(), serverError: next(), network: next(), timeout: next() };
    gate.abandoned = {};
    for (const reason of names) gate.abandoned[reason] = next();
    gate.quotaRejected = next();
    const state = ['open', 'probing', 'exhausted'][next()];
    const end = orNull(next());
    gate.quota = { state, periodEnd: end === null ? null : new Date(end) };
    gate.retryBudget = orNull(next());
    gate.rate = { burst: next(), perSecond: next() };
    const [calls, failures, up] = [next(), next(), next()];
    gate.store = Number.isNaN(calls) ? { kind: store } : { kind: store, calls, failures, up: up === 1 };
    gate.admissionWaitMs = histogram();
    gate.backoffMs = histogram();
    const seen = next() === 1;
    const feedback = { retryAfterMs: orNull(next()), limit: orNull(next()), remaining: orNull(next()), resetMs: orNull(next()), bucket: bucket || null };
    gate.lastFeedback = seen ? feedback : null;
    gates.push(gate);
  }
  return { admitted, waiting, throttled, retries, abandoned, gates };
}

// @ts-check
// OpenTelemetry metrics for a wrapper made with `createFetch({ meter })`. Nothing here imports
// @opentelemetry/api: the caller's Meter is used as it is, so a wrapper without one loads
// nothing. Names follow OTel's rules (lower case, dot-separated namespace, UCUM units, seconds
// for durations, no `_total` suffix: exporters add their own); README's "Metrics" lists them.

const METHODS = ['createHistogram', 'createObservableCounter', 'createObservableGauge', 'addBatchObservableCallback', 'removeBatchObservableCallback'];

const SCOPE = 'odds_gate.scope';
const LANE = 'odds_gate.lane';

/** The instruments on `meter`; `boundsSeconds` (a Float64Array) are the histograms' bucket bounds; the cache's with `cache`, the spread's with `spread`. */
export function instruments(meter, boundsSeconds, cache, spread) {
  // An object: options.rs refused anything else, saying what it got.
  const missing = METHODS.filter((m) => typeof meter[m] !== 'function');
  if (missing.length > 0) {
    throw new TypeError(`Expected \`meter\` to be an OpenTelemetry Meter (metrics.getMeter(name)); it has no ${missing.join(', ')}`);
  }
  const histogram = (name, description) => meter.createHistogram(name, {
    description, unit: 's', advice: { explicitBucketBoundaries: Array.from(boundsSeconds) },
  });
  const counter = (name, unit, description) => meter.createObservableCounter(name, { description, unit });
  const gauge = (name, unit, description) => meter.createObservableGauge(name, { description, unit });
  return {
    meter,
    wait: histogram('odds_gate.admission.wait_time', 'Time a call waited in its gate\'s queue before it was let through'),
    backoff: histogram('odds_gate.retry.backoff', 'Backoff the gate chose before a retry (a server\'s Retry-After is the cooldown instead)'),
    requests: counter('odds_gate.requests', '{request}', 'Admissions asked for: first attempts and retries'),
    admissions: counter('odds_gate.admissions', '{request}', 'Attempts let through to the network (each spent a token)'),
    throttled: counter('odds_gate.throttled', '{response}', '429 responses seen'),
    retries: counter('odds_gate.retries', '{retry}', 'Retries, by cause'),
    abandoned: counter('odds_gate.abandoned', '{call}', 'Calls abandoned, by reason (never reported as success)'),
    quotaRejections: counter('odds_gate.quota.rejections', '{call}', 'Calls refused at once because the monthly quota is spent'),
    queueDepth: gauge('odds_gate.queue.depth', '{call}', 'Calls waiting in the gate\'s queue, by lane'),
    cooldown: gauge('odds_gate.cooldown.remaining', 's', 'Time until the gate\'s cooldown (Retry-After) ends'),
    budget: gauge('odds_gate.retry_budget.tokens', '{token}', 'Tokens left in the gate\'s shared retry budget'),
    cache: cache ? {
      entries: gauge('odds_gate.cache.entries', '{entry}', 'Answers the wrapper\'s cache keeps'),
      bytes: gauge('odds_gate.cache.bytes', 'By', 'Bytes of the answers the wrapper\'s cache keeps'),
      hits: counter('odds_gate.cache.hits', '{call}', 'Calls answered by a fresh kept answer, without a request'),
      coalesced: counter('odds_gate.cache.coalesced', '{call}', 'Calls that joined an identical request in flight'),
      stale: counter('odds_gate.cache.stale', '{call}', 'Calls answered by a stale kept answer instead of the gate\'s refusal or cooldown'),
      evictions: counter('odds_gate.cache.evictions', '{entry}', 'Kept answers dropped for room'),
      requestsSaved: counter('odds_gate.cache.requests_saved', '{request}', 'Requests the cache saved: hits, coalesced and stale'),
    } : undefined,
    spread: spread ? {
      used: gauge('odds_gate.quota.used', '{credit}', 'API credits the key has used this billing period, as the gate knows it'),
      limit: gauge('odds_gate.quota.limit', '{credit}', 'API credits the key has for the billing period'),
      spreadPerHour: gauge('odds_gate.quota.spread_per_hour', '{credit}/h', 'The spread\'s refill: credits an hour until the period ends'),
      waitingForCredit: gauge('odds_gate.quota.waiting_for_credit', '{call}', 'Calls queued behind a head that waits for credit'),
    } : undefined,
  };
}

// The spread's figures (stats().gates[i].quota) by instrument, per gate.
const SPREAD = ['used', 'limit', 'spreadPerHour', 'waitingForCredit'];

// The cache's figures (stats().cache) by instrument: one series each, with no attribute (the
// cache is the wrapper's, across its lanes and credentials).
const CACHE = ['entries', 'bytes', 'hits', 'coalesced', 'stale', 'evictions', 'requestsSaved'];

/** `{ 'odds_gate.scope': scope, 'odds_gate.lane': lane }`, made once per gate and lane and reused for every measurement. */
export function attributes(scope, lane) {
  return { [SCOPE]: scope, [LANE]: lane };
}

const CAUSES = [['throttled', 'throttled'], ['serverError', 'server_error'], ['network', 'network'], ['timeout', 'timeout']];

/**
 * Reports the counters and gauges from `read()` whenever the meter collects: `{ gates, lanes,
 * cache? }`, every gate the wrapper and its lanes used (as in `stats().gates`), each lane's calls
 * waiting on each, and the cache's figures (`stats().cache`), or undefined once they are all
 * gone, which unregisters the callback. The gate's figures are the gate's, whichever lane's
 * calls made them: only the queue depth is per lane.
 */
export function observe(m, read) {
  const observables = [m.requests, m.admissions, m.throttled, m.retries, m.abandoned, m.quotaRejections, m.queueDepth, m.cooldown, m.budget,
    ...(m.cache === undefined ? [] : CACHE.map((field) => m.cache[field])),
    ...(m.spread === undefined ? [] : SPREAD.map((field) => m.spread[field]))];
  const callback = (result) => {
    const seen = read();
    if (seen === undefined) {
      m.meter.removeBatchObservableCallback(callback, observables);
      return;
    }
    for (const g of seen.gates) {
      const at = { [SCOPE]: g.scope };
      result.observe(m.requests, g.requests, at);
      result.observe(m.admissions, g.admitted, at);
      result.observe(m.throttled, g.throttled, at);
      for (const [field, cause] of CAUSES) result.observe(m.retries, g.retries[field], { ...at, 'odds_gate.retry.cause': cause });
      for (const [reason, count] of Object.entries(g.abandoned)) result.observe(m.abandoned, count, { ...at, 'odds_gate.abandon.reason': reason });
      result.observe(m.quotaRejections, g.quotaRejected, at);
      result.observe(m.cooldown, g.cooldownRemainingMs / 1000, at);
      if (g.retryBudget !== null) result.observe(m.budget, g.retryBudget, at);
      // A gate that spreads (lanes of the wrapper inherit it) has the figures; others none.
      if (m.spread !== undefined && g.quota.spreadPerHour !== undefined) {
        for (const field of SPREAD) result.observe(m.spread[field], g.quota[field], at);
      }
    }
    for (const l of seen.lanes) result.observe(m.queueDepth, l.waiting, attributes(l.scope, l.lane));
    if (m.cache !== undefined && seen.cache !== undefined) {
      for (const field of CACHE) result.observe(m.cache[field], seen.cache[field]);
    }
  };
  m.meter.addBatchObservableCallback(callback, observables);
}

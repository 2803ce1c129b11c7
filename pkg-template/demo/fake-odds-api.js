// Fake Odds API for the demo and the tests: a per-key token bucket that answers 429
// the way the real API does, and counts every arrival server-side. Listens on 127.0.0.1 only.
// Two limiter buckets, each per key: `snapshot` (GET /v1/events/{id}/odds/snapshot; options
// burst, perSecond) and `events` (GET /v1/events/{id}, an event lookup; options.events =
// { burst, perSecond }). rateLimitHeaders says where X-RateLimit-Limit, -Remaining and -Bucket
// go: true (the default) on every answer, 'throttled' on rate-limit 429s only (as the API's
// OpenAPI documents them), false on none (a 429 then says only Retry-After). The monthly
// credits (creditLimit) count the 200s of both routes; a call the key's credits left cannot pay
// answers 429 { code: 'quota_exceeded' }. GET /v1/usage answers the caller's key's
// api_credits_used, api_credits_limit, period_start_utc and period_end_utc (ISO 8601, `Z`).
// Billing and caching, as the real API has them (all off by default; a malformed one throws a
// TypeError naming it):
// - billingPeriodMs: n (an integer >= 1000): creditLimit is per period; periods start when the
//   server starts (or is reset) and follow each other back to back, and a key's credits are back
//   when its period ends. /usage says the current period's. Without it, the credits count over
//   the server's life (since start or reset, period_start_utc) and period_end_utc is 30 days on.
// - costs: { snapshot, events } (numbers >= 0, each optional, default 1): the credits a 200 of
//   that route costs; api_credits_used sums them. With it, stats().byKey[key].credits and
//   stats().credits count the credits spent (over the server's life, not per period).
// - ttlSeconds: n (a number >= 0): every snapshot 200's body carries ttl_seconds: n and
//   as_of_ts_ms (the server's Date.now() when it made the snapshot).
// - cacheControl: a string ('max-age=5'): sent as Cache-Control on every snapshot 200.
// - snapshotBytes: n (an integer >= 0): a snapshot 200's body carries a `filler` string of 'x's
//   that makes it n bytes (or no more than it must be, when its fields alone take more).
// Opt-in quirks of real servers (all off by default; a malformed one throws a TypeError naming
// it), counted per key over its snapshot requests (429s included):
// - missingFirst: n: the first n snapshot requests answer 404 { detail: 'Event not found' } and
//   take no token (X-RateLimit-* as a 200 would carry them, without spending).
// - unavailableEvery: n: every n-th snapshot request answers 503 (no Retry-After, no body but
//   { detail }) and takes no token (X-RateLimit-* as for missingFirst).
// - counts: what X-RateLimit-Limit / -Remaining say, wherever rateLimitHeaders puts them:
//   'truth' (the default: the bucket's burst and whole tokens left), { quota: { limit, left } }
//   (a monthly quota's: limit, and left less the key's 200s so far), or { stuck: n } (the burst,
//   and n whatever the tokens).
// - change: { atMs, burst, perSecond }: from atMs after the server started (or was reset) the
//   snapshot bucket's allowance is this one; its tokens refill at the old rate up to atMs and
//   never exceed the new burst after it.
// - outageMs: n: every snapshot request in the first n ms after the server started (or was
//   reset) answers 503 { detail: 'Service unavailable' }, with no Retry-After and no X-RateLimit-*
//   (the limiter never saw it), and takes no token.
// - hangFirst: n: the first n snapshot requests get no answer at all: the socket stays open until
//   the client gives up or close() ends it (close() ends every connection at once).
// - claimRemaining: { first, remaining }: the first `first` snapshot answers that carry
//   X-RateLimit-* say Remaining: `remaining` (9999: a quota's count, say) whatever the bucket holds.
// - bucketPerResource: true: every event id has its own bucket per route at the same allowance
//   (a limiter per resource), and X-RateLimit-Bucket names it: `snapshot:{id}`, `events:{id}`
//   (the id as the path spells it). A bucket is kept per key and id the server has seen.
// Precedence, per snapshot request: hangFirst, outageMs, the monthly credits (this period's, with
// billingPeriodMs; the cost of a 200, with costs), missingFirst, unavailableEvery, the bucket.
// stats().byKey[key] (and byBucket, and the totals) count attempts (every request of a route,
// these included), throttled (429s) and ok (200s); `missing` (404s), `unavailable` (503s) and
// `hung` (requests never answered) appear once there is one. byBucket and arrivals name the
// route's bucket (`snapshot`, `events`) even with bucketPerResource; a hung request's arrival has
// status null.
// Shipped in the package (odds-gate demo); js-tests/support/fake-odds-api.mjs re-exports it.
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';

const SNAPSHOT = /^\/v1\/events\/([^/]+)\/odds\/snapshot$/;
const EVENT = /^\/v1\/events\/([^/]+)$/;
const MAX_ARRIVALS = 10_000; // keep memory bounded if a test goes wild
const STATUS_FIELD = { 404: 'missing', 503: 'unavailable', null: 'hung' }; // counted apart from ok

export async function startFakeOddsApi(options = {}) {
  const burst = options.burst ?? 2;
  const perSecond = options.perSecond ?? 2;
  const retryAfterSeconds = options.retryAfterSeconds === undefined ? 1 : options.retryAfterSeconds;
  const creditLimit = options.creditLimit ?? 1e6;
  const rateLimitHeaders = options.rateLimitHeaders ?? true;
  if (![true, false, 'throttled'].includes(rateLimitHeaders)) {
    throw new TypeError(`rateLimitHeaders: expected true, false or 'throttled', got ${String(rateLimitHeaders)}`);
  }
  const atLeast = (min) => (v) => Number.isSafeInteger(v) && v >= min;
  const integerOption = (name, v, min) => {
    if (v === undefined) return null;
    if (!atLeast(min)(v)) throw new TypeError(`${name}: expected an integer >= ${min}, got ${String(v)}`);
    return v;
  };
  const missingFirst = integerOption('missingFirst', options.missingFirst, 0) ?? 0;
  const unavailableEvery = integerOption('unavailableEvery', options.unavailableEvery, 1);
  const outageMs = integerOption('outageMs', options.outageMs, 0) ?? 0;
  const hangFirst = integerOption('hangFirst', options.hangFirst, 0) ?? 0;
  const claim = options.claimRemaining ?? null;
  if (claim !== null && !(typeof claim === 'object' && Object.keys(claim).sort().join() === 'first,remaining'
    && atLeast(0)(claim.first) && atLeast(0)(claim.remaining))) {
    throw new TypeError(`claimRemaining: expected { first, remaining } (integers >= 0), got ${JSON.stringify(claim) ?? String(claim)}`);
  }
  const perResource = options.bucketPerResource ?? false;
  if (typeof perResource !== 'boolean') {
    throw new TypeError(`bucketPerResource: expected a boolean, got ${String(perResource)}`);
  }
  const counts = options.counts ?? 'truth';
  const count = atLeast(0);
  const only = (key) => typeof counts === 'object' && counts !== null && Object.keys(counts).join() === key;
  const countsOk = counts === 'truth'
    || (only('quota') && typeof counts.quota === 'object' && counts.quota !== null && count(counts.quota.limit) && count(counts.quota.left))
    || (only('stuck') && count(counts.stuck));
  if (!countsOk) {
    throw new TypeError(`counts: expected 'truth', { quota: { limit, left } } or { stuck: n } (integers >= 0), got ${JSON.stringify(counts) ?? String(counts)}`);
  }
  const change = options.change ?? null;
  if (change !== null && !(typeof change === 'object' && Number.isFinite(change.atMs) && change.atMs >= 0
    && Number.isFinite(change.burst) && change.burst >= 1 && Number.isFinite(change.perSecond) && change.perSecond > 0)) {
    throw new TypeError(`change: expected { atMs >= 0, burst >= 1, perSecond > 0 }, got ${JSON.stringify(change) ?? String(change)}`);
  }
  const billingPeriodMs = integerOption('billingPeriodMs', options.billingPeriodMs, 1000);
  const costs = options.costs ?? null;
  const cost = (v) => v === undefined || (Number.isFinite(v) && v >= 0);
  if (costs !== null && !(typeof costs === 'object' && !Array.isArray(costs)
    && Object.keys(costs).every((k) => k === 'snapshot' || k === 'events') && cost(costs.snapshot) && cost(costs.events))) {
    throw new TypeError(`costs: expected { snapshot, events } (numbers >= 0, each optional), got ${JSON.stringify(costs) ?? String(costs)}`);
  }
  const costOf = { snapshot: costs?.snapshot ?? 1, events: costs?.events ?? 1 };
  const ttlSeconds = options.ttlSeconds ?? null;
  if (ttlSeconds !== null && !(Number.isFinite(ttlSeconds) && ttlSeconds >= 0)) {
    throw new TypeError(`ttlSeconds: expected a number >= 0, got ${String(ttlSeconds)}`);
  }
  const cacheControl = options.cacheControl ?? null;
  // A header value node:http would send as it is: visible ASCII and inner spaces, nothing else.
  if (cacheControl !== null && !(typeof cacheControl === 'string' && /^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$/.test(cacheControl))) {
    throw new TypeError(`cacheControl: expected a header value such as 'max-age=5', got ${JSON.stringify(cacheControl) ?? String(cacheControl)}`);
  }
  const snapshotBytes = integerOption('snapshotBytes', options.snapshotBytes, 0);
  const limits = {
    snapshot: { burst, perSecond },
    events: { burst: options.events?.burst ?? 10, perSecond: options.events?.perSecond ?? 10 },
  };
  const emptyCounts = () => ({ attempts: 0, throttled: 0, ok: 0 });

  let startedAt, startedAtUtc, buckets, seen, claimed, labels, spent, stats, faults;
  const sockets = { opened: 0, open: 0, peakOpen: 0 };
  const clear = () => {
    startedAt = performance.now();
    startedAtUtc = Date.now(); // periods are on the wall clock, the one period_end_utc is read on
    // bucket -> raw key (and, with bucketPerResource, the id) -> { tokens, last }
    buckets = { snapshot: new Map(), events: new Map() };
    seen = new Map(); // raw key -> snapshot requests so far (hangFirst, missingFirst, unavailableEvery)
    claimed = new Map(); // raw key -> snapshot answers that said claimRemaining's count
    labels = new Map(); // raw key -> 'key#N'; raw keys never leave this closure
    spent = new Map(); // raw key -> { start, credits }: its credits spent in the period from start
    stats = {
      attempts: 0, throttled: 0, ok: 0, faults: 0, usageCalls: 0, byKey: {},
      byBucket: { snapshot: emptyCounts(), events: emptyCounts() }, arrivals: [],
    };
    if (costs) stats.credits = 0;
    faults = [];
  };
  clear();

  // The billing period now: [start, end) in Unix ms (the server's life, 30 days on, without
  // billingPeriodMs).
  const period = () => {
    const now = Date.now();
    if (billingPeriodMs === null) return { start: startedAtUtc, end: now + 30 * 86400e3 };
    const start = startedAtUtc + Math.floor(Math.max(0, now - startedAtUtc) / billingPeriodMs) * billingPeriodMs;
    return { start, end: start + billingPeriodMs };
  };
  // The credits the key has spent in the current period.
  const creditsUsed = (raw, start) => {
    const s = spent.get(raw);
    return s && s.start === start ? s.credits : 0;
  };

  const labelFor = (raw) => {
    if (!labels.has(raw)) labels.set(raw, `key#${labels.size + 1}`);
    return labels.get(raw);
  };

  // The allowance of `bucket` at `now` (a snapshot allowance may change at change.atMs).
  const changeAt = () => startedAt + change.atMs;
  const limitOf = (bucket, now) => (bucket === 'snapshot' && change && now >= changeAt() ? change : limits[bucket]);
  // Refill fractionally since the last look (at the old allowance up to a change, then the new
  // one, never above its burst); the bucket (`owner`: the raw key, and the id per resource), as
  // it is now.
  const refill = (bucket, owner) => {
    const now = performance.now();
    let b = buckets[bucket].get(owner);
    if (!b) buckets[bucket].set(owner, (b = { tokens: limitOf(bucket, now).burst, last: now }));
    if (bucket === 'snapshot' && change && b.last < changeAt() && now >= changeAt()) {
      b.tokens = Math.min(limits.snapshot.burst, b.tokens + ((changeAt() - b.last) / 1000) * limits.snapshot.perSecond);
      b.last = changeAt();
    }
    const { burst, perSecond } = limitOf(bucket, now);
    b.tokens = Math.min(burst, b.tokens + ((now - b.last) / 1000) * perSecond);
    b.last = now;
    return { b, burst };
  };
  // Try to take one token from the bucket.
  const take = (bucket, owner) => {
    const { b, burst } = refill(bucket, owner);
    if (b.tokens >= 1) { b.tokens -= 1; return { ok: true, left: Math.floor(b.tokens), burst }; }
    return { ok: false, left: 0, burst };
  };
  // What X-RateLimit-Limit and -Remaining say (options.counts) for the bucket's true counts.
  // `took`: this answer took a token (a quota counts it before answering).
  const countsFor = (label, burst, left, took) => {
    if (counts.quota) {
      return { limit: counts.quota.limit, left: Math.max(0, counts.quota.left - (stats.byKey[label]?.ok ?? 0) - (took ? 1 : 0)) };
    }
    if (counts.stuck !== undefined) return { limit: burst, left: counts.stuck };
    return { limit: burst, left };
  };

  // `raw`: the key, its 200 charged to it in the period `start`.
  const record = (label, status, bucket, raw, start) => {
    const k = (stats.byKey[label] ??= costs ? { ...emptyCounts(), credits: 0 } : emptyCounts());
    const q = stats.byBucket[bucket];
    stats.attempts++; k.attempts++; q.attempts++;
    if (status === 429) { stats.throttled++; k.throttled++; q.throttled++; }
    else if (status in STATUS_FIELD) { // only with the opt-in quirks
      const field = STATUS_FIELD[status];
      for (const c of [stats, k, q]) c[field] = (c[field] ?? 0) + 1;
    } else {
      stats.ok++; k.ok++; q.ok++;
      spent.set(raw, { start, credits: creditsUsed(raw, start) + costOf[bucket] });
      if (costs) { stats.credits += costOf[bucket]; k.credits += costOf[bucket]; }
    }
    if (stats.arrivals.length < MAX_ARRIVALS) {
      stats.arrivals.push({ at: Math.round((performance.now() - startedAt) * 10) / 10, key: label, status, bucket });
    }
  };

  const send = (res, status, body, headers = {}) => {
    res.writeHead(status, { 'Content-Type': 'application/json', Connection: 'keep-alive', ...headers });
    res.end(JSON.stringify(body));
  };

  // Injected faults, consumed one per snapshot request in order: { status, bodyBytes,
  // retryAfter } answers with that status; { reset: true } destroys the socket; { delayMs }
  // answers normally after a pause.
  const fault = (req, res) => {
    const f = faults.shift();
    if (!f) return false;
    stats.faults++;
    if (f.reset) { req.socket.destroy(); return true; }
    if (f.delayMs) { setTimeout(() => handle(req, res, true), f.delayMs); return true; }
    const headers = { 'Content-Type': 'application/octet-stream' };
    if (f.retryAfter !== undefined) headers['Retry-After'] = String(f.retryAfter);
    res.writeHead(f.status, headers);
    res.end(Buffer.alloc(f.bodyBytes ?? 0, 120));
    return true;
  };

  const server = http.createServer((req, res) => handle(req, res, false));
  server.on('connection', (socket) => {
    sockets.opened++;
    sockets.peakOpen = Math.max(sockets.peakOpen, ++sockets.open);
    socket.on('close', () => sockets.open--);
  });

  function handle(req, res, faulted) {
    req.resume(); // drain any body so keep-alive sockets stay usable
    const raw = req.headers['x-api-key'] ?? req.headers.authorization ?? 'anonymous';
    const path = new URL(req.url, 'http://x').pathname;
    const match = req.method === 'GET' ? SNAPSHOT.exec(path) : null;
    const event = req.method === 'GET' && !match ? EVENT.exec(path) : null;

    if (req.method === 'GET' && path === '/v1/usage') {
      stats.usageCalls++;
      labelFor(raw); // a key asking first is numbered first, as before
      const { start, end } = period();
      return send(res, 200, {
        api_credits_used: creditsUsed(raw, start),
        api_credits_limit: creditLimit,
        period_start_utc: new Date(start).toISOString(),
        period_end_utc: new Date(end).toISOString(),
      });
    }
    if (!match && !event) return send(res, 404, { detail: 'Not found' });
    if (match && !faulted && fault(req, res)) return; // faults are for snapshot requests only

    const bucket = match ? 'snapshot' : 'events';
    const label = labelFor(raw);
    const id = (match ?? event)[1];
    const owner = perResource ? `${raw}\n${id}` : raw;
    const n = match ? (seen.get(raw) ?? 0) + 1 : 0; // this key's n-th snapshot request
    if (match) seen.set(raw, n);
    if (n > 0 && n <= hangFirst) return record(label, null, bucket); // never answered
    if (match && performance.now() - startedAt < outageMs) {
      record(label, 503, bucket);
      return send(res, 503, { detail: 'Service unavailable' });
    }
    const { start } = period(); // the period this request is charged to, if it succeeds
    if (creditsUsed(raw, start) + costOf[bucket] > creditLimit) {
      record(label, 429, bucket);
      return send(res, 429, { detail: 'Monthly API credits exhausted', code: 'quota_exceeded' });
    }
    const headersFor = (ok, burst, left, took) => {
      if (!(rateLimitHeaders === true || (rateLimitHeaders === 'throttled' && !ok))) return {};
      const c = countsFor(label, burst, left, took);
      const said = claimed.get(raw) ?? 0;
      if (match && claim && said < claim.first) { claimed.set(raw, said + 1); c.left = claim.remaining; }
      return {
        'X-RateLimit-Limit': String(c.limit), 'X-RateLimit-Remaining': String(c.left),
        'X-RateLimit-Bucket': perResource ? `${bucket}:${id}` : bucket,
      };
    };
    if (match && (missingFirst > 0 || unavailableEvery !== null)) {
      const status = n <= missingFirst ? 404 : unavailableEvery !== null && n % unavailableEvery === 0 ? 503 : null;
      if (status !== null) { // takes no token
        const { b, burst } = refill(bucket, owner);
        record(label, status, bucket);
        return send(res, status, { detail: status === 404 ? 'Event not found' : 'Service unavailable' },
          headersFor(true, burst, Math.floor(b.tokens), false));
      }
    }
    const t = take(bucket, owner);
    const rl = headersFor(t.ok, t.burst, t.left, t.ok);
    if (!t.ok) {
      record(label, 429, bucket);
      if (retryAfterSeconds !== null) rl['Retry-After'] = String(retryAfterSeconds);
      return send(res, 429, { detail: 'Rate limit exceeded', code: 'rate_limited', request_id: randomUUID() }, rl);
    }
    record(label, 200, bucket, raw, start);
    if (event) {
      const eventId = decodeURIComponent(id);
      return send(res, 200, {
        id: eventId, sport_key: 'soccer', home_team: `Home ${eventId}`, away_team: `Away ${eventId}`,
        commence_time: new Date(Math.ceil(Date.now() / 3600e3) * 3600e3 + 86400e3).toISOString(),
      }, rl);
    }
    const snapshot = {
      event_id: decodeURIComponent(match[1]),
      bookmakers: [
        { key: 'fakebook', markets: [{ key: 'h2h', outcomes: [{ name: 'Home', price: 1.91 }, { name: 'Away', price: 1.95 }] }] },
      ],
      fetched_at: new Date().toISOString(),
    };
    if (ttlSeconds !== null) Object.assign(snapshot, { ttl_seconds: ttlSeconds, as_of_ts_ms: Date.now() });
    if (snapshotBytes !== null) {
      snapshot.filler = '';
      snapshot.filler = 'x'.repeat(Math.max(0, snapshotBytes - Buffer.byteLength(JSON.stringify(snapshot))));
    }
    if (cacheControl !== null) rl['Cache-Control'] = cacheControl;
    return send(res, 200, snapshot, rl);
  }

  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address();

  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    port,
    stats: () => structuredClone({ ...stats, sockets }), // a copy, so callers can't mutate counters
    reset: clear,
    inject: (...list) => { faults.push(...list); },
    close: () => new Promise((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections(); // don't wait for idle keep-alive sockets to time out
    }),
  };
}

// Fake Odds API for the demo and the tests: a per-key token bucket that answers 429
// the way the real API does, and counts every arrival server-side. Listens on 127.0.0.1 only.
// Two limiter buckets, each per key: `snapshot` (GET /v1/events/{id}/odds/snapshot; options
// burst, perSecond) and `events` (GET /v1/events/{id}, an event lookup; options.events =
// { burst, perSecond }). rateLimitHeaders says where X-RateLimit-Limit, -Remaining and -Bucket
// go: true (the default) on every answer, 'throttled' on rate-limit 429s only (as the API's
// OpenAPI documents them), false on none (a 429 then says only Retry-After). The monthly
// credits (creditLimit) count the 200s of both routes.
// Shipped in the package (odds-gate demo); js-tests/support/fake-odds-api.mjs re-exports it.
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';

const SNAPSHOT = /^\/v1\/events\/([^/]+)\/odds\/snapshot$/;
const EVENT = /^\/v1\/events\/([^/]+)$/;
const MAX_ARRIVALS = 10_000; // keep memory bounded if a test goes wild

export async function startFakeOddsApi(options = {}) {
  const burst = options.burst ?? 2;
  const perSecond = options.perSecond ?? 2;
  const retryAfterSeconds = options.retryAfterSeconds === undefined ? 1 : options.retryAfterSeconds;
  const creditLimit = options.creditLimit ?? 1e6;
  const rateLimitHeaders = options.rateLimitHeaders ?? true;
  if (![true, false, 'throttled'].includes(rateLimitHeaders)) {
    throw new TypeError(`rateLimitHeaders: expected true, false or 'throttled', got ${String(rateLimitHeaders)}`);
  }
  const limits = {
    snapshot: { burst, perSecond },
    events: { burst: options.events?.burst ?? 10, perSecond: options.events?.perSecond ?? 10 },
  };
  const emptyCounts = () => ({ attempts: 0, rejected: 0, ok: 0 });

  let startedAt, buckets, labels, stats, faults;
  const sockets = { opened: 0, open: 0, peakOpen: 0 };
  const clear = () => {
    startedAt = performance.now();
    buckets = { snapshot: new Map(), events: new Map() }; // bucket -> raw key -> { tokens, last }
    labels = new Map(); // raw key -> 'key#N'; raw keys never leave this closure
    stats = {
      attempts: 0, rejected: 0, ok: 0, faults: 0, usageCalls: 0, byKey: {},
      byBucket: { snapshot: emptyCounts(), events: emptyCounts() }, arrivals: [],
    };
    faults = [];
  };
  clear();

  const labelFor = (raw) => {
    if (!labels.has(raw)) labels.set(raw, `key#${labels.size + 1}`);
    return labels.get(raw);
  };

  // Refill fractionally since the last look, then try to take one token from the key's bucket.
  const take = (bucket, raw) => {
    const { burst, perSecond } = limits[bucket];
    const now = performance.now();
    let b = buckets[bucket].get(raw);
    if (!b) buckets[bucket].set(raw, (b = { tokens: burst, last: now }));
    b.tokens = Math.min(burst, b.tokens + ((now - b.last) / 1000) * perSecond);
    b.last = now;
    if (b.tokens >= 1) { b.tokens -= 1; return { ok: true, left: Math.floor(b.tokens) }; }
    return { ok: false, left: 0 };
  };

  const record = (label, status, bucket) => {
    const k = (stats.byKey[label] ??= emptyCounts());
    const q = stats.byBucket[bucket];
    stats.attempts++; k.attempts++; q.attempts++;
    if (status === 429) { stats.rejected++; k.rejected++; q.rejected++; } else { stats.ok++; k.ok++; q.ok++; }
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
      return send(res, 200, {
        api_credits_used: stats.byKey[labelFor(raw)]?.ok ?? 0,
        api_credits_limit: creditLimit,
        period_end_utc: new Date(Date.now() + 30 * 86400e3).toISOString(),
      });
    }
    if (!match && !event) return send(res, 404, { detail: 'Not found' });
    if (match && !faulted && fault(req, res)) return; // faults are for snapshot requests only

    const bucket = match ? 'snapshot' : 'events';
    const label = labelFor(raw);
    if ((stats.byKey[label]?.ok ?? 0) >= creditLimit) {
      record(label, 429, bucket);
      return send(res, 429, { detail: 'Monthly API credits exhausted', code: 'quota_exceeded' });
    }
    const t = take(bucket, raw);
    const rl = rateLimitHeaders === true || (rateLimitHeaders === 'throttled' && !t.ok) ? {
      'X-RateLimit-Limit': String(limits[bucket].burst), 'X-RateLimit-Remaining': String(t.left), 'X-RateLimit-Bucket': bucket,
    } : {};
    if (!t.ok) {
      record(label, 429, bucket);
      if (retryAfterSeconds !== null) rl['Retry-After'] = String(retryAfterSeconds);
      return send(res, 429, { detail: 'Rate limit exceeded', code: 'rate_limited', request_id: randomUUID() }, rl);
    }
    record(label, 200, bucket);
    if (event) {
      const id = decodeURIComponent(event[1]);
      return send(res, 200, {
        id, sport_key: 'soccer', home_team: `Home ${id}`, away_team: `Away ${id}`,
        commence_time: new Date(Math.ceil(Date.now() / 3600e3) * 3600e3 + 86400e3).toISOString(),
      }, rl);
    }
    return send(res, 200, {
      event_id: decodeURIComponent(match[1]),
      bookmakers: [
        { key: 'fakebook', markets: [{ key: 'h2h', outcomes: [{ name: 'Home', price: 1.91 }, { name: 'Away', price: 1.95 }] }] },
      ],
      fetched_at: new Date().toISOString(),
    }, rl);
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

// createFetch({ meter }): OpenTelemetry instruments on the caller's Meter, read back through the
// SDK's in-memory exporter, and checked against the wrapper's own stats(). The inner fetch is
// scripted (no network): what is tested is the wiring from the gate's figures and events to
// the instruments, not timing.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import {
  AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import { createFetch } from '../pkg/index.js';
import { run, show, REPO } from './support/temp-project.mjs';
import { startFakeOddsApi } from './support/fake-odds-api.mjs';

const PKG = fileURLToPath(new URL('../pkg/', import.meta.url));

/** A meter whose measurements land in an in-memory exporter when `collect()` is awaited. */
function inMemoryMeter() {
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  // The interval is never reached: collect() flushes by hand.
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 });
  const provider = new MeterProvider({ readers: [reader] });
  return {
    meter: provider.getMeter('odds-gate-test'),
    /** name -> { descriptor, dataPoints } of the latest export. */
    async collect() {
      exporter.reset();
      await reader.forceFlush();
      const metrics = exporter.getMetrics().flatMap((r) => r.scopeMetrics.flatMap((s) => s.metrics));
      return new Map(metrics.map((m) => [m.descriptor.name, m]));
    },
    shutdown: () => provider.shutdown(),
  };
}

/** A scripted inner fetch: each call's URL path names its script of statuses. */
function scripted(scripts) {
  const seen = new Map();
  return async (input) => {
    const path = new URL(String(input)).pathname;
    const n = seen.get(path) ?? 0;
    seen.set(path, n + 1);
    const status = scripts[path][Math.min(n, scripts[path].length - 1)];
    const headers = status === 429 ? { 'Retry-After': '0' } : {};
    return new Response(status === 200 ? '{}' : 'no', { status, headers });
  };
}

const points = (metric) => metric?.dataPoints ?? [];
const byAttribute = (metric, name) => Object.fromEntries(points(metric).map((p) => [p.attributes[name], p.value]));

test('the meter gets counters, gauges and histograms that agree with stats(), keyed by scope, never by key', async () => {
  const otel = inMemoryMeter();
  const apiKey = `secret-${randomUUID()}`;
  const fetchImpl = createFetch({
    rate: { burst: 1, perSecond: 20 },
    meter: otel.meter,
    retry: { maxAttempts: 2, baseMs: 5, capMs: 10, statuses: [429, 503] },
    fetch: scripted({ '/ok': [200], '/flaky': [503, 200], '/down': [503, 503], '/busy': [429, 200] }),
  });
  const headers = { 'X-API-Key': apiKey };
  const call = (path) => fetchImpl(`http://127.0.0.1:9/${path}`, { headers });
  try {
    const results = await Promise.allSettled(['ok', 'flaky', 'down', 'busy', 'ok'].map(call));
    // `/down` is abandoned after its two 503s: its caller gets the last one, as fetch would.
    assert.deepEqual(results.map((r) => r.value.status), [200, 200, 503, 200, 200]);

    const metrics = await otel.collect();
    const stats = fetchImpl.stats();
    const [gate] = stats.gates;

    // Every instrument, named after OTel's rules, with its unit.
    const units = {
      'odds_gate.requests': '{request}',
      'odds_gate.admissions': '{request}',
      'odds_gate.throttled': '{response}',
      'odds_gate.retries': '{retry}',
      'odds_gate.abandoned': '{call}',
      'odds_gate.quota.rejections': '{call}',
      'odds_gate.queue.depth': '{call}',
      'odds_gate.cooldown.remaining': 's',
      'odds_gate.retry_budget.tokens': '{token}',
      'odds_gate.admission.wait_time': 's',
      'odds_gate.retry.backoff': 's',
    };
    assert.deepEqual([...metrics.keys()].sort(), Object.keys(units).sort());
    for (const [name, unit] of Object.entries(units)) {
      assert.equal(metrics.get(name).descriptor.unit, unit, name);
      assert.ok(metrics.get(name).descriptor.description.length > 10, `${name} has a description`);
    }

    // Attributes: the gate's scope hash, never the key.
    for (const metric of metrics.values()) {
      for (const p of points(metric)) {
        assert.equal(p.attributes['odds_gate.scope'], gate.scope, metric.descriptor.name);
        assert.doesNotMatch(JSON.stringify(p.attributes), new RegExp(apiKey), metric.descriptor.name);
      }
    }
    assert.doesNotMatch(gate.scope, new RegExp(apiKey));

    // Counters: what stats() says, by the same names.
    const one = (name) => points(metrics.get(name))[0].value;
    assert.equal(one('odds_gate.requests'), gate.requests);
    assert.equal(one('odds_gate.admissions'), gate.admitted);
    assert.equal(gate.admitted, 8); // 5 first attempts, 3 retries
    assert.equal(one('odds_gate.throttled'), 1);
    assert.deepEqual(byAttribute(metrics.get('odds_gate.retries'), 'odds_gate.retry.cause'),
      { throttled: 1, server_error: 2, network: 0, timeout: 0 });
    const abandoned = byAttribute(metrics.get('odds_gate.abandoned'), 'odds_gate.abandon.reason');
    assert.equal(abandoned.attempts, 1);
    assert.deepEqual(abandoned, gate.abandoned);
    assert.equal(one('odds_gate.quota.rejections'), 0);
    assert.equal(one('odds_gate.queue.depth'), 0);
    assert.equal(one('odds_gate.cooldown.remaining'), gate.cooldownRemainingMs / 1000);
    assert.equal(one('odds_gate.retry_budget.tokens'), gate.retryBudget);

    // Histograms, in seconds, with the gate's bucket bounds: every admission's wait; the two
    // backoffs the gate chose (a 429's Retry-After is a cooldown, not a backoff).
    const wait = one('odds_gate.admission.wait_time');
    assert.equal(wait.count, gate.admissionWaitMs.count);
    assert.ok(Math.abs(wait.sum - gate.admissionWaitMs.sumMs / 1000) < 1e-9, `${wait.sum} s vs ${gate.admissionWaitMs.sumMs} ms`);
    assert.ok(wait.sum > 0, 'at 20/s behind a burst of 1, calls waited');
    assert.deepEqual(wait.buckets.boundaries, gate.admissionWaitMs.bins.slice(0, -1).map((b) => b.leMs / 1000));
    const backoff = one('odds_gate.retry.backoff');
    assert.equal(backoff.count, 2);
    assert.equal(backoff.count, gate.backoffMs.count);
    assert.ok(backoff.max <= 0.01, `backoffs stay under capMs: ${backoff.max} s`);
  } finally {
    await otel.shutdown();
  }
});

test("a lane's calls are measured with its `odds_gate.lane`, the wrapper's own with \"default\"; the gate's counters are the gate's", async () => {
  const otel = inMemoryMeter();
  const fetchImpl = createFetch({
    rate: { burst: 1, perSecond: 50 },
    meter: otel.meter,
    retry: { maxAttempts: 2, baseMs: 5, capMs: 10, statuses: [503] },
    fetch: scripted({ '/own': [200], '/live': [200], '/flaky': [503, 200], '/other': [200] }),
  });
  const live = fetchImpl.lane({ name: 'live', weight: 9 });
  const unnamed = fetchImpl.lane();
  const [key, other] = [`lanes-${randomUUID()}`, `lanes-${randomUUID()}`];
  const call = (f, path, apiKey = key) => f(`http://127.0.0.1:9/${path}`, { headers: { 'X-API-Key': apiKey } });
  try {
    const results = await Promise.all([
      call(fetchImpl, 'own'), call(fetchImpl, 'own'), call(fetchImpl, 'own'),
      call(live, 'live'), call(live, 'flaky'),
      call(unnamed, 'own'),
      // A gate only a lane used: the meter sees it too.
      call(live, 'other', other), call(live, 'other', other),
    ]);
    assert.deepEqual(results.map((r) => r.status), [200, 200, 200, 200, 200, 200, 200, 200]);
    const metrics = await otel.collect();
    const name = unnamed.stats().lane.name;
    assert.match(name, /^lane-\d+$/);
    const [scope] = fetchImpl.stats().gates.map((g) => g.scope);
    const [otherScope] = live.stats().gates.filter((g) => g.scope !== scope).map((g) => g.scope);
    assert.ok(otherScope, 'the lane used two gates');

    // Each admission's wait, by gate and lane: on the key's gate the live lane's three attempts
    // (its retry included), the wrapper's own three and the unnamed lane's one.
    const counts = {};
    for (const p of points(metrics.get('odds_gate.admission.wait_time'))) {
      counts[`${p.attributes['odds_gate.scope'] === scope ? 'key' : 'other'} ${p.attributes['odds_gate.lane']}`] = p.value.count;
    }
    assert.deepEqual(counts, { 'key default': 3, 'key live': 3, [`key ${name}`]: 1, 'other live': 2 });
    // The one backoff was the live lane's.
    const backoffs = points(metrics.get('odds_gate.retry.backoff'));
    assert.deepEqual(backoffs.map((p) => [p.attributes['odds_gate.lane'], p.value.count]), [['live', 1]]);

    // The queue depth is per gate and lane; the other counters and gauges are the gate's,
    // whichever lane's calls made them, and the lane-only gate is among them.
    const depths = points(metrics.get('odds_gate.queue.depth'));
    assert.deepEqual(depths.filter((p) => p.attributes['odds_gate.scope'] === scope).map((p) => p.attributes['odds_gate.lane']).sort(),
      ['default', name, 'live'].sort());
    assert.ok(depths.every((p) => p.value === 0));
    const admissions = points(metrics.get('odds_gate.admissions'));
    assert.deepEqual(Object.fromEntries(admissions.map((p) => [p.attributes['odds_gate.scope'], p.value])), { [scope]: 7, [otherScope]: 2 });
    assert.ok(admissions.every((p) => !('odds_gate.lane' in p.attributes)));
  } finally {
    await otel.shutdown();
  }
});

test('a wrapper with a cache reports stats().cache as odds_gate.cache.* counters and gauges, one series each, with no scope', async () => {
  const otel = inMemoryMeter();
  const apiKey = `secret-${randomUUID()}`;
  // /a is fresh for 60 s; /b is kept past its lifetime at once (stale); /busy starts a 30 s cooldown.
  const inner = async (input) => {
    const path = new URL(String(input)).pathname;
    if (path === '/busy') return new Response('no', { status: 429, headers: { 'Retry-After': '30' } });
    const cacheControl = path === '/a' ? 'max-age=60' : 'max-age=0';
    return new Response('{"odds":[]}', { headers: { 'content-type': 'application/json', 'cache-control': cacheControl } });
  };
  const fetchImpl = createFetch({ rate: { burst: 5, perSecond: 50 }, meter: otel.meter, cache: true, fetch: inner });
  const lane = fetchImpl.lane({ name: 'live' });
  const headers = { 'X-API-Key': apiKey };
  const call = (f, path, init) => f(`http://127.0.0.1:9/${path}`, { headers, ...init });
  const settle = async (done) => {
    for (let i = 0; i < 200 && !done(); i++) await new Promise((resolve) => setTimeout(resolve, 5));
    assert.ok(done());
  };
  const busy = new AbortController();
  try {
    await Promise.all([call(fetchImpl, 'a'), call(fetchImpl, 'a'), call(lane, 'a')]); // 1 request, 2 coalesced
    await settle(() => fetchImpl.stats().cache.entries === 1);
    await Promise.all([call(fetchImpl, 'a'), call(lane, 'a'), call(lane, 'a')]); // 3 hits
    await call(fetchImpl, 'b');
    await settle(() => fetchImpl.stats().cache.entries === 2);
    const cooling = call(fetchImpl, 'busy', { signal: busy.signal }).catch(() => {});
    await settle(() => fetchImpl.stats().gates[0].throttled === 1);
    assert.equal((await call(lane, 'b')).headers.get('x-odds-gate-cache'), 'stale');
    busy.abort();
    await cooling;

    const metrics = await otel.collect();
    const { cache } = fetchImpl.stats();
    assert.deepEqual(cache, { entries: 2, bytes: cache.bytes, hits: 3, coalesced: 2, stale: 1, evictions: 0, requestsSaved: 6 });
    const instruments = {
      'odds_gate.cache.entries': ['entries', '{entry}'],
      'odds_gate.cache.bytes': ['bytes', 'By'],
      'odds_gate.cache.hits': ['hits', '{call}'],
      'odds_gate.cache.coalesced': ['coalesced', '{call}'],
      'odds_gate.cache.stale': ['stale', '{call}'],
      'odds_gate.cache.evictions': ['evictions', '{entry}'],
      'odds_gate.cache.requests_saved': ['requestsSaved', '{request}'],
    };
    for (const [name, [field, unit]] of Object.entries(instruments)) {
      const metric = metrics.get(name);
      assert.equal(metric?.descriptor.unit, unit, name);
      assert.deepEqual(points(metric).map((p) => [p.value, p.attributes]), [[cache[field], {}]], name);
    }
    assert.equal(points(metrics.get('odds_gate.cache.hits'))[0].value, 3);
  } finally {
    busy.abort();
    await otel.shutdown();
  }
});

test('a wrapper that spreads its quota reports stats().gates[i].quota as odds_gate.quota.* gauges, per gate', async () => {
  const otel = inMemoryMeter();
  const rate = { burst: 50, perSecond: 100 };
  // 950 credits to spread over a minute: the calls go at once.
  const api = await startFakeOddsApi({ ...rate, creditLimit: 1000, billingPeriodMs: 60_000 });
  const fetchImpl = createFetch({ rate, threads: false, meter: otel.meter, quota: { spread: true } });
  const headers = { 'X-API-Key': `spread-${randomUUID()}` };
  try {
    for (let i = 0; i < 3; i++) await (await fetchImpl(`${api.baseUrl}/events/e${i}`, { headers })).text();
    const metrics = await otel.collect();
    const [gate] = fetchImpl.stats().gates;
    assert.equal(gate.quota.used, 3);
    const instruments = {
      'odds_gate.quota.used': ['used', '{credit}'],
      'odds_gate.quota.limit': ['limit', '{credit}'],
      'odds_gate.quota.spread_per_hour': ['spreadPerHour', '{credit}/h'],
      'odds_gate.quota.waiting_for_credit': ['waitingForCredit', '{call}'],
    };
    for (const [name, [field, unit]] of Object.entries(instruments)) {
      const metric = metrics.get(name);
      assert.equal(metric?.descriptor.unit, unit, name);
      const [point, ...more] = points(metric);
      assert.equal(more.length, 0, name);
      assert.deepEqual(point.attributes, { 'odds_gate.scope': gate.scope }, name);
      // The refill moves with the clock between collect() and stats(): near, not equal.
      if (field === 'spreadPerHour') assert.ok(Math.abs(point.value - gate.quota[field]) < 1e-3 * gate.quota[field], name);
      else assert.equal(point.value, gate.quota[field], name);
    }
    assert.equal(points(metrics.get('odds_gate.quota.limit'))[0].value, 1000);
    assert.ok(points(metrics.get('odds_gate.quota.spread_per_hour'))[0].value > 0);
  } finally {
    await otel.shutdown();
    await api.close();
  }
});

test('a wrapper without a meter costs the meter nothing, and a meter is checked at the boundary', async () => {
  const otel = inMemoryMeter();
  try {
    const plain = createFetch({ rate: { burst: 2, perSecond: 2 }, fetch: async () => new Response('{}') });
    await plain('http://127.0.0.1:9/x', { headers: { 'X-API-Key': randomUUID() } });
    assert.equal((await otel.collect()).size, 0);
    assert.doesNotMatch(plain.describe().metrics, /OpenTelemetry/);
    assert.match(createFetch({ rate: { burst: 2, perSecond: 2 }, meter: otel.meter }).describe().metrics, /OpenTelemetry/);
  } finally {
    await otel.shutdown();
  }
  for (const meter of [{}, { createHistogram() {} }, 'meter']) {
    assert.throws(() => createFetch({ rate: { burst: 2, perSecond: 2 }, meter }),
      (err) => err instanceof TypeError && /`meter`/.test(err.message), JSON.stringify(meter));
  }
  // The package never imports OpenTelemetry itself: the caller's Meter is all it uses.
  const files = readdirSync(PKG, { recursive: true }).filter((f) => /\.(m?js)$/.test(f));
  assert.ok(files.length > 3);
  for (const file of files) {
    assert.doesNotMatch(readFileSync(join(PKG, file), 'utf8'), /from\s*['"]@opentelemetry|import\(\s*['"]@opentelemetry/, file);
  }
});

test('demo/prometheus.mjs serves the gate\'s metrics through the OTel Prometheus exporter', { timeout: 120_000 }, async () => {
  const r = await run(process.execPath, ['demo/prometheus.mjs'], { cwd: REPO, timeoutMs: 90_000 });
  assert.equal(r.code, 0, show(r));
  for (const line of [
    /^odds_gate_requests_total\{.*odds_gate_scope="key:[0-9a-f]{32}".*\} 8$/m,
    /^odds_gate_admissions_total\{.*\} 8$/m,
    /^odds_gate_throttled_total\{.*\} 0$/m,
    /^odds_gate_admission_wait_time_count\{.*\} 8$/m,
    /^odds_gate_retries_total\{.*odds_gate_retry_cause="throttled".*\} 0$/m,
    /^odds_gate_queue_depth\{.*\} 0$/m,
  ]) {
    assert.match(r.stdout, line);
  }
});

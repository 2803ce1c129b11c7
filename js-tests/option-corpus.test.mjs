// A corpus of option objects, made deterministically from this file's own table of every options
// reader's fields (createFetch(), lane(), batch(), new Gate(), redisStore(), simulate()) and checked
// against the package: each wrong-typed value, each unknown key, each key left `undefined`, each
// number out of range, at the top level and in every nested object. The outcome of each is
// computed from the table, never recorded from the package, so the words a caller reads
// (option-errors.test.mjs checks a few by hand) cannot drift when a reader is rewritten:
// - a value of the wrong type: TypeError `Expected \`FIELD\` to be KIND, got TYPE`, TYPE `null`,
//   `an array` or its typeof, never the value (no message may hold the secret-looking string
//   passed, nor a string field's value refused for what it says);
// - an unknown key: TypeError `Unknown option \`WHAT.KEY\`; known options: a, b, c`, found
//   before any wrong value (WHAT: the object's path, or `lane`, `batch`, or `options`);
// - a key whose value is `undefined`: the same outcome as without the key;
// - NaN, ±Infinity or -1 for a number: a RangeError whose first name in backticks is the field.
// The fields of lane() and batch() are named as `lane.weight` and `batch.deadlineMs`.
import assert from 'node:assert/strict';
import test from 'node:test';
import { isDeepStrictEqual } from 'node:util';
import { Gate, simulate, createFetch, redisStore } from '../pkg/index.js';

const SECRET = 'sk-secret-123';
const WRONG = [1, SECRET, true, null, [], {}, () => 1, Symbol(SECRET), 1n];
const RANGE = [NaN, Infinity, -Infinity, -1];
const isPlain = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
const typeOf = (v) => (v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v);
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

// Kinds: what an error says a field takes, which values are of it, and what else it checks.
const kind = (says, accepts, more = {}) => ({ says, accepts, ...more });
const NUMBER = kind('a number', (v) => typeof v === 'number', { ranged: true });
const STRING = kind('a string', (v) => typeof v === 'string');
const BOOLEAN = kind('a boolean', (v) => typeof v === 'boolean');
const FUNCTION = kind('a function', (v) => typeof v === 'function');
const list = (items, holds, valid) => kind('an array', Array.isArray, { items, holds, valid });
const isToken = (v) => typeof v === 'string' && TOKEN.test(v);
const STATUSES = list('HTTP status codes (integers from 100 to 599)', (v) => Number.isInteger(v) && v >= 100 && v <= 599, 429);
const METHODS = list('HTTP method names (tokens)', isToken, 'GET');
const HEADER_NAMES = list('header names (tokens)', isToken, 'X-Odds-Key');
const object = (fields, base = {}) => kind('an object', isPlain, { fields, base });
const flagOr = (fields) => kind('a boolean or an object', (v) => typeof v === 'boolean' || isPlain(v), { fields, base: {} });
const COSTS = kind('an object of route patterns to credits', isPlain, { costs: true });
const STORE = kind('a store from redisStore(client)', () => false);
const METER = kind('an OpenTelemetry Meter (metrics.getMeter(name))', isPlain);
const LANE_BUDGET = kind('', () => false, {
  refused: "A lane's retries draw on its wrapper's retry budget: set `retry.budget` in createFetch, not in lane()",
});

const RATE = { burst: NUMBER, perSecond: NUMBER, learn: BOOLEAN };
const BUDGET = { capacity: NUMBER, throttleCost: NUMBER, transientCost: NUMBER, successRefill: NUMBER };
const retryFields = (budget) => ({
  maxAttempts: NUMBER, timeBudgetMs: NUMBER, attemptTimeoutMs: NUMBER, baseMs: NUMBER, capMs: NUMBER,
  statuses: STATUSES, methods: METHODS, budget,
});
const CREATE_FETCH = {
  rate: kind("'auto' or { burst, perSecond }", (v) => v === 'auto' || isPlain(v), { fields: RATE, base: { burst: 2, perSecond: 2 } }),
  fetch: FUNCTION,
  retry: flagOr(retryFields(kind('false or an object', (v) => v === false || isPlain(v), { fields: BUDGET, base: {} }))),
  onEvent: FUNCTION, usageUrl: STRING, store: STORE, maxWaitMs: NUMBER, maxWaiting: NUMBER, meter: METER,
  threads: BOOLEAN, typedErrors: BOOLEAN,
  cache: flagOr({ maxBytes: NUMBER, maxEntryBytes: NUMBER, defaultTtlMs: NUMBER, staleForMs: NUMBER, keyHeaders: HEADER_NAMES }),
  quota: object({ spread: BOOLEAN, reserve: NUMBER, burstMs: NUMBER, refreshMs: NUMBER, costs: COSTS }),
};
const LANE = { name: STRING, weight: NUMBER, reserve: BOOLEAN, retry: flagOr(retryFields(LANE_BUDGET)), maxWaitMs: NUMBER, maxWaiting: NUMBER };
const BATCH = { deadlineMs: NUMBER, retryBudget: NUMBER };
const REDIS = { prefix: STRING, timeoutMs: NUMBER, onFailure: STRING, localShare: NUMBER, retryMs: NUMBER };
const SIM_LANE = object({ name: STRING, weight: NUMBER, workers: NUMBER, snapshots: NUMBER, startMs: NUMBER }, { workers: 1 });
const SIMULATE = {
  shared: BOOLEAN,
  separateGates: kind('a boolean or a number', (v) => typeof v === 'boolean' || typeof v === 'number', { ranged: true }),
  alwaysReject: BOOLEAN, maxAttempts: NUMBER,
  retryBudget: kind('a number or null', (v) => v === null || typeof v === 'number', { ranged: true }),
  workers: NUMBER, burst: NUMBER, perSecond: NUMBER, retryAfterMs: NUMBER, learn: BOOLEAN,
  headers: kind("a boolean or 'throttled'", (v) => typeof v === 'boolean' || v === 'throttled'),
  lookups: object({ calls: NUMBER, burst: NUMBER, perSecond: NUMBER }, { calls: 1, burst: 1, perSecond: 1 }),
  processes: NUMBER, threads: NUMBER, storeLatencyMs: NUMBER, snapshots: NUMBER, latencyMs: NUMBER,
  lanes: kind('an array', Array.isArray, { each: SIM_LANE }),
  polls: NUMBER, pollEveryMs: NUMBER,
  cache: flagOr({ ttlMs: NUMBER, staleForMs: NUMBER }),
  quota: object({ limit: NUMBER, periodMs: NUMBER, days: NUMBER, used: NUMBER, periods: NUMBER, spread: BOOLEAN,
    reserve: NUMBER, burstMs: NUMBER, refreshMs: NUMBER, costs: COSTS }, { limit: 5 }),
};

const client = { evalsha() {}, script() {} };
const wrapper = createFetch();
// Each surface: its options' name in errors, its fields, a base that works, and what of a
// result tells two results apart (to check that `undefined` is as left out).
const SURFACES = [
  { name: 'createFetch', what: 'options', fields: CREATE_FETCH, base: {}, call: (o) => createFetch(o), seen: (f) => f.describe().text },
  { name: 'lane', what: 'lane options', prefix: 'lane.', fields: LANE, base: {}, call: (o) => wrapper.lane(o), seen: (f) => f.describe().text.replace(/lane-\d+/g, 'lane-n') },
  { name: 'batch', what: 'batch options', prefix: 'batch.', fields: BATCH, base: { deadlineMs: 60_000 }, call: (o) => wrapper.batch(o), seen: (f) => [f.stats().batch.retriesLeft, f.describe().text] },
  { name: 'Gate', what: 'rate', prefix: 'rate.', fields: RATE, base: { burst: 2, perSecond: 2 }, call: (o) => new Gate(o), seen: (g) => [g.admitAt(0), g.admitAt(0), g.admitAt(0), g.blockedUntil] },
  { name: 'redisStore', what: 'redisStore options', fields: REDIS, base: {}, call: (o) => redisStore(client, o), seen: (s) => createFetch({ store: s }).describe().store },
  { name: 'simulate', what: 'options', fields: SIMULATE, base: {}, call: (o) => simulate(o), seen: (r) => JSON.stringify(r) },
];

/** Every case: a label, the options, and what the table says comes of them. */
function corpus() {
  const cases = [];
  const names = new Set();
  const walk = (fields, visit) => {
    for (const [field, k] of Object.entries(fields)) {
      names.add(field);
      visit(field, k);
      if (k.fields) walk(k.fields, visit);
      if (k.each) walk(k.each.fields, visit);
    }
  };
  for (const s of SURFACES) walk(s.fields, () => {});
  const variants = (f) => [f.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`), f.toLowerCase(), `${f}s`, f.toUpperCase()];
  const keys = [...new Set([...names, ...[...names].flatMap(variants), 'bogus', '1', 'ttl', 'perMinute'])];

  for (const s of SURFACES) {
    const call = (o) => () => s.call(o);
    // The options argument itself.
    for (const v of WRONG.filter((v) => !isPlain(v))) {
      cases.push({ label: `${s.name} options: ${typeOf(v)}`, run: call(v), error: `TypeError: Expected \`${s.what}\` to be an object, got ${typeOf(v)}` });
    }
    const place = (what, prefix, fields, base, put) => {
      const known = Object.keys(fields).join(', ');
      const firstWrong = Object.entries(fields).find(([, k]) => !k.accepts(SECRET) && !k.refused);
      // Unknown keys, alone or after a value of the wrong type: the key is what is reported.
      keys.filter((key) => !Object.hasOwn(fields, key)).forEach((key, i) => {
        const error = `TypeError: Unknown option \`${prefix || `${what}.`}${key}\`; known options: ${known}`;
        cases.push({ label: `${s.name} ${what}.${key}`, run: call(put({ ...base, [key]: WRONG[i % WRONG.length] })), error });
        if (firstWrong) cases.push({ label: `${s.name} ${what}.${key} after a wrong value`, run: call(put({ ...base, [firstWrong[0]]: SECRET, [key]: 1 })), error });
      });
      // `undefined` is left out: each field, an unknown key, all of them at once.
      const omit = (key) => Object.fromEntries(Object.entries(base).filter(([k]) => k !== key));
      for (const key of [...Object.keys(fields), 'bogus']) {
        cases.push({ label: `${s.name} ${prefix}${key}: undefined`, run: call(put({ ...base, [key]: undefined })), same: call(put(omit(key))) });
      }
      const allUndefined = Object.fromEntries(Object.keys(fields).map((key) => [key, undefined]));
      cases.push({ label: `${s.name} ${what}: all undefined`, run: call(put({ ...allUndefined, bogus: undefined })), same: call(put({})) });

      for (const [field, k] of Object.entries(fields)) {
        const path = `${prefix}${field}`;
        const at = (v) => put({ ...base, [field]: v });
        for (const v of WRONG.filter((v) => !k.accepts(v))) {
          const error = k.refused ? `TypeError: ${k.refused}` : `TypeError: Expected \`${path}\` to be ${k.says}, got ${typeOf(v)}`;
          cases.push({ label: `${s.name} ${path}: ${typeOf(v)}`, run: call(at(v)), error });
          // An unknown key whose value is undefined changes nothing.
          cases.push({ label: `${s.name} ${path}: ${typeOf(v)}, bogus: undefined`, run: call(put({ ...base, bogus: undefined, [field]: v })), error });
        }
        // A string field's value is never in its error, whatever the field makes of it.
        if (k.accepts(SECRET)) cases.push({ label: `${s.name} ${path}: a secret`, run: call(at(SECRET)), any: true });
        if (k.ranged) for (const v of RANGE) cases.push({ label: `${s.name} ${path}: ${v}`, run: call(at(v)), range: path });
        if (k.holds) {
          for (const v of WRONG.filter((v) => !k.holds(v))) {
            const error = `TypeError: Expected \`${path}\` to hold ${k.items}`;
            cases.push({ label: `${s.name} ${path}: [${typeOf(v)}]`, run: call(at([v])), error });
            cases.push({ label: `${s.name} ${path}: [valid, ${typeOf(v)}]`, run: call(at([k.valid, v])), error });
          }
        }
        if (k.costs) {
          for (const v of WRONG.filter((v) => typeof v !== 'number')) {
            cases.push({ label: `${s.name} ${path}: { route: ${typeOf(v)} }`, run: call(at({ '/odds': v })), error: `TypeError: Expected \`${path}\` to be ${k.says}, got ${typeOf(v)}` });
          }
          for (const v of RANGE) cases.push({ label: `${s.name} ${path}: { route: ${v} }`, run: call(at({ '/odds': v })), range: path });
        }
        if (k.fields) place(path, `${path}.`, k.fields, k.base, (inner) => at(inner));
        if (k.each) {
          for (const [i, others] of [[0, []], [1, [k.each.base]]]) {
            for (const v of WRONG.filter((v) => !isPlain(v))) {
              cases.push({ label: `${s.name} ${path}[${i}]: ${typeOf(v)}`, run: call(at([...others, v])), error: `TypeError: Expected \`${path}[${i}]\` to be an object, got ${typeOf(v)}` });
            }
            place(`${path}[${i}]`, `${path}[${i}].`, k.each.fields, k.each.base, (inner) => at([...others, inner]));
          }
        }
      }
    };
    place(s.what, s.prefix ?? '', s.fields, s.base, (inner) => inner);
  }
  return cases;
}

const outcome = (run, seen) => {
  try {
    return { ok: seen(run()) };
  } catch (e) {
    return { error: `${e.name}: ${e.message}` };
  }
};
const firstField = (message) => /`([^`]+)`/.exec(message)?.[1];

test('every reader refuses each option of the wrong type, unknown or out of range, and leaves out undefined, in its table\'s words', () => {
  const cases = corpus();
  const sort = (c) => (c.same ? 'undefined' : c.range ? 'out of range' : c.any ? 'secret string' : c.error.startsWith('TypeError: Unknown') ? 'unknown key' : 'wrong type');
  const tally = cases.reduce((m, c) => m.set(sort(c), (m.get(sort(c)) ?? 0) + 1), new Map());
  const counts = [...tally].map(([k, n]) => `${n} ${k}`).join(', ');
  console.log(`option corpus: ${cases.length} option objects over ${SURFACES.length} readers (${counts})`);
  assert.ok(cases.length >= 2000, `${cases.length} cases`);
  assert.equal(new Set(cases.map((c) => c.label)).size, cases.length, 'each case its own label');
  const seenOf = new Map(SURFACES.map((s) => [s.name, s.seen]));
  const wrong = [];
  for (const c of cases) {
    const seen = seenOf.get(c.label.split(' ')[0]);
    const got = outcome(c.run, seen);
    const text = got.error ?? '';
    if (text.includes(SECRET)) wrong.push(`${c.label}: the message holds the value: ${text}`);
    let expected;
    if (c.error) expected = { error: c.error };
    else if (c.same) expected = outcome(c.same, seen);
    else if (c.any) expected = undefined;
    else if (!(text.startsWith('RangeError: ') && firstField(text) === c.range)) expected = { error: `RangeError naming \`${c.range}\` first` };
    if (expected !== undefined && !isDeepStrictEqual(got, expected)) {
      wrong.push(`${c.label}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(got).slice(0, 200)}`);
    }
  }
  assert.deepEqual(wrong, []);
});

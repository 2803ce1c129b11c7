// Type tests for odds-gate's index.d.ts, checked by `tsc -p types/tsconfig.json` (strict, no
// emit). Nothing here runs: each line either compiles (a type a user can rely on) or carries a
// `@ts-expect-error` (a mistake the types must catch; if it stops being an error, tsc fails).
import type { Meter } from '@opentelemetry/api';
import {
  createFetch,
  simulate,
  Gate,
  OddsGateError,
  GateAbandonedError,
  QuotaExhaustedError,
  redisStore,
  type AbandonReason,
  type MeterLike,
  type CreateFetchOptions,
  type Description,
  type FetchLike,
  type GatedFetch,
  type GateEvent,
  type GateStats,
  type SimulateResult,
  type SimulateOptions,
  type SimulatedLane,
  type SimulatedLimiter,
  type SimulatedMonth,
  type Stats,
} from 'odds-gate';

// ---- helpers ---------------------------------------------------------------------------------
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true : false;
declare function expectTrue<T extends true>(): void;
declare function expectType<T>(value: T): void;

// ---- the SDK's contract ----------------------------------------------------------------------
// `@odds-api/client` declares fetchImpl exactly so; we restate it rather than import the SDK.
type SdkFetchLike = (input: string | URL, init?: RequestInit) => Promise<Response>;
declare class OddsApiClient {
  constructor(options: { apiKey?: string; baseUrl?: string; bearerToken?: string; fetchImpl?: SdkFetchLike });
}

const fetchImpl = createFetch({ rate: { burst: 2, perSecond: 2 } });
expectType<GatedFetch>(fetchImpl);
const asSdk: SdkFetchLike = fetchImpl; // a drop-in fetchImpl
const asFetch: typeof fetch = fetchImpl; // and a drop-in fetch
void asFetch;
new OddsApiClient({ apiKey: 'key', fetchImpl });
new OddsApiClient({ apiKey: 'key', fetchImpl: fetchImpl.batch({ deadlineMs: 5_000 }) });
new OddsApiClient({ apiKey: 'key', fetchImpl: fetchImpl.lane({ weight: 9 }) });
new OddsApiClient({ apiKey: 'key', fetchImpl: fetchImpl.lane({ retry: false, maxWaiting: 20 }).batch({ deadlineMs: 5_000 }) });
fetchImpl.lane();
// @ts-expect-error a lane's retries draw on the wrapper's budget
fetchImpl.lane({ retry: { budget: false } });
// @ts-expect-error a weight is a number
fetchImpl.lane({ weight: '9' });
expectType<string>(fetchImpl.lane({ name: 'live', weight: 9 }).stats().lane.name);
// @ts-expect-error a lane's name is a string
fetchImpl.lane({ name: 9 });
// Wider than the SDK's (a Request too), so every SDK fetchImpl call fits it.
expectTrue<Equal<Parameters<FetchLike>[0], string | URL | Request>>();
const sdkCall: FetchLike = ((input: string | URL | Request) => fetch(input)) satisfies SdkFetchLike;
void sdkCall;
void asSdk;

// Called as the SDK calls it, and as people call fetch.
const response: Promise<Response> = fetchImpl('https://api.odds-api.net/v1/usage', {
  method: 'GET',
  headers: { Accept: 'application/json', 'X-API-Key': 'key' },
});
fetchImpl(new URL('https://api.odds-api.net/v1/usage'));
fetchImpl(new Request('https://api.odds-api.net/v1/usage', { headers: { 'X-API-Key': 'key' } }));
// @ts-expect-error not a URL, a string or a Request
fetchImpl(42);
fetchImpl('https://x.invalid/', { headers: new Headers({ Authorization: 'Bearer t' }), signal: AbortSignal.timeout(1_000) });
fetchImpl('https://x.invalid/', { headers: [['X-API-Key', 'key']] });
void response;

// Every documented option, with its documented type.
const full: CreateFetchOptions = {
  rate: { burst: 2, perSecond: 0.5 },
  fetch: (input, init) => fetch(input, init),
  retry: {
    maxAttempts: 3,
    timeBudgetMs: 60_000,
    attemptTimeoutMs: 30_000,
    baseMs: 2_000,
    capMs: 60_000,
    statuses: [429, 502, 503, 504],
    methods: ['GET', 'HEAD'],
    budget: { capacity: 500, throttleCost: 5, transientCost: 10, successRefill: 1 },
  },
  onEvent: (event) => {
    // The event is a discriminated union: each type has its own fields.
    switch (event.type) {
      case 'throttled': expectType<number | null>(event.retryAfterMs); break;
      case 'retry': expectType<number>(event.delayMs); expectType<boolean>(event.serverDelay); break;
      case 'abandoned': expectType<AbandonReason>(event.reason); break;
      case 'quota-probe': expectType<boolean>(event.exhausted); break;
      case 'learned': expectType<number>(event.learned.perSecond); expectType<number | null>(event.learned.burst); break;
      case 'store-down': case 'store-up': expectType<string>(event.scope); break;
      case 'shared-memory-full': expectType<number>(event.slots); break;
      default: { const never: never = event; void never; }
    }
    expectType<string>(event.scope);
  },
  usageUrl: 'https://api.odds-api.net/v1/usage',
};
createFetch(full);
// An OpenTelemetry Meter from @opentelemetry/api is a MeterLike; a made-up object is not.
declare const meter: Meter;
createFetch({ rate: { burst: 1, perSecond: 1 }, meter });
const meterLike: MeterLike = meter;
void meterLike;
// @ts-expect-error: a meter needs the instrument factories and batch callbacks
createFetch({ rate: { burst: 1, perSecond: 1 }, meter: { createHistogram: () => ({ record: () => {} }) } });
createFetch({ rate: { burst: 1, perSecond: 1 }, retry: false });
createFetch({ rate: { burst: 1, perSecond: 1 }, retry: true });
createFetch({ typedErrors: true });
createFetch({ cache: true });
createFetch({ threads: false, quota: { spread: true, reserve: 0.1, refreshMs: 60_000, costs: { 'GET /odds/history': 5 } } });
// @ts-expect-error: costs are numbers of credits
createFetch({ threads: false, quota: { spread: true, costs: { '/odds/history': 'five' } } });
expectType<number | undefined>(createFetch({ cache: { maxBytes: 1 << 20, defaultTtlMs: 5_000 } }).stats().cache?.requestsSaved);
// @ts-expect-error cache options are numbers
createFetch({ cache: { maxBytes: "1MB" } });
createFetch({ cache: { keyHeaders: ['X-Odds-Key'] } });
// @ts-expect-error keyHeaders is a list of header names
createFetch({ cache: { keyHeaders: 'X-Odds-Key' } });
// @ts-expect-error typedErrors is a boolean
createFetch({ typedErrors: "yes" });
createFetch({ rate: { burst: 1, perSecond: 1 }, retry: { budget: false } });

// ---- wrong options are type errors -------------------------------------------------------------
// Without a rate (or with 'auto'), the allowance is learned; with `learn: true`, below a ceiling.
createFetch({});
createFetch();
createFetch({ rate: 'auto' });
createFetch({ rate: { burst: 5, perSecond: 10, learn: true } });
// @ts-expect-error: 'auto' is the only word `rate` takes
createFetch({ rate: 'fast' });
// @ts-expect-error: `perSecond` is required
createFetch({ rate: { burst: 2 } });
// @ts-expect-error: `burst` is a number, not a string
createFetch({ rate: { burst: '2', perSecond: 2 } });
// @ts-expect-error: an unknown option (a typo of `retry`)
createFetch({ rate: { burst: 2, perSecond: 2 }, retries: 3 });
// @ts-expect-error: unknown field of `rate`
createFetch({ rate: { burst: 2, perSecond: 2, perMinute: 120 } });
// @ts-expect-error: `retry` is a boolean or an object, not a count
createFetch({ rate: { burst: 2, perSecond: 2 }, retry: 3 });
// @ts-expect-error: statuses are numbers
createFetch({ rate: { burst: 2, perSecond: 2 }, retry: { statuses: ['429', '503'] } });
// @ts-expect-error: the budget is an object or `false`, never `true`
createFetch({ rate: { burst: 2, perSecond: 2 }, retry: { budget: true } });
// @ts-expect-error: unknown retry field
createFetch({ rate: { burst: 2, perSecond: 2 }, retry: { attempts: 3 } });
// @ts-expect-error: onEvent gets a GateEvent, whose `type` is one of four strings
createFetch({ rate: { burst: 2, perSecond: 2 }, onEvent: (e: { type: number }) => void e });
// @ts-expect-error: the input is a string or a URL
fetchImpl(42);

// ---- stats(), describe(), batch(), resetQuota() -----------------------------------------------
const stats = fetchImpl.stats();
expectTrue<Equal<typeof stats, Stats>>();
expectType<number>(stats.admitted);
expectType<number>(stats.waiting);
expectType<{ remainingMs: number; retriesLeft: number | null } | undefined>(stats.batch);
const gate: GateStats | undefined = stats.gates[0];
if (gate) {
  expectType<string>(gate.scope);
  expectType<number>(gate.rate.perSecond);
  expectType<number | null>(gate.learned?.burst ?? null);
  expectType<Date | null | undefined>(gate.learned?.lastThrottle);
  expectType<number>(gate.cooldownRemainingMs);
  expectType<number>(gate.retries.throttled + gate.retries.serverError + gate.retries.network + gate.retries.timeout);
  expectType<number>(gate.abandoned['retry-after-exceeds-deadline']);
  expectTrue<Equal<typeof gate.quota.state, 'open' | 'probing' | 'exhausted'>>();
  expectType<Date | null>(gate.quota.periodEnd);
  expectType<number | undefined>(gate.quota.spreadPerHour);
  expectType<Date | null | undefined>(gate.quota.projectedEnd);
  expectType<number | null>(gate.retryBudget);
  expectType<number>(gate.admissionWaitMs.bins[0]!.leMs);
  expectType<number | null>(gate.lastFeedback?.retryAfterMs ?? null);
  // @ts-expect-error: the retry budget may be null (no budget)
  const tokens: number = gate.retryBudget;
  void tokens;
  // @ts-expect-error: no such state
  gate.quota.state === 'closed';
}

const description = fetchImpl.describe();
expectTrue<Equal<typeof description, Description>>();
expectType<string>(description.text);
expectType<string | undefined>(description.backoff);
expectType<{ burst: number; perSecond: number } | null>(description.rate);
expectType<boolean>(description.learn);

const round = fetchImpl.batch({ deadlineMs: 5_000, retryBudget: 4 });
expectType<GatedFetch>(round);
expectType<number | null | undefined>(round.stats().batch?.retriesLeft);
round.batch({ deadlineMs: 1_000 }); // a batch is a GatedFetch like any other
// @ts-expect-error: a batch needs its deadline
fetchImpl.batch({});
// @ts-expect-error: retryBudget is a count
fetchImpl.batch({ deadlineMs: 5_000, retryBudget: 'four' });

expectTrue<Equal<ReturnType<typeof fetchImpl.resetQuota>, void>>();
expectTrue<Equal<ReturnType<typeof fetchImpl.clearCooldown>, void>>();
expectType<string>(description.waiting);
createFetch({ rate: { burst: 2, perSecond: 2 }, maxWaitMs: 1_000, maxWaiting: 100 });
// @ts-expect-error: maxWaitMs is a number of milliseconds
createFetch({ rate: { burst: 2, perSecond: 2 }, maxWaitMs: '1s' });

// ---- simulate() --------------------------------------------------------------------------------
const sim = simulate();
expectTrue<Equal<typeof sim, SimulateResult>>();
const { attempts, throttled, completed, abandoned, lastAttemptMs, timeline } = simulate({
  shared: true, workers: 8, burst: 2, perSecond: 2, retryAfterMs: 1_000, maxAttempts: 10, retryBudget: null,
});
expectType<number>(attempts + throttled + completed + abandoned + lastAttemptMs);
expectTrue<Equal<(typeof timeline)[number]['status'], 200 | 429>>();
expectType<number>(timeline[0]!.at + timeline[0]!.worker);
simulate({ separateGates: true });
simulate({ separateGates: 3, alwaysReject: true, retryBudget: 4 });
// @ts-expect-error: workers is a number
simulate({ workers: '8' });
// @ts-expect-error: unknown option (a typo of `shared`)
simulate({ sharde: true });
// @ts-expect-error: the server only answers 200 or 429 in the model
sim.timeline[0]!.status === 503;
simulate({ learn: true, headers: true });
simulate({ learn: true, headers: false });
simulate({ learn: true, headers: 'throttled' });
// @ts-expect-error: headers is true, false or 'throttled'
simulate({ headers: 'always' });
const withLookups = simulate({ shared: true, lookups: { calls: 40, burst: 10, perSecond: 10 } });
expectTrue<Equal<typeof withLookups.limiters, [SimulatedLimiter, SimulatedLimiter] | undefined>>();
if (withLookups.limiters) {
  const [snapshotLimiter, eventsLimiter] = withLookups.limiters;
  expectTrue<Equal<typeof snapshotLimiter.name, 'snapshot' | 'events'>>();
  expectType<number>(snapshotLimiter.attempts + snapshotLimiter.throttled + snapshotLimiter.doneMs + eventsLimiter.attempts);
}
// @ts-expect-error: a lookup allowance needs its calls, burst and perSecond
simulate({ lookups: { calls: 4, burst: 2 } });
// @ts-expect-error: unknown field of lookups
simulate({ lookups: { calls: 4, burst: 2, perSecond: 2, path: '/v1/events/e1' } });
simulate({ processes: 2, storeLatencyMs: 5 });
simulate({ threads: 4, workers: 8 });
const polled = simulate({ shared: true, polls: 24, pollEveryMs: 250, cache: { ttlMs: 2_000 } });
expectTrue<Equal<typeof polled.requestsSaved, number | undefined>>();
expectTrue<Equal<(typeof polled.timeline)[number]['cache'], 'hit' | 'coalesced' | 'stale' | undefined>>();
simulate({ cache: true });
simulate({ cache: { ttlMs: 60_000, staleForMs: 86_400_000 } });
const month = simulate({ workers: 1, polls: 28_500, quota: { limit: 10_000, days: 30, spread: true, costs: { 'GET /events/*/odds/snapshot': 1 } } });
expectTrue<Equal<typeof month.quota, SimulatedMonth | undefined>>();
expectTrue<Equal<NonNullable<typeof month.quota>['exhaustedAtMs'], number | null>>();
expectType<number[]>(month.quota!.spent);
// @ts-expect-error: a quota needs its limit
simulate({ quota: { days: 30 } });
// @ts-expect-error: the snapshots' lifetime is cache.ttlMs, in ms
simulate({ cache: { ttl: 2 } });
// @ts-expect-error: processes is a number
simulate({ processes: true });
// @ts-expect-error: storeLatencyMs is a number of milliseconds
simulate({ processes: 2, storeLatencyMs: '5ms' });
const options: SimulateOptions = { processes: 2, headers: 'throttled', lookups: { calls: 1, burst: 1, perSecond: 1 } };
simulate(options);
const laned = simulate({ burst: 2, perSecond: 2, lanes: [{ name: 'background', weight: 1, workers: 40 }, { name: 'live', weight: 9, workers: 8, startMs: 1_000 }] });
expectTrue<Equal<typeof laned.lanes, SimulatedLane[] | undefined>>();
expectType<number>(laned.lanes![0]!.doneMs + laned.lanes![0]!.meanWaitMs + laned.lanes![0]!.maxWaitMs + laned.lanes![0]!.firstWorker);
expectType<string>(laned.lanes![0]!.name);
// @ts-expect-error a lane needs its workers
simulate({ lanes: [{ name: 'live', weight: 9 }] });
// @ts-expect-error unknown field of a lane
simulate({ lanes: [{ workers: 1, start: 1_000 }] });

// ---- Gate ----------------------------------------------------------------------------------------
const g = new Gate({ burst: 2, perSecond: 2 });
expectType<number>(g.admitAt(0));
g.defer(0, 1_000);
expectType<number>(g.blockedUntil);
// @ts-expect-error: blockedUntil is read-only
g.blockedUntil = 0;
g.free();

// ---- errors ------------------------------------------------------------------------------------
async function refresh(): Promise<string> {
  try {
    const r = await fetchImpl('https://api.odds-api.net/v1/events/e1/odds/snapshot');
    return await r.text();
  } catch (err: unknown) {
    if (err instanceof GateAbandonedError) {
      expectTrue<Equal<typeof err.name, 'GateAbandonedError'>>();
      expectType<number>(err.attempts);
      expectType<number | null>(err.status);
      expectType<number | null>(err.retryAfterMs);
      expectType<OddsGateError>(err);
      expectType<Error>(err);
      switch (err.reason) {
        case 'attempts': case 'time-budget': case 'retry-budget': case 'deadline':
        case 'retry-after-exceeds-deadline': case 'store-unavailable':
        case 'queue-wait': case 'queue-full': case 'credit-wait':
          break;
        default: { const never: never = err.reason; void never; }
      }
      // @ts-expect-error: not a reason
      err.reason === 'timeout';
      // @ts-expect-error: the fields are read-only
      err.reason = 'attempts';
      return 'gave up';
    }
    if (err instanceof QuotaExhaustedError) {
      expectTrue<Equal<typeof err.name, 'QuotaExhaustedError'>>();
      expectType<Date | null>(err.periodEnd);
      return 'quota';
    }
    if (OddsGateError.is(err)) {
      expectType<OddsGateError>(err);
      expectType<string>(err.message);
    }
    throw err;
  }
}
void refresh;

// A GateEvent is what onEvent handlers receive, reusable in user code.
const log = (e: GateEvent): string => `${e.type} ${e.scope}`;
void log;

// Fleet mode: a store from redisStore() plugs into createFetch; anything else does not.
declare const ioredisLike: { evalsha(...a: unknown[]): Promise<unknown>; script(...a: unknown[]): Promise<unknown> };
const shared = createFetch({ rate: { burst: 2, perSecond: 2 }, store: redisStore(ioredisLike, { onFailure: 'closed', localShare: 0.5 }) });
expectType<string>(shared.stats().gates[0].store.kind);
expectType<boolean | undefined>(shared.stats().gates[0].store.threads);
// @ts-expect-error: a store must come from redisStore()
createFetch({ rate: { burst: 2, perSecond: 2 }, store: ioredisLike });
// @ts-expect-error: onFailure is 'local' or 'closed'
redisStore(ioredisLike, { onFailure: 'open' });

/**
 * odds-gate: one shared rate-limit gate per API key, in front of the Odds API SDK's `fetchImpl`.
 */

/**
 * A fetch: what the Odds API SDK's `fetchImpl` option accepts (it passes a string or a `URL`),
 * and what `fetch` itself takes (a `Request` too, whose method, headers and body are read).
 */
export type FetchLike = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/** A token-bucket allowance. */
export interface Rate {
  /** Requests that may go at once when the bucket is full. A finite number >= 1. No default. */
  burst: number;
  /** Tokens refilled per second (fractional refill). A finite number > 0. No default. */
  perSecond: number;
}

/** The shared, refilling retry budget (after AWS SDK standard retry mode). */
export interface RetryBudgetOptions {
  /** Tokens when full. @default 500 */
  capacity?: number;
  /** Cost of retrying a 429. @default 5 */
  throttleCost?: number;
  /** Cost of retrying a 5xx, a network failure or a timeout. @default 10 */
  transientCost?: number;
  /** Added by a call that succeeds first time (a retried success refunds its retry's cost). @default 1 */
  successRefill?: number;
}

export interface RetryOptions {
  /** Attempts per call, the first included (1 to 100). @default 3 */
  maxAttempts?: number;
  /**
   * Per-call time budget for retrying, counted from the call's first send: no retry is
   * admitted after it. Waiting in the queue for the first send is not retrying (see `maxWaitMs`).
   * @default 60000
   */
  timeBudgetMs?: number;
  /** One attempt's time limit before it is aborted and retried as a timeout. @default 30000 */
  attemptTimeoutMs?: number;
  /**
   * Full-jitter backoff base without Retry-After: uniform(0, min(capMs, baseMs * 2^n)). Failures
   * in a row (5xx, network failures, timeouts) hold the whole gate the same way. @default 2000
   */
  baseMs?: number;
  /** Full-jitter backoff cap. Never applied to a server's Retry-After. @default 60000 */
  capMs?: number;
  /** Retryable statuses; 408, 425, 429 or 5xx only (400/401/403/404/422 are refused). @default [429, 502, 503, 504] */
  statuses?: number[];
  /** Methods replayed without an Idempotency-Key. @default ['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE'] */
  methods?: string[];
  /** The gate's shared retry budget, or `false` for none. @default { capacity: 500, throttleCost: 5, transientCost: 10, successRefill: 1 } */
  budget?: RetryBudgetOptions | false;
}

/** What `onEvent` receives. Never carries a credential. */
export type GateEvent =
  | { type: 'throttled'; scope: string; retryAfterMs: number | null }
  | { type: 'retry'; scope: string; attempt: number; delayMs: number; serverDelay: boolean }
  | { type: 'abandoned'; scope: string; reason: AbandonReason; attempts: number }
  | { type: 'quota-probe'; scope: string; exhausted: boolean; answered: boolean }
  | { type: 'learned'; scope: string; learned: LearnedAllowance }
  | { type: 'store-down' | 'store-up'; scope: string }
  /**
   * The memory the process's threads share had all its `slots` busy (its most): this key's
   * gate keeps an allowance of its own in this thread. Once per gate, as it is made.
   */
  | { type: 'shared-memory-full'; scope: string; slots: number };

export interface CreateFetchOptions {
  /**
   * The key's allowance. `{ burst, perSecond }` is enforced as given (the provider's documented
   * allowance). Left out, or `'auto'`, the gate learns it from the responses
   * (`X-RateLimit-Limit`/`-Remaining`, or where 429s fall), starting with one request in
   * flight; `{ burst, perSecond, learn: true }` learns below that ceiling. Every wrapper in
   * the process that sees the same credential shares one gate, so they must all pass the same
   * `rate` (and retry budget); a different one for a credential that already has a gate
   * rejects that call with a `RangeError`. With a `store`, either works: what a gate learns is
   * the fleet's.
   * @default 'auto'
   */
  rate?: Rate | (Rate & { learn: true }) | 'auto';
  /**
   * The fetch that actually sends requests.
   * @default globalThis.fetch, looked up at each call
   */
  fetch?: (input: any, init?: any) => Promise<Response>;
  /**
   * Retries inside the wrapper, each admitted through the same gate. `false`: observe and
   * admit only (the response or rejection goes back as it is; for best-effort calls).
   * @default true (the defaults of RetryOptions)
   */
  retry?: RetryOptions | boolean;
  /** Called synchronously for each event; a throwing hook is ignored. @default none */
  onEvent?: (event: GateEvent) => void;
  /** Where `GET /usage` is, when it is not beside the request's route. @default derived from the request URL */
  usageUrl?: string;
  /** Where gates live: this process's memory, or `redisStore(client)` for one allowance across processes. @default in-process memory */
  store?: GateStore;
  /**
   * Whether a gate in memory is shared by every thread of the process (worker threads draw
   * from one allowance per key); `false` keeps this wrapper's gates to its thread. @default true
   */
  threads?: boolean;
  /**
   * One request per snapshot: identical GETs without a body (same credential, URL and `Accept`)
   * in flight share one request (one token, one credit; every caller gets its own `Response`,
   * the leader the inner fetch's own), and a 200 is answered again without a request for its
   * lifetime: `Cache-Control` (`no-store`, `no-cache`, `max-age`), `Expires` and `Age`, else its
   * JSON body's `ttl_seconds`, else `defaultTtlMs`. Past it, an entry answers for `staleForMs`
   * more the calls the gate would hold in a cooldown or refuse (a spent quota, say). Answers
   * from the cache carry `x-odds-gate-cache: hit | coalesced | stale` and an `Age`. `true` for
   * the defaults. Shared by the wrapper's lanes and batches, and by whoever shares its
   * allowance: the process's worker threads (`threads`), or the fleet through the `store`'s
   * Redis (one process fetches, the others wait for its answer). @default none
   */
  cache?: boolean | CacheOptions;
  /**
   * The monthly credits. With `spread: true` the gate paces the key's credits to the end of
   * its billing period (#37): it reads `GET /usage` on the key's first call and every
   * `refreshMs`, and a call waits, as for a token, until a credit bucket refilling at
   * `(limit x (1 - reserve) - used) / (period end - now)` has its cost. One bucket per key
   * for the process's worker threads, or with a `store` for the fleet (one `/usage` reader at
   * a time). @default none
   */
  quota?: QuotaOptions;
  /**
   * When the gate stops retrying, reject with a `GateAbandonedError` rather than give the
   * caller what the last attempt came to as fetch would (its `Response`, body unread, or its
   * rejection); and refuse calls for a spent quota with a `QuotaExhaustedError` rather than the
   * server's quota answer given again. @default false
   */
  typedErrors?: boolean;
  /**
   * The longest a call may wait in the queue for its first admission: a call whose admission is
   * predicted later than this is refused at once (`GateAbandonedError`, reason `queue-wait`,
   * attempts 0, no token spent), and a waiting call that a new cooldown pushes past it is let
   * go the same way. A finite number >= 0. @default none (a call waits its turn)
   */
  maxWaitMs?: number;
  /**
   * The most calls that may wait in the queue: a call that would make the queue longer is refused
   * at once (reason `queue-full`). An integer >= 0. @default none
   */
  maxWaiting?: number;
  /**
   * An OpenTelemetry `Meter` (`metrics.getMeter('my-service')` from `@opentelemetry/api`) to
   * report the `odds_gate.*` counters, gauges and histograms on (README, "Metrics"), for this
   * wrapper and its lanes. Every measurement carries `odds_gate.scope` (the gate); those of one
   * lane's calls (the admission-wait and backoff histograms, and the queue depth) also carry
   * `odds_gate.lane`, the lane's name (`"default"` for the wrapper's own calls). The other
   * counters and gauges are the gate's, shared by its lanes.
   * @default none (nothing is reported, nothing is loaded)
   */
  meter?: MeterLike;
}

/**
 * The part of an OpenTelemetry `Meter` that odds-gate uses, so these types do not depend on
 * `@opentelemetry/api` (an optional peer dependency): any `Meter` from it fits.
 */
export interface MeterLike {
  createHistogram(name: string, options?: object): { record(value: number, attributes?: object): void };
  createObservableCounter(name: string, options?: object): object;
  createObservableGauge(name: string, options?: object): object;
  addBatchObservableCallback(callback: (result: any) => void, observables: object[]): void;
  removeBatchObservableCallback(callback: (result: any) => void, observables: object[]): void;
}

export type AbandonReason =
  | 'attempts'
  | 'time-budget'
  | 'retry-budget'
  | 'deadline'
  | 'retry-after-exceeds-deadline'
  | 'store-unavailable'
  | 'queue-wait'
  | 'queue-full'
  /** `quota.spread`'s credit comes later than `maxWaitMs` (60 s for a call with none); `retryAfterMs` says when, when known. */
  | 'credit-wait';

/** Options of `redisStore`. */
export interface RedisStoreOptions {
  /** Key prefix: a gate lives at `<prefix>:{<scope>}:gate`. @default 'og' */
  prefix?: string;
  /** How long to wait for Redis before treating it as down. @default 500 */
  timeoutMs?: number;
  /** While Redis is down: admit locally at `localShare` of the allowance, or reject calls. @default 'local' */
  onFailure?: 'local' | 'closed';
  /** The share of the allowance (and of `quota.spread`'s pace) one process may use alone while Redis is down (0 < x <= 1). @default 0.25 */
  localShare?: number;
  /** How long after a failure Redis is asked again. @default 1000 */
  retryMs?: number;
}

/** A store descriptor for `createFetch({ store })`. */
export interface GateStore {
  readonly __oddsGateStore: true;
}

/**
 * The smallest shape of client `redisStore` accepts: an ioredis or node-redis client, or an
 * @upstash/redis one over HTTP (made with `automaticDeserialization: false`).
 */
export type RedisClientLike =
  | { evalsha(...args: any[]): Promise<unknown>; script(...args: any[]): Promise<unknown> }
  | { evalSha(...args: any[]): Promise<unknown>; scriptLoad(...args: any[]): Promise<unknown> }
  | { evalsha(...args: any[]): Promise<unknown>; scriptLoad(...args: any[]): Promise<unknown> };

/**
 * Keeps gates in Redis so every process that uses the same key shares one allowance.
 * @throws {TypeError} a client without script loading and evalsha (or a node-redis client not connected), or a bad option.
 * @throws {RangeError} an option out of range.
 */
export function redisStore(client: RedisClientLike, options?: RedisStoreOptions): GateStore;

/** Base class of odds-gate's errors. `OddsGateError.is(value)` works across realms. */
export class OddsGateError extends Error {
  static is(value: unknown): value is OddsGateError;
}

/** A call abandoned: never a success. */
export class GateAbandonedError extends OddsGateError {
  readonly name: 'GateAbandonedError';
  readonly reason: AbandonReason;
  /** Attempts actually sent (0 when abandoned before sending). */
  readonly attempts: number;
  /** The last response's status, if one arrived. */
  readonly status: number | null;
  /** The last Retry-After, in ms, if any; for `credit-wait`, when the spread's credit comes (at the earliest, where threads or a store share it), if known. */
  readonly retryAfterMs: number | null;
}

/** The key's monthly quota is spent; calls fail fast until `periodEnd` or `resetQuota()`. */
export class QuotaExhaustedError extends OddsGateError {
  readonly name: 'QuotaExhaustedError';
  readonly periodEnd: Date | null;
}

export interface BatchOptions {
  /** The round's deadline from now: a call that cannot be admitted before it is abandoned. No default. */
  deadlineMs: number;
  /** Retries allowed across the whole round, never replenished. @default unlimited (the gate's budget still applies) */
  retryBudget?: number;
}

/**
 * A lane: another `fetchImpl` on the same gates (same credential, allowance, cooldown and retry
 * budget) whose calls wait in a queue of their own. When several lanes have calls waiting on a
 * gate, its admissions go to them in proportion to their weights; a lane with nothing waiting
 * lends its share. Within one process's thread (see the README for threads and fleets).
 */
export interface LaneOptions {
  /**
   * The lane's name in `stats().lane`, `describe().lane` and the metrics' `odds_gate.lane`
   * (1 to 64 characters), and which lane it is in every thread and process sharing the gates
   * (lanes of one name are one lane). @default `"lane-<n>"`, n counting the unnamed lanes made
   * in this thread (1, 2, ...), so two unnamed lanes never share a name
   */
  name?: string;
  /** The lane's share against the other lanes' (a positive finite number). @default 1 */
  weight?: number;
  /**
   * With `quota: { spread: true }`: when the spread has no credit for the calls waiting, this
   * lane's calls take theirs from the reserve (`quota.reserve`) at once, never past the limit,
   * so live odds still go out when background refreshes have spent the spread. @default false
   */
  reserve?: boolean;
  /** The lane's own retries (`false`: none, as for best-effort work); its retries draw on the wrapper's budget, so `retry.budget` is refused here. @default the wrapper's */
  retry?: boolean | Omit<RetryOptions, 'budget'>;
  /** How long the lane's calls may wait in the queue. @default the wrapper's */
  maxWaitMs?: number;
  /** How many calls may wait before the lane's next is refused. @default the wrapper's */
  maxWaiting?: number;
}

/** The headers of the last throttled response, as recorded. */
export interface Feedback {
  retryAfterMs: number | null;
  /** A count above `Number.MAX_SAFE_INTEGER` reads as that number: as good as no limit. */
  limit: number | null;
  /** As `limit`, at most `Number.MAX_SAFE_INTEGER`. */
  remaining: number | null;
  /** Time until the window resets, in ms. */
  resetMs: number | null;
  /** `X-RateLimit-Bucket`: the limiter that answered. */
  limiter: string | null;
}

export interface DurationHistogram {
  count: number;
  sumMs: number;
  maxMs: number;
  /** Counts per bin; `leMs` is the bin's upper bound (the last is Infinity). */
  bins: { leMs: number; count: number }[];
}

/** What a learning gate has learned of its key's allowance. */
export interface LearnedAllowance {
  /** The bucket's capacity (`X-RateLimit-Limit`), once a response gave it. */
  burst: number | null;
  /** The pace admissions follow now, per second. */
  perSecond: number;
  /** The best lower bound the responses give on the server's refill rate, per second. */
  atLeast: number;
  /** `atLeast / perSecond`, at most 1: how much of the pace the evidence backs. */
  confidence: number;
  lastThrottle: Date | null;
}

/** One credential's gate. Times are `performance.now()` milliseconds. */
export interface GateStats {
  /** `anonymous`, or `key:` and 32 hex digits of a SHA-256 of the credential. */
  scope: string;
  /** The allowance admissions follow now (a learning gate's latest estimate). */
  rate: Rate;
  /** A learning gate's estimate; null when the allowance was given. */
  learned: LearnedAllowance | null;
  /**
   * `memory`, or `redis:<prefix>` with Redis call counts and whether Redis is answering. In
   * memory, `threads` says whether the process's threads share the gate's state: false with
   * `threads: false`, where memory cannot be shared, or when the shared memory had no room for
   * the key (see the `shared-memory-full` event).
   */
  store: { kind: string; threads?: boolean; calls?: number; failures?: number; up?: boolean };
  /** Admission requests: first attempts and retries. */
  requests: number;
  admitted: number;
  waiting: number;
  peakWaiting: number;
  /** Waiters that left the queue without a token (aborted). */
  cancelled: number;
  /** Calls abandoned in the queue because admission would come after their deadline. */
  abandonedInQueue: number;
  /** 429 responses observed. */
  throttled: number;
  /** Times the gate's one timer fired. */
  wakeups: number;
  timerArmed: boolean;
  /** No admission before this time (a Retry-After, or failures in a row); 0 when there was none. */
  cooldownUntil: number;
  cooldownRemainingMs: number;
  /** Refilling at half rate: the server says the key is nearly spent by someone else. */
  slow: boolean;
  lastFeedback: Feedback | null;
  retries: { throttled: number; serverError: number; network: number; timeout: number };
  abandoned: Record<AbandonReason, number>;
  quotaRejected: number;
  quota: QuotaStats;
  /** Tokens left in the shared retry budget, or null without one. */
  retryBudget: number | null;
  admissionWaitMs: DurationHistogram;
  backoffMs: DurationHistogram;
}

/** `createFetch({ quota })`. */
export interface QuotaOptions {
  /** Pace the key's credits to the end of its billing period. @default false */
  spread?: boolean;
  /** The share of the limit the spread leaves unspent, in [0, 1). @default 0.05 */
  reserve?: number;
  /** The most credits the bucket holds, as milliseconds of its refill (never more than 5 % of what is left). @default 3600000 (an hour) */
  burstMs?: number;
  /** How often `GET /usage` is read to correct the bucket, in ms: at least 1000. @default 900000 (15 minutes) */
  refreshMs?: number;
  /**
   * What calls cost in credits, by route pattern: a path whose segments match the end of the
   * request's path, `*` for any one segment (ids: a segment with a digit, or longer than 24
   * characters, is always `*`), after an optional method: `{ 'GET /odds/history': 5 }` costs 5
   * for `GET /v1/events/{id}/odds/history`. The pattern with the most segments wins. Routes not named are learned from `/usage`, 1 until then (shared by threads or a store: one scale for all of them).
   */
  costs?: Record<string, number>;
}

/** `stats().gates[i].quota`: the quota's state; with `quota.spread`, the spread's figures too. */
export interface QuotaStats {
  state: 'open' | 'probing' | 'exhausted';
  /** When the spent quota opens again; with `quota.spread`, the billing period's end the readings said (null before one). */
  periodEnd: Date | null;
  /** With `quota.spread`: the key's credits used, as the last `/usage` and the calls since say (0 before a reading). */
  used?: number;
  /** With `quota.spread`: the period's limit (0 before a reading). */
  limit?: number;
  /** With `quota.spread`: the credit bucket's refill, in credits per hour. */
  spreadPerHour?: number;
  /** With `quota.spread`: calls in queue while its head waits for credit. */
  waitingForCredit?: number;
  /** With `quota.spread`: calls sent with no bucket to pace them (no `/usage` reading answered yet). */
  unpaced?: number;
  /**
   * With `quota.spread`: when the limit would be reached at the pace the key spent between the
   * last two readings; null before two readings, or when that is after the period's end.
   */
  projectedEnd?: Date | null;
}

export interface CacheOptions {
  /** The bytes of every kept body together; the least recently used go first. @default 16777216 (16 MiB) */
  maxBytes?: number;
  /** The largest body kept (callers that joined a larger one's request send their own). At most `maxBytes`. @default 1048576 (1 MiB) */
  maxEntryBytes?: number;
  /** The lifetime of a 200 that says none; 0 shares requests in flight only. @default 0 */
  defaultTtlMs?: number;
  /**
   * How long past its lifetime an entry is kept to answer, marked `x-odds-gate-cache: stale`,
   * the calls the gate would hold in a cooldown or refuse (spent quota, `queue-wait`,
   * `credit-wait`, `queue-full`, `deadline`, `store-unavailable`, `retry-after-exceeds-deadline`); 0: never.
   * @default 600000
   */
  staleForMs?: number;
  /**
   * Request headers that say who asks, beside `Authorization`, `Proxy-Authorization`, `Cookie`,
   * `X-API-Key` and the URL's `apiKey`: each a part of an entry's key. A request that carries
   * none of these is neither kept nor joined to another's. Header names (tokens), any case.
   * @default []
   */
  keyHeaders?: readonly string[];
}

/** `stats().cache`: what the wrapper's cache holds and saved. */
export interface CacheStats {
  entries: number;
  bytes: number;
  /** Calls answered by a fresh entry. */
  hits: number;
  /** Calls that joined a request in flight. */
  coalesced: number;
  /** Calls answered by a stale entry instead of the gate's refusal or cooldown. */
  stale: number;
  /** Entries dropped for room. */
  evictions: number;
  /** hits + coalesced + stale. */
  requestsSaved: number;
}

export interface Stats {
  admitted: number;
  waiting: number;
  throttled: number;
  retries: number;
  abandoned: number;
  /** Present on a batch's fetchImpl. */
  batch?: { remainingMs: number; retriesLeft: number | null };
  /** Present with `cache`. */
  cache?: CacheStats;
  /** Every gate this wrapper has used, most recently used first. */
  gates: GateStats[];
  /**
   * The wrapper's lane (its own calls: `"default"`, weight 1, shared with every wrapper's own
   * calls): its calls waiting in it now, and this wrapper's admissions and their total wait in
   * line.
   */
  lane: { name: string; weight: number; waiting: number; admitted: number; waitedMs: number };
}

/** The configuration summary: what to tune when the provider changes its limits. */
export interface Description {
  /** The allowance enforced, or learning's ceiling; null when learned without one. */
  rate: Rate | null;
  /** The allowance is learned from the responses. */
  learn: boolean;
  /** Present when learning: what each of the wrapper's gates has learned so far. */
  learned?: string;
  scope: string;
  store: string;
  admission: string;
  feedback: string;
  retry: string;
  /** Present when retries are on. */
  backoff?: string;
  /** Present when retries are on. */
  bounds?: string;
  /** How long a call may wait in the queue, and how long the queue may be. */
  waiting: string;
  /** Present on a lane: its name, its weight and what it means. */
  lane?: string;
  retryBudget: string;
  quota: string;
  /** Present with `quota.spread`: how the credits are paced. */
  spread?: string;
  /** Present with `cache`: what is cached, for how long, and who shares it. */
  cache?: string;
  metrics: string;
  /** All of the above as readable text. */
  text: string;
}

/** A drop-in `fetchImpl` with the gate's figures attached. */
export interface GatedFetch extends FetchLike {
  /**
   * Live figures of the gates this wrapper uses now: a gate idle for some seconds is forgotten
   * (its counters go to the wrapper's totals, what it learned to its key's memo) and leaves the list.
   */
  stats(): Stats;
  /** The configuration summary. */
  describe(): Description;
  /** A fetchImpl for one refresh round sharing this wrapper's gates. */
  batch(options: BatchOptions): GatedFetch;
  /**
   * A fetchImpl on the same gates whose calls wait in a lane of their own, sharing admissions
   * with the other lanes by weight (the wrapper's own calls are the lane `default`, of weight 1),
   * in every thread and process sharing the gates.
   * @throws {RangeError} a weight that is not a positive finite number.
   * @throws {TypeError} an option of the wrong type, an unknown option, or `retry.budget`.
   */
  lane(options?: LaneOptions): GatedFetch;
  /** Declares the quota available again on every gate this wrapper has used. */
  resetQuota(): void;
  /**
   * Ends the cooldown on every gate this wrapper has used (for every process sharing them):
   * the way out of a cooldown nobody wants any more, such as a `Retry-After` of years.
   */
  clearCooldown(): void;
}

/**
 * Wraps `fetch` so that every call waits for its credential's shared gate first.
 * @throws {TypeError} an option of the wrong type, or an unknown option. A learned `rate`
 * works with a `store` too: the fleet's processes share one estimate through it.
 * Calls resolve with the inner fetch's own Response (a final one, or the last one when
 * retries are spent; for a spent quota, the server's quota 429 given again, marked
 * `x-odds-gate: quota-exhausted`) and reject with the inner fetch's own rejection (the last one
 * when retries are spent), a `GateAbandonedError` (refused before any answer, or every give-up
 * with `typedErrors`), a `QuotaExhaustedError` (with `typedErrors`, or when no quota 429 was
 * read), the caller's abort reason, or a `RangeError` for a Retry-After too large to honour.
 * @throws {RangeError} a rate that is zero, negative or not finite (the message names the field).
 */
export function createFetch(options?: CreateFetchOptions): GatedFetch;

export interface SimulateOptions {
  /** Every attempt passes one gate. @default false */
  shared?: boolean;
  /** Worker `i` uses gate `i % n` (`true` is 2): one gate per process. @default false */
  separateGates?: boolean | number;
  /** The server rejects everything. @default false */
  alwaysReject?: boolean;
  /** Attempts per worker, the first included. @default 10 */
  maxAttempts?: number;
  /** Retries allowed across all workers, not replenished; `null` for none. @default null */
  retryBudget?: number | null;
  /** The wrapper's own workers (the `default` lane, with `lanes`). @default 8, or 0 with `lanes` */
  workers?: number;
  /** The server's (and the gates') burst. @default 2 */
  burst?: number;
  /** The server's (and the gates') refill per second. @default 2 */
  perSecond?: number;
  /** The server's Retry-After on each 429, in ms. @default 1000 */
  retryAfterMs?: number;
  /** The gates are not told the allowance: they learn it from the responses. @default false */
  learn?: boolean;
  /**
   * Where the server sends X-RateLimit-Limit and -Remaining (and, with `lookups`,
   * X-RateLimit-Bucket): `true` on every answer, `false` on none, `'throttled'` on 429s only
   * (as the Odds API's OpenAPI documents them). @default false
   */
  headers?: boolean | 'throttled';
  /**
   * That many event lookups (GET /v1/events/{id}), one per extra worker (worker
   * `workers + j`), all at time 0, answered by a second limiter of the key with this
   * allowance; the result then has `limiters`. @default undefined (no lookups)
   */
  lookups?: SimulatedLookups;
  /**
   * Worker `i` is in process `i % n`, and the processes' gates share a store on the virtual
   * clock. Excludes `shared`, `separateGates` and `threads` (a TypeError). @default undefined
   */
  processes?: number;
  /**
   * Worker `i` is in thread `i % n` of one process, whose threads share memory. Excludes
   * `shared`, `separateGates` and `processes` (a TypeError). @default undefined
   */
  threads?: number;
  /** A store round trip in ms (with `processes`). @default 1 */
  storeLatencyMs?: number;
  /** Snapshots each worker fetches, one after another. @default 1 */
  snapshots?: number;
  /** From a request's arrival at the server to its response's return. @default 0 */
  latencyMs?: number;
  /**
   * Lanes of workers beside the wrapper's own, each made as `fetchImpl.lane()` makes one, on
   * the one shared gate (with them `shared` is the default, and `shared: false`,
   * `separateGates`, `processes`, `threads` and `lookups` are refused: a TypeError). Their
   * workers come after the wrapper's own in the timeline, lane by lane; the result then has
   * `lanes`. @default undefined (no lanes)
   */
  lanes?: SimulatedLaneOptions[];
  /** Times each of the wrapper's own workers fetches its snapshots. @default 1 */
  polls?: number;
  /**
   * Poll `i` starts at `i * pollEveryMs`, or when the one before ends if later. @default 0
   * (with `quota`: the period over `polls`, the polls spread evenly over it)
   */
  pollEveryMs?: number;
  /**
   * The workers' GETs go through `createFetch({ cache })`'s cache (one per process or
   * thread), and the workers poll the same snapshots: a fresh
   * entry answers a call without a request, a call identical to one in flight joins it.
   * `ttlMs` is how long the server's snapshots are fresh (its `ttl_seconds`, in ms); `true` is
   * `{ ttlMs: 0 }` (calls in flight share one request, nothing is answered fresh; an entry stays only for `staleForMs`, to answer stale). `staleForMs` (10 min,
   * as `createFetch`'s) is how long past that a kept entry answers at once, stale, a call the
   * gate would hold (a cooldown, no credit in the spread) or refuse (a spent quota). A key
   * never gets another key's answer. The result then has `hits`, `coalesced`, `stale` and
   * `requestsSaved`. @default undefined (no cache)
   */
  cache?: boolean | { ttlMs?: number; staleForMs?: number };
  /**
   * The key's monthly credits: the server charges each answered call its credits (`costs`,
   * else 1), answers the API's quota 429 once they are spent and `/usage` with its count, and
   * the run ends with the period. `spread: true` (with `reserve`, `burstMs`, `refreshMs`,
   * `costs` as `createFetch`'s `quota` takes them) makes the gates pace the credits to the
   * period's end; not with `processes` or `threads`. The result then has `quota`.
   * @default undefined (no quota)
   */
  quota?: SimulatedQuotaOptions;
}

/** `SimulateOptions.quota`; its errors name the field (`quota.limit`). */
export interface SimulatedQuotaOptions {
  /** Credits in the period (required). */
  limit: number;
  /** The period's length in ms; or `days`. @default 30 days */
  periodMs?: number;
  days?: number;
  /** Credits already used when the run starts. @default 0 */
  used?: number;
  /** Periods one after another (a whole number, 1 to 12); the server's count starts over at each. @default 1 */
  periods?: number;
  /** @default false */
  spread?: boolean;
  /** As `QuotaOptions.reserve`. @default 0.05 */
  reserve?: number;
  /** @default 3600000 */
  burstMs?: number;
  /** @default 900000 */
  refreshMs?: number;
  /** Route patterns to credits: the server charges them, the gates are told them. */
  costs?: Record<string, number>;
}

/** How a month's credits went (`SimulateResult.quota`). */
export interface SimulatedMonth {
  limit: number;
  /** Credits the server counted at the (last) period's end. */
  used: number;
  spread: boolean;
  periodMs: number;
  /** Periods the run held. */
  periods: number;
  /** Calls made. */
  wanted: number;
  /** Calls sent (their first attempt went out). */
  sent: number;
  /** When the first call went out; `null`: none did. */
  firstSentMs: number | null;
  /** For each period after the first, how long its first call sent waited in it: from the period's start, or the call's own if later (`null`: none went). */
  resumedMs: (number | null)[];
  /** A day, or a tenth of a period shorter than two days. */
  sliceMs: number;
  /** Credits spent in each slice. */
  spent: number[];
  /** What an even spend of the credits left (less the reserve, when spreading) puts in a slice. */
  even: number;
  /** When the server first refused a call for the spent quota; `null`: never. */
  exhaustedAtMs: number | null;
  /** `/usage` readings the gates made. */
  readings: number;
  /** Calls refused for the spent quota. */
  refused: number;
  /** Calls admitted a second or more after they started (held for credit, or tokens). */
  held: number;
  /** Calls still waiting when the period ended. */
  waiting: number;
}

/** One of `SimulateOptions.lanes`; its errors name the field (`lanes[1].weight`). */
export interface SimulatedLaneOptions {
  /** As `LaneOptions.name`. @default `"lane-<n>"`, n its place in `lanes` (1, 2, ...) */
  name?: string;
  /** Its share against the other lanes' (the wrapper's own workers: 1). @default 1 */
  weight?: number;
  /** Its workers, each fetching `snapshots` one after another (required). */
  workers: number;
  /** @default the run's `snapshots` */
  snapshots?: number;
  /** When its workers start, in virtual ms. @default 0 */
  startMs?: number;
}

/** One lane's share of a run with `lanes`. */
export interface SimulatedLane {
  name: string;
  weight: number;
  /** Its workers are `firstWorker` to `firstWorker + workers - 1` in the timeline. */
  firstWorker: number;
  workers: number;
  startMs: number;
  /** Its calls (workers x snapshots). */
  calls: number;
  /** Its attempts the gate let through. */
  admitted: number;
  /** Of those, 429s. */
  throttled: number;
  /** When its last call was done (settled), in ms. */
  doneMs: number;
  /** Its admissions' mean and longest wait in the queue, in ms. */
  meanWaitMs: number;
  maxWaitMs: number;
}

/** `SimulateOptions.lookups`: every field is required. */
export interface SimulatedLookups {
  /** Lookups made, from 0 to 100000. */
  calls: number;
  /** Their limiter's burst. */
  burst: number;
  /** Their limiter's refill per second. */
  perSecond: number;
}

/** One limiter's share of a run with `lookups`. */
export interface SimulatedLimiter {
  name: 'snapshot' | 'events';
  /** Attempts it answered. */
  attempts: number;
  /** Of those, 429s. */
  throttled: number;
  /** When its last call was done (settled), in ms. */
  doneMs: number;
}

export interface SimulatedAttempt {
  at: number;
  worker: number;
  status: 200 | 429;
  /**
   * With `cache`: the call was answered without a request, by a fresh entry (`'hit'`), by
   * the request in flight it joined (`'coalesced'`), or by a kept entry past its lifetime
   * when the gate would have held or refused it (`'stale'`); not one of the `attempts`.
   */
  cache?: 'hit' | 'coalesced' | 'stale';
}

export interface SimulateResult {
  attempts: number;
  throttled: number;
  /** `throttled` in the article's word, so its assertions run unchanged. */
  rejected: number;
  completed: number;
  /** Workers that gave up: never counted as completed. */
  abandoned: number;
  lastAttemptMs: number;
  timeline: SimulatedAttempt[];
  /** A learning run's estimates as they changed (the first gate's). */
  learned: { at: number; burst: number | null; perSecond: number; atLeast: number; confidence: number }[];
  /** With `lookups` only: the snapshot limiter, then the events limiter. */
  limiters?: [SimulatedLimiter, SimulatedLimiter];
  /** With `lanes` only: the wrapper's own workers (`default`, when there are any), then each lane. */
  lanes?: SimulatedLane[];
  /** With `cache` only: calls a fresh entry answered. */
  hits?: number;
  /** With `cache` only: calls that joined a request in flight. */
  coalesced?: number;
  /** With `cache` only: calls a kept entry answered stale. */
  stale?: number;
  /** With `cache` only: requests the cache saved (`hits + coalesced + stale`). */
  requestsSaved?: number;
  /** With `quota` only: how the month's credits went. */
  quota?: SimulatedMonth;
}

/** The article's virtual-clock model, run on the production core. */
export function simulate(options?: SimulateOptions): SimulateResult;

/** The article's gate on a virtual clock that starts at 0. */
export class Gate {
  constructor(rate: Rate);
  /** Admits at `now` (spending a token) and returns `now`, or returns when to come back. */
  admitAt(now: number): number;
  /** Holds admissions until `now + delayMs`; never shortens an existing cooldown. */
  defer(now: number, delayMs: number): void;
  readonly blockedUntil: number;
  free(): void;
}

/**
 * odds-gate: one shared rate-limit gate per API key, in front of the Odds API SDK's `fetchImpl`.
 */

/** What the Odds API SDK's `fetchImpl` option accepts. */
export type FetchLike = (input: string | URL, init?: RequestInit) => Promise<Response>;

/** A token-bucket allowance. */
export interface Rate {
  /** Requests that may go at once when the bucket is full. A finite number >= 1. No default. */
  burst: number;
  /** Tokens refilled per second (fractional refill). A finite number > 0. No default. */
  perSecond: number;
}

export interface CreateFetchOptions {
  /**
   * The provider's documented allowance for the key. Every wrapper in the process that sees
   * the same credential shares one gate, so they must all pass the same `rate`; a different one
   * for a credential that already has a gate rejects that call with a `RangeError`.
   */
  rate: Rate;
  /**
   * The fetch that actually sends requests.
   * @default globalThis.fetch, looked up at each call
   */
  fetch?: (input: any, init?: any) => Promise<Response>;
  /**
   * Retries inside the wrapper. Only `false` exists in this version: a 429 goes back to the
   * caller, whose next call waits for the shared gate.
   * @default false
   */
  retry?: false;
}

/** The headers of the last throttled response, as recorded. */
export interface Feedback {
  retryAfterMs: number | null;
  limit: number | null;
  remaining: number | null;
  resetSeconds: number | null;
  bucket: string | null;
}

/** One credential's gate. Times are `performance.now()` milliseconds. */
export interface GateStats {
  /** `anonymous`, or `key:` and 32 hex digits of a SHA-256 of the credential. */
  scope: string;
  rate: Rate;
  admitted: number;
  waiting: number;
  peakWaiting: number;
  /** Waiters that left the line without a token (aborted). */
  cancelled: number;
  /** 429 responses observed. */
  throttled: number;
  /** Times the gate's one timer fired. */
  wakeups: number;
  timerArmed: boolean;
  /** No admission before this time; 0 when never deferred. */
  cooldownUntil: number;
  cooldownRemainingMs: number;
  lastFeedback: Feedback | null;
}

export interface Stats {
  admitted: number;
  waiting: number;
  throttled: number;
  /** Every gate this wrapper has used, most recently used first. */
  gates: GateStats[];
}

/** The configuration summary: what to tune when the provider changes its limits. */
export interface Description {
  rate: Rate;
  scope: string;
  store: string;
  admission: string;
  feedback: string;
  retry: string;
  metrics: string;
  /** All of the above as readable text. */
  text: string;
}

/** A drop-in `fetchImpl` with the gate's figures attached. */
export interface GatedFetch extends FetchLike {
  /** Live figures of every gate this wrapper has used. */
  stats(): Stats;
  /** The configuration summary. */
  describe(): Description;
}

/**
 * Wraps `fetch` so that every call waits for its credential's shared gate first.
 * @throws {TypeError} an option of the wrong type, a missing `rate`, or an unknown option.
 * @throws {RangeError} a rate that is zero, negative or not finite (the message names the field).
 */
export function createFetch(options: CreateFetchOptions): GatedFetch;

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
  /** @default 8 */
  workers?: number;
  /** The server's (and the gates') burst. @default 2 */
  burst?: number;
  /** The server's (and the gates') refill per second. @default 2 */
  perSecond?: number;
  /** The server's Retry-After on each 429, in ms. @default 1000 */
  retryAfterMs?: number;
}

export interface SimulatedAttempt {
  at: number;
  worker: number;
  status: 200 | 429;
}

export interface SimulateResult {
  attempts: number;
  rejected: number;
  completed: number;
  /** Workers that gave up: never counted as completed. */
  abandoned: number;
  lastAttemptMs: number;
  timeline: SimulatedAttempt[];
}

/** The article's virtual-clock model, run on the production core. */
export function simulate(options?: SimulateOptions): SimulateResult;

/** The article's gate on a virtual clock that starts at 0. */
export class Gate {
  constructor(rate: Rate);
  /** Admits at `now` (spending a token) and returns `now`, or returns when to come back. */
  admitAt(now: number): number;
  /** Holds admissions until `now + delayMs`; never shortens an existing hold. */
  defer(now: number, delayMs: number): void;
  readonly blockedUntil: number;
  free(): void;
}

// The AWS SDK for JavaScript v3's adaptive retry rate limiter (`retryMode: 'adaptive'`),
// `DefaultRateLimiter`, ported line for line to plain JavaScript for bench/learn.mjs.
//
// Source (Apache-2.0, Copyright Amazon.com, Inc. or its affiliates):
//   https://github.com/smithy-lang/smithy-typescript/blob/57c1967cfb72dff89d247d0da2703c56befa60f1/packages/core/src/submodules/retry/util-retry/DefaultRateLimiter.ts
// It ships as @smithy/core 3.33.2 (`@smithy/core/retry`), which @smithy/util-retry 4.6.2 (the
// package the SDK's clients import `DefaultRateLimiter` from) re-exports; the published
// dist-es/submodules/retry/util-retry/DefaultRateLimiter.js of @smithy/core 3.33.2 was compared
// with this file: the same statements in the same order, and the same state after the same
// sequence of calls on a fake clock (checked once, by hand, against the published module).
//
// Where this differs from the source:
// - TypeScript's `private`/`readonly` are gone (as in the published JavaScript), so the
//   benchmark can read fillRate, maxCapacity, measuredTxRate, ... for its notes.
// - `isThrottlingError` comes from @smithy/core's service-error-classification; it is ported
//   below, unchanged, with one addition for this benchmark (it talks to the fake API with plain
//   fetch, not an SDK client): a fetch Response with status 429 is a throttling response, as an
//   SDK error with `$metadata.httpStatusCode === 429` is in the source.
// - Nothing else. The limiter's clock is Date.now() / 1000 and its sleep a setTimeout, as there.
//
// Older copies of the same class (packages/util-retry/src/DefaultRateLimiter.ts, before it
// moved into @smithy/core) name `availableTokens` `currentCapacity`, and wait once (`if`) rather
// than until a token is there (`while ... refillTokenBucket()`); one of them also takes an
// optional AbortSignal in getSendToken. This port follows the current source above.

// From packages/core/src/submodules/retry/service-error-classification/constants.ts (same commit).
export const THROTTLING_ERROR_CODES = [
  'BandwidthLimitExceeded',
  'EC2ThrottledException',
  'LimitExceededException',
  'PriorRequestNotComplete',
  'ProvisionedThroughputExceededException',
  'RequestLimitExceeded',
  'RequestThrottled',
  'RequestThrottledException',
  'SlowDown',
  'ThrottledException',
  'Throttling',
  'ThrottlingException',
  'TooManyRequestsException',
  'TransactionInProgressException',
];

// From service-error-classification.ts; the first line is this port's addition (see above).
export const isThrottlingError = (error) =>
  error?.status === 429 ||
  error.$metadata?.httpStatusCode === 429 ||
  THROTTLING_ERROR_CODES.includes(error.name) ||
  error.$retryable?.throttling == true;

export class DefaultRateLimiter {
  /**
   * Only used in testing.
   */
  static setTimeoutFn = (fn, delay) => setTimeout(fn, delay);

  // User configurable constants
  beta;
  minCapacity;
  minFillRate;
  scaleConstant;
  smooth;

  /**
   * Whether adaptive retry rate limiting is active.
   * Remains `false` until a throttling error is detected.
   */
  enabled = false;
  /**
   * Current number of available adaptive-tokens. When exhausted, requests wait based on fill rate.
   */
  availableTokens = 0;
  /**
   * The most recent maximum fill rate in adaptive-tokens per second, recorded at the last throttle event.
   */
  lastMaxRate = 0;
  /**
   * Smoothed measured send rate in requests per second.
   */
  measuredTxRate = 0;
  /**
   * Number of requests observed in the current measurement time bucket.
   */
  requestCount = 0;

  /**
   * Current token bucket fill rate in adaptive-tokens per second. Defaults to {@link minFillRate}.
   */
  fillRate;
  /**
   * Timestamp in seconds of the most recent throttle event.
   */
  lastThrottleTime;
  /**
   * Timestamp in seconds of the last token bucket refill.
   */
  lastTimestamp = 0;
  /**
   * The time bucket (in seconds) used for measuring the send rate.
   */
  lastTxRateBucket;
  /**
   * Maximum token bucket capacity in adaptive-tokens. Defaults to {@link minCapacity}.
   * Updated in {@link updateTokenBucketRate} to match the new fill rate, floored by {@link minCapacity}.
   */
  maxCapacity;
  /**
   * Calculated time window in seconds used in the cubic rate recovery function.
   */
  timeWindow = 0;

  constructor(options) {
    this.beta = options?.beta ?? 0.7;
    this.minCapacity = options?.minCapacity ?? 1;
    this.minFillRate = options?.minFillRate ?? 0.5;
    this.scaleConstant = options?.scaleConstant ?? 0.4;
    this.smooth = options?.smooth ?? 0.8;

    this.lastThrottleTime = this.getCurrentTimeInSeconds();
    this.lastTxRateBucket = Math.floor(this.getCurrentTimeInSeconds());

    this.fillRate = this.minFillRate;
    this.maxCapacity = this.minCapacity;
  }

  async getSendToken() {
    return this.acquireTokenBucket(1);
  }

  updateClientSendingRate(response) {
    /**
     * New fill rate in adaptive-tokens per second, derived from
     * {@link cubicThrottle} on throttle or {@link cubicSuccess} otherwise.
     */
    let calculatedRate;
    this.updateMeasuredRate();

    const retryErrorInfo = response;
    const isThrottling =
      retryErrorInfo?.errorType === 'THROTTLING' || isThrottlingError(retryErrorInfo?.error ?? response);

    if (isThrottling) {
      const rateToUse = !this.enabled ? this.measuredTxRate : Math.min(this.measuredTxRate, this.fillRate);
      this.lastMaxRate = rateToUse;
      this.calculateTimeWindow();
      this.lastThrottleTime = this.getCurrentTimeInSeconds();
      calculatedRate = this.cubicThrottle(rateToUse);
      this.enableTokenBucket();
    } else {
      this.calculateTimeWindow();
      calculatedRate = this.cubicSuccess(this.getCurrentTimeInSeconds());
    }

    const newRate = Math.min(calculatedRate, 2 * this.measuredTxRate);
    this.updateTokenBucketRate(newRate);
  }

  getCurrentTimeInSeconds() {
    return Date.now() / 1000;
  }

  async acquireTokenBucket(amount) {
    // Client side throttling is not enabled until we see a throttling error.
    if (!this.enabled) {
      return;
    }

    this.refillTokenBucket();

    while (amount > this.availableTokens) {
      const delay = ((amount - this.availableTokens) / this.fillRate) * 1000;
      await new Promise((resolve) => DefaultRateLimiter.setTimeoutFn(resolve, delay));
      this.refillTokenBucket();
    }
    this.availableTokens = this.availableTokens - amount;
  }

  refillTokenBucket() {
    const timestamp = this.getCurrentTimeInSeconds();
    if (!this.lastTimestamp) {
      this.lastTimestamp = timestamp;
      return;
    }

    const fillAmount = (timestamp - this.lastTimestamp) * this.fillRate;
    this.availableTokens = Math.min(this.maxCapacity, this.availableTokens + fillAmount);
    this.lastTimestamp = timestamp;
  }

  calculateTimeWindow() {
    this.timeWindow = this.getPrecise(Math.pow((this.lastMaxRate * (1 - this.beta)) / this.scaleConstant, 1 / 3));
  }

  /**
   * Returns a new fill rate in adaptive-tokens per second by reducing
   * the given rate by a factor of {@link beta}.
   */
  cubicThrottle(rateToUse) {
    return this.getPrecise(rateToUse * this.beta);
  }

  /**
   * Returns a new fill rate in adaptive-tokens per second using a CUBIC
   * congestion control curve. The rate recovers toward {@link lastMaxRate},
   * then continues growing beyond it. The caller caps the result at
   * `2 * measuredTxRate`.
   */
  cubicSuccess(timestamp) {
    return this.getPrecise(
      this.scaleConstant * Math.pow(timestamp - this.lastThrottleTime - this.timeWindow, 3) + this.lastMaxRate,
    );
  }

  enableTokenBucket() {
    this.enabled = true;
  }

  /**
   * Set a new fill rate for adaptive-tokens.
   * The max capacity is updated to allow for one second of time to approximately
   * refill the adaptive-token capacity.
   */
  updateTokenBucketRate(newRate) {
    // Refill based on our current rate before we update to the new fill rate.
    this.refillTokenBucket();

    this.fillRate = Math.max(newRate, this.minFillRate);
    this.maxCapacity = Math.max(newRate, this.minCapacity);

    // When we scale down we can't have a current capacity that exceeds our maxCapacity.
    this.availableTokens = Math.min(this.availableTokens, this.maxCapacity);
  }

  updateMeasuredRate() {
    const t = this.getCurrentTimeInSeconds();
    const timeBucket = Math.floor(t * 2) / 2;
    this.requestCount++;

    if (timeBucket > this.lastTxRateBucket) {
      const currentRate = this.requestCount / (timeBucket - this.lastTxRateBucket);
      this.measuredTxRate = this.getPrecise(currentRate * this.smooth + this.measuredTxRate * (1 - this.smooth));
      this.requestCount = 0;
      this.lastTxRateBucket = timeBucket;
    }
  }

  getPrecise(num) {
    return parseFloat(num.toFixed(8));
  }
}

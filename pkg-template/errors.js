// The package's error classes. The WebAssembly core constructs them (they are registered at
// load time), so `instanceof` works against these very classes.
const brand = Symbol.for('odds-gate.error');

/** Base class of every odds-gate error; `OddsGateError.is(value)` works across realms. */
export class OddsGateError extends Error {
  constructor(message, fields = {}) {
    super(message);
    Object.assign(this, fields);
  }

  get [brand]() {
    return true;
  }

  static is(value) {
    return Boolean(value && value[brand]);
  }
}
OddsGateError.prototype.name = 'OddsGateError';

/** A call abandoned: `reason`, `attempts`, last `status`, last `retryAfterMs`. Never success. */
export class GateAbandonedError extends OddsGateError {}
GateAbandonedError.prototype.name = 'GateAbandonedError';

/** The key's monthly quota is spent: `periodEnd` (a Date, or null when unknown). */
export class QuotaExhaustedError extends OddsGateError {}
QuotaExhaustedError.prototype.name = 'QuotaExhaustedError';

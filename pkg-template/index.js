// The package's face: createFetch returns a plain function (what `fetchImpl` expects) with the
// gate's figures attached. Every rule lives in the WebAssembly core; this file only spares a
// call the gate admits at once a promise of its own: its attempt is the caller's promise.
import { Transport, simulate, Gate, registerErrors, redisStore, attemptFunction } from './odds_gate.js';
import { OddsGateError, GateAbandonedError, QuotaExhaustedError } from './errors.js';

registerErrors(GateAbandonedError, QuotaExhaustedError);
// The bindings' own attempt.js, so both paths share its one timer for attempt timeouts.
const attempt = attemptFunction();

function wrap(transport) {
  const inner = transport.innerFetch();
  const settle = (handle, value, how, status) => transport.settle(handle, value, how, status);
  const fetchImpl = (input, init) => {
    const fetch = inner ?? globalThis.fetch;
    // Without a fetch to call, the bindings' path raises the error that says so.
    if (typeof fetch !== 'function') return transport.fetch(input, init);
    const handle = transport.call(input, init);
    if (typeof handle !== 'number') return handle; // waiting, refused or shared: a promise
    // A negative handle is an attempt that goes out untouched (no time limit).
    if (handle < 0) return attempt(fetch, input, init, 0, settle, -handle - 1);
    return attempt(fetch, input, init, transport.attemptTimeout(handle), settle, handle);
  };
  fetchImpl.stats = () => transport.stats();
  fetchImpl.describe = () => transport.describe();
  fetchImpl.batch = (options) => wrap(transport.batch(options));
  fetchImpl.lane = (options) => wrap(transport.lane(options));
  fetchImpl.resetQuota = () => transport.resetQuota();
  fetchImpl.clearCooldown = () => transport.clearCooldown();
  return fetchImpl;
}

export function createFetch(options) {
  return wrap(new Transport(options));
}

export { simulate, Gate, redisStore, OddsGateError, GateAbandonedError, QuotaExhaustedError };

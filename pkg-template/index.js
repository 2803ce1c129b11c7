// The package's face: createFetch returns a plain function (what `fetchImpl` expects) with the
// gate's figures attached. Every rule lives in the WebAssembly core; this file only spares a
// call the gate admits at once a future and a promise of its own.
import { Transport, simulate, Gate, registerErrors, redisStore, attemptFunction } from './odds_gate.js';
import { OddsGateError, GateAbandonedError, QuotaExhaustedError } from './errors.js';

registerErrors(GateAbandonedError, QuotaExhaustedError);
// The bindings' own attempt.js, so both paths share its one timer for attempt timeouts.
const attempt = attemptFunction();

const isObject = (v) => v !== null && typeof v === 'object';

/** The caller's signal, as the bindings find it: `init.signal`, else a `Request`'s. */
function callerSignal(input, init) {
  if (isObject(init) && isObject(init.signal)) return init.signal;
  if (isObject(input) && isObject(input.signal)) return input.signal;
  return undefined;
}

function wrap(transport) {
  const inner = transport.innerFetch();
  const retrying = transport.retrying;
  const fetchImpl = (input, init) => {
    const fetch = inner ?? globalThis.fetch;
    // Without a fetch to call, the bindings' path raises the error that says so.
    if (typeof fetch !== 'function') return transport.fetch(input, init);
    const signal = callerSignal(input, init);
    const handle = transport.call(input, init, signal);
    if (typeof handle !== 'number') return handle; // waiting, refused or shared: a promise
    const settle = (value, how, status) => transport.settle(handle, value, how, status);
    if (!retrying) return attempt(fetch, input, init, undefined, 0, settle);
    return attempt(fetch, input, init, signal, transport.attemptTimeout(handle), settle);
  };
  fetchImpl.stats = () => transport.stats();
  fetchImpl.describe = () => transport.describe();
  fetchImpl.batch = (options) => wrap(transport.batch(options));
  fetchImpl.resetQuota = () => transport.resetQuota();
  return fetchImpl;
}

export function createFetch(options) {
  return wrap(new Transport(options));
}

export { simulate, Gate, redisStore, OddsGateError, GateAbandonedError, QuotaExhaustedError };

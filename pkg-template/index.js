// The package's face: createFetch returns a plain function (what `fetchImpl` expects) with the
// gate's figures attached. Every rule lives in the WebAssembly core.
import { Transport, simulate, Gate, registerErrors, redisStore } from './odds_gate.js';
import { OddsGateError, GateAbandonedError, QuotaExhaustedError } from './errors.js';

registerErrors(GateAbandonedError, QuotaExhaustedError);

function wrap(transport) {
  const fetchImpl = (input, init) => transport.fetch(input, init);
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

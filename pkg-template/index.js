// The package's face: createFetch returns a plain function (what `fetchImpl` expects) with the
// gate's figures attached. Every rule lives in the WebAssembly core, and the call path in the
// bindings (their fast.js makes the function); this file only puts the figures on it. The
// simulator is a second module that sim.js loads on first use.
import { Transport, registerErrors, redisStore, gatedFunction, joinThreads } from './odds_gate.js';
import { simulate, Gate } from './sim.js';
import { OddsGateError, GateAbandonedError, QuotaExhaustedError } from './errors.js';

registerErrors(GateAbandonedError, QuotaExhaustedError);
// This thread answers the others about their shared memories from now on, before it makes a gate.
joinThreads();
const gated = gatedFunction();

function wrap(transport) {
  const fetchImpl = gated(transport);
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

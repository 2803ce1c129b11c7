// The package's face, the same on every runtime: createFetch returns a plain function (what
// `fetchImpl` expects) with the gate's figures attached. Every rule lives in the WebAssembly
// core, and the call path in the bindings (their fast.js makes the function); this file only
// puts the figures on it. `glue` is the module's glue: odds_gate.js (index.js) or
// odds_gate_edge.js (edge.js).
import { GateAbandonedError, QuotaExhaustedError } from './errors.js';

export function face({ Transport, registerErrors, gatedFunction, joinThreads }) {
  registerErrors(GateAbandonedError, QuotaExhaustedError);
  // This thread answers the others about their shared memories from now on, before it makes a
  // gate (where there are no threads, nothing).
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

  return (options) => wrap(new Transport(options));
}

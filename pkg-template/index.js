// The package on Node, Bun and Deno: the gate (face.js over odds_gate.js, which reads and
// compiles its wasm at import) and the simulator, a second module that sim.js loads on first use.
import * as glue from './odds_gate.js';
import { face } from './face.js';
import { simulate, Gate } from './sim.js';
import { OddsGateError, GateAbandonedError, QuotaExhaustedError } from './errors.js';

export const createFetch = face(glue);
export const { redisStore } = glue;
export { simulate, Gate, OddsGateError, GateAbandonedError, QuotaExhaustedError };

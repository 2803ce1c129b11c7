// The package in Vercel's edge runtime (edge-light): edge.js, with the wasm imported as Vercel's
// bundlers ask (`?module`: a compiled WebAssembly.Module).
import wasm from './odds_gate_bg.wasm?module';
import * as glue from './odds_gate_edge.js';
import { face } from './face.js';

glue.__instantiate(wasm);
// Each request its own timers and I/O: a call's attempts go from the request that made it.
glue.perRequest();
export const createFetch = face(glue);
export const { redisStore } = glue;
export { OddsGateError, GateAbandonedError, QuotaExhaustedError } from './errors.js';

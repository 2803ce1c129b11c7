// The package in Cloudflare Workers (workerd): the same gate, options and errors as index.js,
// from odds_gate_edge.js, which reaches for no file and no thread (each isolate's gates are its
// own), instantiated from the wasm module Workers compile at deploy time. The simulator and the
// CLI are Node's: simulate() and Gate are not here. light.js is the same for Vercel's edge.
import wasm from './odds_gate_bg.wasm';
import * as glue from './odds_gate_edge.js';
import { face } from './face.js';

glue.__instantiate(wasm);
// Each request its own timers and I/O: a call's attempts go from the request that made it.
glue.perRequest();
export const createFetch = face(glue);
export const { redisStore } = glue;
export { OddsGateError, GateAbandonedError, QuotaExhaustedError } from './errors.js';

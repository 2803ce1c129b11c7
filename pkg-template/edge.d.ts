// The edge entries' types (edge.js for workerd, light.js for edge-light): index.d.ts's, without
// the simulator, which stays Node's.
export type * from './index.js';
export { createFetch, redisStore, OddsGateError, GateAbandonedError, QuotaExhaustedError } from './index.js';

// Type tests for the edge entries' edge.d.ts: the gate and its types, no simulator.
import { createFetch, GateAbandonedError, simulate, type GatedFetch } from '../pkg-template/edge.js';

const fetchImpl: GatedFetch = createFetch({ rate: { burst: 2, perSecond: 2 } });
const asFetch: typeof fetch = fetchImpl;
const gaveUp = (e: unknown): boolean => e instanceof GateAbandonedError;
// @ts-expect-error: the simulator is not in the edge entries (a type only)
simulate({ workers: 8 });
void [asFetch, gaveUp];

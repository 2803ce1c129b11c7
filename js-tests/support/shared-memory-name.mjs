// The name the threads find their shared memory by (src/js/shared_memory.js), from the layout
// version in src/core/base/protocol.rs (generated into src/js/protocol.js): tests and benches
// that look at the shared memory or size it use this, not a copy of the name.
import { SHARED_MEMORY_LAYOUT } from '../../src/js/protocol.js';

export const SHARED_MEMORY = `odds-gate/shared-memory/v${SHARED_MEMORY_LAYOUT}`;
/** Where a test or bench sets the slots' table size: [slots, most]. */
export const SHARED_MEMORY_SIZE = `${SHARED_MEMORY}/size`;

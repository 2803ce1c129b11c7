// What the edge entry's glue gets for `node:worker_threads`: a runtime with no threads. Without a
// BroadcastChannel, shared_memory.js makes no shared memory and every gate is the isolate's own.
export const BroadcastChannel = undefined;
export const isMainThread = true;
export const threadId = 0;
export const getEnvironmentData = () => undefined;
export const setEnvironmentData = () => {};

// @ts-check
// An abort listener made on the JavaScript side: the bindings pass one long-lived callback and a
// number, instead of making a wasm closure (and its finalizer record) for every waiting call.

/** Calls `onAbort(id)` once `signal` aborts; the returned function stops listening. */
export function listen(signal, onAbort, id) {
  const handler = () => onAbort(id);
  signal.addEventListener('abort', handler);
  return () => signal.removeEventListener('abort', handler);
}

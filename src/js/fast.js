// @ts-check
// The package's `fetchImpl` for one Transport. Plain JavaScript because it runs on every call:
// the request's facts are read here and go into wasm with the call in one crossing; a call the
// gate admits at once comes back as a handle and its attempt is the caller's promise (no
// promise of ours); its response's feedback headers go back in one pass with `settle`.
import { attempt } from './attempt.js';
import { requestFacts, callerSignal } from './reads.js';

/** `transport`'s gated fetch, behind its cache when it has one (cache.js): `(input, init) => Promise<Response>`. */
export function gated(transport) {
  const send = gate(transport);
  const cached = transport.cacheWrapper();
  return cached === undefined ? send : cached(transport, send);
}

function gate(transport) {
  const inner = transport.innerFetch();
  const settle = (handle, value, how, status, feedback) => transport.settle(handle, value, how, status, feedback);
  return (input, init) => {
    const fetch = inner ?? globalThis.fetch;
    // Without a fetch to call, the bindings' path raises the error that says so.
    if (typeof fetch !== 'function') return transport.fetch(input, init);
    const handle = transport.call(input, init, requestFacts(input, init), callerSignal(input, init));
    if (typeof handle !== 'number') return handle; // waiting, refused or shared: a promise
    // A negative handle is an attempt that goes out untouched (no time limit).
    if (handle < 0) return attempt(fetch, input, init, 0, settle, -handle - 1);
    return attempt(fetch, input, init, transport.attemptTimeout(handle), settle, handle);
  };
}

// The package's face: createFetch returns a plain function (what `fetchImpl` expects) with the
// gate's figures attached. Every rule lives in the WebAssembly core.
import { Transport, simulate, Gate } from './odds_gate.js';

export function createFetch(options) {
  const transport = new Transport(options);
  const fetchImpl = (input, init) => transport.fetch(input, init);
  fetchImpl.stats = () => transport.stats();
  fetchImpl.describe = () => transport.describe();
  return fetchImpl;
}

export { simulate, Gate };

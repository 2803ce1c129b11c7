// One cold start, measured from inside a fresh process: import the contender, make its wrapper,
// send one call to the local server and read its body. Prints the phases in ms as one JSON line.
// Run as `node startup-child.mjs <contender> <url> [pkg dir]` by bench/startup.mjs; the pkg dir
// (another build's, for `odds-gate (before)`) defaults to this checkout's pkg/.
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';

const [name, url, pkg] = process.argv.slice(2);
const init = { method: 'GET', headers: { Accept: 'application/json', 'X-API-Key': 'bench-startup' } };
const RAW = (input, options) => fetch(input, options);

const t0 = performance.now();
let make;
if (name.startsWith('odds-gate')) {
  const index = pkg ? pathToFileURL(`${pkg}/index.js`).href : '../../pkg/index.js';
  const { createFetch } = await import(index);
  make = () => createFetch();
} else if (name === 'bottleneck') {
  const { default: Bottleneck } = await import('bottleneck');
  make = () => new Bottleneck({ reservoir: 2, reservoirRefreshAmount: 2, reservoirRefreshInterval: 1000 }).wrap(RAW);
} else if (name === 'p-throttle') {
  const { default: pThrottle } = await import('p-throttle');
  make = () => pThrottle({ limit: 2, interval: 1000 })(RAW);
} else {
  make = () => RAW;
}
const t1 = performance.now();
const f = make();
const t2 = performance.now();
const response = await f(url, init);
await response.text();
const t3 = performance.now();
console.log(JSON.stringify({ import: t1 - t0, create: t2 - t1, first: t3 - t2, total: t3 - t0 }));
// The wrappers keep no timer alive, but a keep-alive socket would hold the process a while.
process.exit(0);

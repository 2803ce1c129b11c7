// The idle-exit test's child (idle-exit.test.mjs): uses the wrapper, waits on its gate, prints
// its stats and must then exit on its own. A file rather than `node -e` so that every runtime
// runs it the same way (`deno` reads `-e` as a script, not a module).
import { createFetch } from '../../pkg/index.js';
import { startFakeOddsApi } from './fake-odds-api.mjs';

const api = await startFakeOddsApi({ burst: 1, perSecond: 10 });
const fetchImpl = createFetch({ rate: { burst: 1, perSecond: 10 } });
const signal = new AbortController().signal; // a long-lived signal must not hold the process
const headers = { 'X-API-Key': 'idle-exit' };
const calls = [1, 2, 3].map((n) => fetchImpl(api.baseUrl + '/events/' + n + '/odds/snapshot', { headers, signal }));
if (!fetchImpl.stats().gates[0].timerArmed) throw new Error('expected callers to wait');
for (const response of await Promise.all(calls)) await response.text();
await api.close();
console.log(JSON.stringify(fetchImpl.stats()));
// The sweep's timer (every 10 s while a gate is left) must not hold the process: it exits with
// its gate still there.
process.on('exit', () => console.log(JSON.stringify({ gatesAtExit: fetchImpl.stats().gates.length })));

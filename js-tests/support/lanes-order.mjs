// The lanes tests' one check of order: of 40 background calls and 8 live ones (queued after
// them, in a heavier lane), the live calls are done while most background calls still wait, at
// most 3 background calls among them (in one queue the live calls would be done last; with
// equal weights about seven background calls come in among them).
import assert from 'node:assert/strict';

// The gates' allowance in these tests, and the fake API's: a little more (a fifth faster, one
// more in the burst), so an admitted call that reaches it late on a loaded machine is no 429.
// The tests check which calls go first, not the exact allowance (tests/lanes.rs does).
export const LANES_RATE = { burst: 2, perSecond: 20 };
export const LANES_SERVER = { burst: 3, perSecond: 25 };

/**
 * `done`: { kind: 'live' | 'background', status } for each of the 48 calls, in the order they
 * were done; `api`: the fake API they went to (none of them a 429).
 */
export function assertLiveWentFirst(done, api) {
  assert.equal(done.length, 48);
  assert.deepEqual(new Set(done.map((d) => d.status)), new Set([200]));
  assert.equal(api.stats().throttled, 0);
  const kinds = done.map((d) => d.kind);
  const [first, last] = [kinds.indexOf('live'), kinds.lastIndexOf('live')];
  const among = kinds.slice(first, last).filter((kind) => kind === 'background').length;
  assert.ok(last < 30 && among <= 3, `the live calls were done ${first + 1}th to ${last + 1}th of 48: ${kinds.map((k) => k[0]).join('')}`);
}

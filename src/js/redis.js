// @ts-check
// The three Redis clients a store takes, as one: node-redis (`scriptLoad(source)`,
// `evalSha(sha, { keys, arguments })`), ioredis (`script('LOAD', source)`,
// `evalsha(sha, numKeys, ...keys, ...args)`) and @upstash/redis over HTTP, where no TCP
// connection can be opened (`scriptLoad(source)`, `evalsha(sha, keys, args)`). What any throws
// comes back as a rejection.

const nodeRedis = (client) => typeof client?.evalSha === 'function' && typeof client.scriptLoad === 'function';
const upstash = (client) => typeof client?.evalsha === 'function' && typeof client.scriptLoad === 'function' && typeof client.script !== 'function';

/** What keeps `client` from being a store's client, for the TypeError's "got ..." ('' for
 *  nothing): not a node-redis or ioredis client, or a node-redis one never connected (its
 *  commands would fail and every process would admit alone, quietly). */
export function clientProblem(client) {
  if (nodeRedis(client)) {
    return client.isOpen === false ? 'a node-redis client that is not connected (call `await client.connect()` first)' : '';
  }
  if (typeof client?.evalsha === 'function' && typeof client.script === 'function') return '';
  // Its default parses each reply that reads as JSON (a count, the cache's headers), which the
  // scripts' replies are not meant to be.
  if (upstash(client)) {
    return client.opts?.automaticDeserialization === false ? '' : 'an @upstash/redis client that parses replies (make it with `automaticDeserialization: false`)';
  }
  if (client === null || (typeof client !== 'object' && typeof client !== 'function')) return String(client === null ? null : typeof client);
  return 'an object without `script` and `evalsha` (ioredis) or `scriptLoad` and `evalSha` (node-redis)';
}

/** Loads the script `source`: its SHA1. */
export async function load(client, source) {
  return nodeRedis(client) || upstash(client) ? client.scriptLoad(source) : client.script('LOAD', source);
}

/** Runs the script `sha` on `key` with `args` (strings): its reply. */
export async function evalSha(client, sha, key, args) {
  if (nodeRedis(client)) return client.evalSha(sha, { keys: [key], arguments: args });
  return upstash(client) ? client.evalsha(sha, [key], args) : client.evalsha(sha, 1, key, ...args);
}

/** Whether a failure says Redis has not got the script (it restarted and forgot it). */
export function noScript(error) {
  return typeof error?.message === 'string' && error.message.includes('NOSCRIPT');
}

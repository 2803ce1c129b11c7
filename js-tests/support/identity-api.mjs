// A fake API that says who asked (#48): every GET is answered 200 with a JSON body naming the
// credentials the request carried (each identity header's value as the server read it, and the
// query's apiKey) and a number that grows with each request, so a caller can tell whose answer
// it got and whether it came from the cache. A real node:http server on 127.0.0.1.
//   ?ttl=N     Cache-Control: max-age=N (default 5)
//   ?vary=V    the answer's Vary
//   Range      answered 206 with the first bytes it asks for
import { createServer } from 'node:http';

export const IDENTITY = ['x-api-key', 'authorization', 'cookie', 'proxy-authorization', 'x-odds-key'];

export async function startIdentityApi() {
  let requests = 0;
  const server = createServer((req, res) => {
    requests += 1;
    const url = new URL(req.url, 'http://127.0.0.1');
    const seen = {};
    for (const name of IDENTITY) if (req.headers[name] !== undefined) seen[name] = req.headers[name];
    const body = JSON.stringify({
      n: requests,
      seen,
      apiKey: url.searchParams.get('apiKey'),
      language: req.headers['accept-language'] ?? null,
      range: req.headers.range ?? null,
    });
    const headers = { 'content-type': 'application/json', 'cache-control': `max-age=${url.searchParams.get('ttl') ?? 5}` };
    if (url.searchParams.has('vary')) headers.vary = url.searchParams.get('vary');
    const range = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '');
    if (range) {
      res.writeHead(206, headers);
      res.end(body.slice(Number(range[1]), Number(range[2]) + 1));
      return;
    }
    res.writeHead(200, headers);
    res.end(body);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const baseUrl = `http://127.0.0.1:${server.address().port}`;
  return {
    baseUrl,
    requests: () => requests,
    close: () => new Promise((resolve) => {
      server.closeAllConnections?.();
      server.close(resolve);
    }),
  };
}

/** Who a body from this API says asked: its identity headers (trimmed, non-empty) and apiKey. */
export function seenIdentity(body, named = []) {
  const { seen, apiKey } = JSON.parse(body);
  return identity(Object.entries(seen), apiKey, named);
}

/** The same of a request's own header pairs and query apiKey, read as the server reads them. */
export function identity(pairs, apiKey, named = []) {
  const names = new Set([...IDENTITY.filter((n) => n !== 'x-odds-key'), ...named]);
  const values = new Map();
  for (const [name, value] of pairs) {
    const lower = name.toLowerCase();
    if (!names.has(lower)) continue;
    values.set(lower, values.has(lower) ? `${values.get(lower)}, ${value.trim()}` : value.trim());
  }
  const parts = [...values].filter(([, v]) => v !== '').sort(([a], [b]) => a.localeCompare(b));
  return JSON.stringify([parts, apiKey || null]);
}

// --- calls drawn at random, with credentials in random places ---

/** A small seeded random source (mulberry32): the same seed draws the same calls. */
export function seeded(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const pick = (random, list) => list[Math.floor(random() * list.length)];
const NAMES = ['X-API-Key', 'Authorization', 'Cookie', 'Proxy-Authorization', 'X-Odds-Key', 'Accept-Language'];
const VALUES = ['', 'A', 'B', ' A '];

/**
 * `n` calls of the path `path` (a plain description, so a thread or a process can make them):
 * each with some identity headers in random case and values (empty ones too), in one of the
 * shapes fetch takes (a plain object, pairs, `Headers`, a `Request`, a `URL`), the query in
 * either order, and now and then the API's `apiKey` in it.
 */
export function drawCalls(random, path, n) {
  return Array.from({ length: n }, () => {
    const pairs = [];
    for (const name of NAMES) {
      if (random() < 0.6) continue;
      const cased = pick(random, [name, name.toLowerCase(), name.toUpperCase()]);
      pairs.push([cased, pick(random, VALUES)]);
    }
    const query = random() < 0.5 ? 'a=1&b=2' : 'b=2&a=1';
    const apiKey = random() < 0.2 ? pick(random, ['A', 'B']) : null;
    const vary = random() < 0.3;
    const shape = pick(random, ['object', 'pairs', 'headers', 'request', 'url']);
    const extra = `${apiKey ? `&apiKey=${apiKey}` : ''}${vary ? '&vary=Accept-Language' : ''}`;
    return { path: `${path}?${query}${extra}`, pairs, apiKey, vary, shape };
  });
}

/** The fetch(input, init) arguments of a drawn call against `baseUrl`. */
export function callOf(call, baseUrl) {
  const url = `${baseUrl}${call.path}`;
  const object = Object.fromEntries(call.pairs);
  switch (call.shape) {
    case 'object': return [url, { headers: object }];
    case 'pairs': return [url, { headers: call.pairs }];
    case 'headers': return [url, { headers: new Headers(call.pairs) }];
    case 'request': return [new Request(url, { headers: call.pairs }), undefined];
    default: return [new URL(url), { headers: object }];
  }
}

/** Makes `calls` at once through `fetchImpl`: each one's status, mark and whether the answer was
 * fetched for its own credentials (and language, where the answer varies by it). */
export async function makeCalls(fetchImpl, baseUrl, calls, named = []) {
  return Promise.all(calls.map(async (call) => {
    const response = await fetchImpl(...callOf(call, baseUrl));
    const body = await response.text();
    // With Vary: Accept-Language, the answer is for the caller's language too (Node's fetch
    // sends `*` when the caller gives none, or an empty one).
    const given = call.pairs.find(([n]) => n.toLowerCase() === 'accept-language')?.[1].trim();
    const spoken = (language) => (language === undefined || language === '' || language === '*' ? null : language);
    const sameLanguage = !call.vary || spoken(JSON.parse(body).language?.trim() ?? undefined) === spoken(given);
    return {
      status: response.status,
      mark: response.headers.get('x-odds-gate-cache'),
      mine: identity(call.pairs, call.apiKey, named) === seenIdentity(body, named) && sameLanguage,
    };
  }));
}

// A Redis REST endpoint on 127.0.0.1 in front of a real redis-server, speaking the protocol
// @upstash/redis speaks (what isolates that cannot open a TCP connection use): a POST of one
// command as a JSON array to `/`, or of several to `/pipeline`, with a bearer token; the answer
// `{ result }` or `{ error }` (one each, in order, for a pipeline), strings in base64 when the
// request says `Upstash-Encoding: base64`. Each command goes to Redis as it is (ioredis `call`),
// but for a script's `allow-key-locking` flag, which is Upstash's own (@upstash/ratelimit's
// scripts, in the edge benchmark, say it): open-source Redis refuses the flag.
import http from 'node:http';
import Redis from 'ioredis';

export async function startUpstashRest(redisPort, token = 'test-token') {
  const redis = new Redis({ port: redisPort, host: '127.0.0.1', lazyConnect: false });
  const stats = { commands: 0, requests: 0 };
  const server = http.createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    stats.requests++;
    if (req.headers.authorization !== `Bearer ${token}`) {
      res.writeHead(401, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ error: 'Unauthorized' }));
    }
    const base64 = req.headers['upstash-encoding'] === 'base64';
    const encode = (v) => (!base64 ? v : typeof v === 'string' ? Buffer.from(v).toString('base64') : Array.isArray(v) ? v.map(encode) : v);
    const run = async ([name, ...args]) => {
      stats.commands++;
      args = args.map((a) => (typeof a === 'string' && a.startsWith('#!lua') ? a.replace(/^#!lua flags=allow-key-locking\b/, '#!lua') : a));
      try {
        return { result: encode(await redis.call(String(name), ...args.map(String))) };
      } catch (error) {
        return { error: error.message };
      }
    };
    let commands;
    try {
      commands = JSON.parse(body);
    } catch {
      res.writeHead(400, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ error: 'not JSON' }));
    }
    const pipeline = new URL(req.url, 'http://x').pathname === '/pipeline';
    const answer = pipeline ? await Promise.all(commands.map(run)) : await run(commands);
    res.writeHead(!pipeline && answer.error ? 400 : 200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(answer));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    token,
    stats: () => ({ ...stats }),
    close: async () => {
      const closed = new Promise((resolve) => server.close(resolve));
      server.closeAllConnections();
      await closed;
      redis.disconnect();
    },
  };
}

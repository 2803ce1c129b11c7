// Trivial keep-alive HTTP server on 127.0.0.1 for the overhead benchmark; runs in its own process
// (forked) so it does not share the client's event loop. Exits when its parent disconnects.
import http from 'node:http';

const body = Buffer.from('{"ok":true}');
const server = http.createServer((req, res) => {
  req.resume();
  res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': body.length });
  res.end(body);
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }));
process.on('disconnect', () => { server.closeAllConnections(); server.close(); });

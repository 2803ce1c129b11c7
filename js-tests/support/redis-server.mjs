// A real redis-server for fleet tests: started on a free loopback port, with nothing saved to
// disk, and stopped (or killed and restarted on the same port) by the test.
import { spawn } from 'node:child_process';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

const freePort = () => new Promise((resolve, reject) => {
  const probe = net.createServer().once('error', reject).listen(0, '127.0.0.1', () => {
    const { port } = probe.address();
    probe.close(() => resolve(port));
  });
});

const ping = (port) => new Promise((resolve) => {
  const socket = net.connect(port, '127.0.0.1');
  socket.once('error', () => resolve(false));
  socket.once('data', (d) => { socket.destroy(); resolve(d.toString().startsWith('+PONG')); });
  socket.write('PING\r\n');
});

export async function startRedis() {
  const port = await freePort();
  let proc;
  const start = async () => {
    proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    // A test that needs Redis fails without it, saying why (never skips).
    let failed = null;
    proc.once('error', (e) => { failed = e; });
    for (let i = 0; i < 100; i++) { // at most 5 s
      if (failed) throw new Error(`cannot run redis-server (${failed.message}): scripts/setup.sh puts one on PATH`);
      if (await ping(port)) return;
      await sleep(50);
    }
    throw new Error(`redis-server did not start on port ${port}`);
  };
  const stop = (signal = 'SIGTERM') => new Promise((resolve) => {
    if (!proc || proc.exitCode !== null) return resolve();
    proc.once('exit', () => resolve());
    proc.kill(signal);
  });
  await start();
  return { port, url: `redis://127.0.0.1:${port}`, stop, kill: () => stop('SIGKILL'), restart: start };
}

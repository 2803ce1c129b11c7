// A local Redis Cluster for benchmarks: three masters (no replicas) on free loopback ports,
// nothing saved to disk, their node files in a temporary directory removed on stop.
import { spawn, execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

const freePort = () => new Promise((resolve, reject) => {
  const probe = net.createServer().once('error', reject).listen(0, '127.0.0.1', () => {
    const { port } = probe.address();
    probe.close(() => resolve(port));
  });
});

const cli = (...args) => new Promise((resolve, reject) => {
  execFile('redis-cli', args, { timeout: 20_000 }, (err, stdout) => (err ? reject(err) : resolve(stdout)));
});

export async function startRedisCluster(masters = 3) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'odds-gate-cluster-'));
  const ports = [];
  const procs = [];
  const stop = async () => {
    await Promise.all(procs.map((proc) => new Promise((resolve) => {
      if (proc.exitCode !== null) return resolve();
      proc.once('exit', resolve);
      proc.kill('SIGTERM');
    })));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (let i = 0; i < masters; i++) {
      // A cluster bus listens on port + 10000 as well: take ports whose bus port is free too.
      let port;
      do port = await freePort(); while (port + 10000 > 65535);
      ports.push(port);
      procs.push(spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--cluster-enabled', 'yes',
        '--cluster-config-file', path.join(dir, `nodes-${port}.conf`), '--save', '', '--appendonly', 'no'],
      { stdio: 'ignore', cwd: dir }));
    }
    for (const port of ports) {
      for (let i = 0; ; i++) {
        if ((await cli('-p', String(port), 'PING').catch(() => '')).startsWith('PONG')) break;
        if (i === 100) throw new Error(`redis-server did not start on port ${port}`);
        await sleep(50);
      }
    }
    await cli('--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes');
    for (let i = 0; ; i++) {
      const info = await Promise.all(ports.map((p) => cli('-p', String(p), 'CLUSTER', 'INFO')));
      if (info.every((text) => text.includes('cluster_state:ok'))) break;
      if (i === 200) throw new Error('the cluster did not come up');
      await sleep(50);
    }
  } catch (err) {
    await stop();
    throw err;
  }
  return { ports, nodes: ports.map((port) => ({ host: '127.0.0.1', port })), stop };
}

// One member of bench/cache.mjs's shared rows: a process (with job.redisPort: createFetch with
// cache and a Redis store) or a worker thread (cache, the threads sharing it). It says ready (a
// JSON line on stdout, or a message), polls on 'go' (a line on stdin, or a message), and answers
// with its workers' waits.
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { createInterface } from 'node:readline';
import Redis from 'ioredis';
import { createFetch, redisStore } from '../pkg/index.js';
import { poll } from './cache.mjs';

const job = isMainThread ? JSON.parse(process.argv[2]) : workerData;
const client = job.redisPort ? new Redis({ port: job.redisPort, host: '127.0.0.1' }) : null;
if (client) await new Promise((resolve) => client.once('ready', resolve));
const fetchImpl = createFetch({ rate: job.rate, cache: true, ...(client && { store: redisStore(client) }) });
const say = isMainThread ? (m) => process.stdout.write(`${JSON.stringify(m)}\n`) : (m) => parentPort.postMessage(m);
const run = async () => {
  say(await poll({ fetchImpl, ...job }));
  await client?.quit();
};
if (isMainThread) createInterface({ input: process.stdin }).once('line', run);
else parentPort.once('message', run);
say({ ready: true });

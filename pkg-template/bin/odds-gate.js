#!/usr/bin/env node
// odds-gate's planning CLI: `simulate` runs the article's virtual-clock model on the package's
// core and draws its timeline; `demo` runs the live eight-worker demo against a local fake API.
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve, relative } from 'node:path';

const USAGE = `Usage:
  odds-gate simulate [options]   the article's virtual-clock model, as a table (and, with --svg, a drawing)
  odds-gate demo                 eight live workers against a local fake Odds API (about 7 s):
                                 plain fetch with a fixed 1 s retry, then through createFetch
  odds-gate --help               this text
  odds-gate --version            the package's version

simulate options (a number follows each, as "--workers 8" or "--workers=8"):
  --workers N          workers (default 8)
  --snapshots N        snapshots each worker fetches, one after another (default 1)
  --burst N            the server's burst, and the gates' (default 2)
  --per-second N       the server's refill per second, and the gates' (default 2)
  --retry-after S      the server's Retry-After on a 429, in seconds (default 1)
  --max-attempts N     attempts per worker, the first included (default 10)
  --retry-budget N     retries allowed across all workers, never replenished (default: none)
  --independent        no gate: each worker waits Retry-After on its own and retries
  --separate-gates N   N gates (one per process), worker i on gate i % N
                       (default: one gate shared by every worker)
  --processes N        N processes whose gates share a store, worker i in process i % N
  --store-latency-ms N a store round trip, with --processes (default 1)
  --threads N          N threads of one process sharing memory, worker i in thread i % N
  --always-reject      the server rejects every attempt (to see the bounds at work)
  --learn              the gates are not told the allowance: they learn it from the responses
                       (prints how fast the estimate converged and what it cost in 429s)
  --headers            the server sends X-RateLimit-Limit and -Remaining on every answer
                       (default: 429 + Retry-After only)
  --headers-on-429     the server sends them on 429s only, as the Odds API documents them
  --lookups N          N event lookups (GET /v1/events/{id}), one per extra worker, at 0 ms,
                       on a limiter of their own; needs both of:
  --lookup-burst N     that limiter's burst
  --lookup-per-second N
                       that limiter's refill per second
  --latency-ms N       from a request's arrival to its response's return (default 0)
  --polls N            times each worker fetches its snapshots (default 1)
  --poll-every-ms N    poll i starts at i x N ms, or when the one before ends if later
                       (default 0: at once)
  --cache-ttl-ms N     the workers' GETs go through createFetch's cache, and the server's
                       snapshots are fresh for N ms (0: calls in flight share one request,
                       nothing is answered fresh); the workers then poll the same snapshots. Prints the
                       requests the cache saved; the SVG draws its answers as rings
  --cache-stale-for-ms N
                       how long past that an entry answers, stale, a call the gate would hold
                       (a cooldown, no credit) or refuse (a spent quota) (default 600000)
  --lane NAME:WEIGHT:WORKERS[:START_MS]
                       a lane of WORKERS workers (from START_MS, default 0) whose calls wait in a
                       queue of their own on the shared gate, sharing its admissions by WEIGHT
                       (as fetchImpl.lane({ name, weight }) does); repeat it for each lane. With
                       lanes, --workers (default 0) are the wrapper's own, lane "default" of
                       weight 1; not with --independent, --separate-gates, --processes,
                       --threads or --lookups. E.g. --lane background:1:40 --lane live:9:8:1000
  --quota-limit N      the key's monthly credits: the server charges each answered call (1
                       credit, or --quota-cost's), answers 429 once they are spent and /usage
                       with its count, and the run ends with the period. Prints the credits
                       spent each day (a tenth of the period when shorter than 2 days) as a
                       bar against an even spend, when the quota ran out, the /usage
                       readings, and the calls refused, held and left waiting. The polls are
                       spread evenly over the period unless --poll-every-ms says otherwise.
                       E.g. --quota-limit 10000 --polls 28500 [--spread]
  --quota-days N       the period, in days (default 30); or
  --quota-period-ms N  the period, in ms
  --quota-used N       credits already used when the run starts (default 0)
  --quota-periods N    periods one after another (default 1, at most 12): the server's
                       count starts over at each; prints how long each new period's first
                       call waited in it
  --spread             the gates pace the credits to the period's end (quota: { spread: true })
  --quota-reserve N    the share kept for lanes with reserve: true (default 0.05)
  --quota-burst-ms N   the most the credit bucket holds, as ms of its refill (default 3600000)
  --quota-refresh-ms N how often the gates read /usage (default 900000)
  --quota-cost PATTERN=CREDITS
                       what a call of a route costs, e.g. "GET /events/*/odds/snapshot=5"
                       (the server charges it, the gates are told it); repeat it per route
  --svg FILE           also draw the run as an SVG in FILE (nothing is written without it): its
                       timeline, or with --quota-limit the month, a bar of credits a day
                       against the even spend
  --json               print the result as JSON instead of the table
`;

class UsageError extends Error {}

const NUMERIC = new Map([
  ['workers', 'workers'],
  ['burst', 'burst'],
  ['per-second', 'perSecond'],
  ['retry-after', 'retryAfter'],
  ['max-attempts', 'maxAttempts'],
  ['retry-budget', 'retryBudget'],
  ['separate-gates', 'separateGates'],
  ['snapshots', 'snapshots'],
  ['latency-ms', 'latencyMs'],
  ['lookups', 'lookups'],
  ['lookup-burst', 'lookupBurst'],
  ['lookup-per-second', 'lookupPerSecond'],
  ['processes', 'processes'],
  ['threads', 'threads'],
  ['store-latency-ms', 'storeLatencyMs'],
  ['polls', 'polls'],
  ['poll-every-ms', 'pollEveryMs'],
  ['cache-ttl-ms', 'cacheTtlMs'],
  ['cache-stale-for-ms', 'cacheStaleForMs'],
  ['quota-limit', 'quotaLimit'],
  ['quota-days', 'quotaDays'],
  ['quota-period-ms', 'quotaPeriodMs'],
  ['quota-used', 'quotaUsed'],
  ['quota-periods', 'quotaPeriods'],
  ['quota-reserve', 'quotaReserve'],
  ['quota-burst-ms', 'quotaBurstMs'],
  ['quota-refresh-ms', 'quotaRefreshMs'],
]);
// simulate()'s `quota` fields, by the flag that sets each.
const QUOTA_FLAGS = new Map([
  ['limit', ['quotaLimit', '--quota-limit']],
  ['days', ['quotaDays', '--quota-days']],
  ['periodMs', ['quotaPeriodMs', '--quota-period-ms']],
  ['used', ['quotaUsed', '--quota-used']],
  ['periods', ['quotaPeriods', '--quota-periods']],
  ['spread', ['spread', '--spread']],
  ['reserve', ['quotaReserve', '--quota-reserve']],
  ['burstMs', ['quotaBurstMs', '--quota-burst-ms']],
  ['refreshMs', ['quotaRefreshMs', '--quota-refresh-ms']],
  ['costs', ['quotaCosts', '--quota-cost']],
]);
const SWITCHES = new Map([
  ['independent', 'independent'],
  ['always-reject', 'alwaysReject'],
  ['learn', 'learn'],
  ['headers', 'headers'],
  ['headers-on-429', 'headersOn429'],
  ['json', 'json'],
  ['spread', 'spread'],
]);
const NUMBER = /^[+-]?(\d+(\.\d*)?|\.\d+)(e[+-]?\d+)?$/i;

/**
 * Parses `argv` (after the command) against the flags of a command; throws UsageError. A
 * `repeated` flag's values are collected in an array.
 */
function parseFlags(argv, { numeric = new Map(), switches = new Map(), strings = new Map(), repeated = new Map() } = {}) {
  const flags = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (!arg.startsWith('--') || arg === '--') throw new UsageError(`unexpected argument \`${arg}\``);
    const eq = arg.indexOf('=');
    const name = arg.slice(2, eq === -1 ? undefined : eq);
    const inline = eq === -1 ? undefined : arg.slice(eq + 1);
    if (switches.has(name)) {
      if (inline !== undefined) throw new UsageError(`\`--${name}\` takes no value`);
      flags[switches.get(name)] = true;
      continue;
    }
    if (!numeric.has(name) && !strings.has(name) && !repeated.has(name)) throw new UsageError(`unknown flag \`--${name}\``);
    let value = inline;
    if (value === undefined) {
      const next = argv[i + 1];
      // A value may be negative ("-1", for simulate to refuse), never another flag.
      if (next === undefined || next.startsWith('--')) throw new UsageError(`\`--${name}\` needs a value`);
      value = next;
      i++;
    }
    if (value === '') throw new UsageError(`\`--${name}\` needs a value`);
    if (numeric.has(name)) {
      if (!NUMBER.test(value)) throw new UsageError(`\`--${name}\` expects a number, got \`${value}\``);
      flags[numeric.get(name)] = Number(value);
    } else if (repeated.has(name)) {
      (flags[repeated.get(name)] ??= []).push(value);
    } else {
      flags[strings.get(name)] = value;
    }
  }
  return flags;
}

function table(head, rows) {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (cells) => cells.map((c, i) => (i === 0 ? String(c).padEnd(widths[i]) : String(c).padStart(widths[i]))).join('  ').trimEnd();
  return [line(head), ...rows.map(line)].join('\n');
}

const plural = (n, one, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
const MAX_LISTED = 64; // workers listed one per line; past that, see --json

/** `--lane NAME:WEIGHT:WORKERS[:START_MS]` as one of simulate()'s `lanes`; throws UsageError. */
function laneFlag(value) {
  const parts = value.split(':');
  const numbers = parts.slice(1);
  if (parts.length < 3 || parts.length > 4 || parts[0] === '' || !numbers.every((n) => NUMBER.test(n))) {
    throw new UsageError(`\`--lane\` expects NAME:WEIGHT:WORKERS[:START_MS] (numbers after the name), got \`${value}\``);
  }
  const [weight, workers, startMs = 0] = numbers.map(Number);
  return { name: parts[0], weight, workers, startMs };
}

/** `--quota-cost PATTERN=CREDITS` flags as `quota.costs`; throws UsageError. */
function costFlags(values) {
  const costs = {};
  for (const value of values) {
    const eq = value.lastIndexOf('=');
    const credits = value.slice(eq + 1);
    if (eq <= 0 || !NUMBER.test(credits)) {
      throw new UsageError(`\`--quota-cost\` expects PATTERN=CREDITS (a number after the last =), got \`${value}\``);
    }
    costs[value.slice(0, eq)] = Number(credits);
  }
  return costs;
}

/** The `quota` the flags ask for (undefined: none); throws UsageError. */
function quotaFlags(flags) {
  const given = [...QUOTA_FLAGS].filter(([, [key]]) => flags[key] !== undefined);
  if (given.length === 0) return undefined;
  if (flags.quotaLimit === undefined) {
    throw new UsageError(`${given.map(([, [, flag]]) => `\`${flag}\``).join(', ')} ${given.length === 1 ? 'needs' : 'need'} \`--quota-limit N\``);
  }
  const quota = {};
  for (const [field, [key]] of given) quota[field] = key === 'quotaCosts' ? costFlags(flags[key]) : flags[key];
  return quota;
}

/** A month's credits, slice by slice: a bar each against an even spend. */
function month(q) {
  const daily = q.sliceMs === 86_400_000;
  const fixed = (n, d = 1) => Number(n.toFixed(d));
  const periodText = q.periodMs >= 86_400_000 ? plural(fixed(q.periodMs / 86_400_000, 2), 'day') : `${Math.round(q.periodMs)} ms`;
  // A time in the run, in days when the slices are days, else in whole ms.
  const when = (ms) => (daily ? plural(fixed(ms / 86_400_000, 2), 'day') : `${Math.round(ms)} ms`);
  const ranOut = q.exhaustedAtMs === null ? 'never ran out'
    : `ran out ${daily ? `after ${when(q.exhaustedAtMs)}` : `at ${when(q.exhaustedAtMs)}`}`;
  const periods = q.periods > 1 ? ` (the last of ${q.periods} periods)` : '';
  const lines = [`quota: ${fixed(q.used, 2)} of ${q.limit} credits used (${fixed((100 * q.used) / q.limit)} %) over ${periodText}${periods}`
    + `${q.spread ? ', spread to its end' : ''}; ${ranOut}`,
  `  ${plural(q.wanted, 'call')} wanted, ${q.sent} sent, the first ${q.firstSentMs === null ? 'never' : `at ${Math.round(q.firstSentMs)} ms`};`
    + ` ${plural(q.readings, '/usage reading')}`,
  `  ${plural(q.refused, 'call')} refused for the spent quota,`
    + ` ${q.held} held a second or more (for credit), ${q.waiting} still waiting at the end`];
  q.resumedMs.forEach((ms, i) => {
    lines.push(`  period ${i + 2} began at ${when((i + 1) * q.periodMs)}: its first call ${ms === null ? 'never went' : `went after waiting ${Math.round(ms)} ms in it`}`);
  });
  const width = 40;
  const top = Math.max(q.even, ...q.spent);
  const bar = (n) => '#'.repeat(Math.round((width * n) / (top || 1)));
  const mark = Math.round((width * q.even) / (top || 1));
  const rows = q.spent.map((n, i) => {
    const drawn = bar(n).padEnd(width);
    // `|` marks the even spend on each bar.
    const withEven = mark < width ? `${drawn.slice(0, mark)}|${drawn.slice(mark + 1)}` : `${drawn}|`;
    return [daily ? i + 1 : Math.round(i * q.sliceMs), fixed(n, 2), q.even ? fixed(n / q.even, 3) : '-', withEven.trimEnd()];
  });
  // The bars left-aligned, so the even-spend mark stands in one column on every row.
  const text = table([daily ? 'day' : 'from (ms)', 'credits', 'of even', ''], rows.map((r) => [...r.slice(0, 3), '']));
  const bars = text.split('\n').map((line, i) => `${line}  ${i === 0 ? `(| an even spend: ${fixed(q.even, 2)})` : rows[i - 1][3]}`.trimEnd());
  lines.push('', ...bars);
  return lines;
}

async function simulateCommand(argv) {
  const flags = parseFlags(argv, {
    numeric: NUMERIC, switches: SWITCHES, strings: new Map([['svg', 'svg']]), repeated: new Map([['lane', 'lanes'], ['quota-cost', 'quotaCosts']]),
  });
  const coordination = [['independent', '`--independent`'], ['separateGates', '`--separate-gates N`'],
    ['processes', '`--processes N`'], ['threads', '`--threads N`']].filter(([k]) => flags[k] !== undefined);
  if (coordination.length > 1) {
    throw new UsageError(`choose one of ${coordination.map(([, flag]) => flag).join(' and ')}`);
  }
  const lanes = flags.lanes?.map(laneFlag);
  if (lanes && coordination.length > 0) {
    throw new UsageError(`\`--lane\` waits in the one shared gate's queue: leave out ${coordination[0][1]}`);
  }
  if (lanes && flags.lookups !== undefined) {
    throw new UsageError('choose one of `--lane` and `--lookups`');
  }
  if (flags.headers && flags.headersOn429) {
    throw new UsageError('choose one of `--headers` (every answer) and `--headers-on-429` (429s only)');
  }
  const lookupFlags = [flags.lookups, flags.lookupBurst, flags.lookupPerSecond];
  if (lookupFlags.some((v) => v !== undefined) && lookupFlags.some((v) => v === undefined)) {
    throw new UsageError('`--lookups N`, `--lookup-burst N` and `--lookup-per-second N` go together');
  }
  if (flags.storeLatencyMs !== undefined && flags.processes === undefined) {
    throw new UsageError('`--store-latency-ms N` needs `--processes N` (only their gates use a store)');
  }
  const options = {
    workers: flags.workers ?? (lanes ? 0 : 8),
    burst: flags.burst ?? 2,
    perSecond: flags.perSecond ?? 2,
    // Seconds to ms, without float noise (1.005 * 1000 is 1004.9999999999999 in binary floating point).
    retryAfterMs: Number(((flags.retryAfter ?? 1) * 1000).toFixed(6)),
    shared: coordination.length === 0,
    separateGates: flags.separateGates ?? false,
    maxAttempts: flags.maxAttempts ?? 10,
    retryBudget: flags.retryBudget ?? null,
    alwaysReject: flags.alwaysReject ?? false,
    snapshots: flags.snapshots ?? 1,
    learn: flags.learn ?? false,
    headers: flags.headersOn429 ? 'throttled' : (flags.headers ?? false),
    latencyMs: flags.latencyMs ?? 0,
  };
  // The newer options only when asked for, so the JSON of a run without them stays as it was.
  if (flags.processes !== undefined) options.processes = flags.processes;
  if (flags.threads !== undefined) options.threads = flags.threads;
  if (flags.storeLatencyMs !== undefined) options.storeLatencyMs = flags.storeLatencyMs;
  if (flags.lookups !== undefined) {
    options.lookups = { calls: flags.lookups, burst: flags.lookupBurst, perSecond: flags.lookupPerSecond };
  }
  if (lanes) options.lanes = lanes;
  if (flags.polls !== undefined) options.polls = flags.polls;
  if (flags.pollEveryMs !== undefined) options.pollEveryMs = flags.pollEveryMs;
  if (flags.cacheStaleForMs !== undefined && flags.cacheTtlMs === undefined) {
    throw new UsageError('`--cache-stale-for-ms N` needs `--cache-ttl-ms N`');
  }
  if (flags.cacheTtlMs !== undefined) options.cache = { ttlMs: flags.cacheTtlMs };
  if (flags.cacheStaleForMs !== undefined) options.cache.staleForMs = flags.cacheStaleForMs;
  const quota = quotaFlags(flags);
  if (quota) options.quota = quota;
  if (!options.shared) delete options.shared;
  if (options.separateGates === false) delete options.separateGates;

  const { simulate } = await import('../index.js');
  let result;
  try {
    result = simulate(options);
  } catch (err) {
    if (err instanceof TypeError || err instanceof RangeError) {
      // A lane's field is named as simulate() has it (`lanes[1].weight`): say which flag that was.
      const lane = /`lanes\[(\d+)\]/.exec(err.message)?.[1];
      const field = /`quota\.(\w+)`/.exec(err.message)?.[1];
      const flag = lane !== undefined ? ` (\`--lane ${flags.lanes[lane]}\`)`
        : QUOTA_FLAGS.has(field) ? ` (\`${QUOTA_FLAGS.get(field)[1]}\`)` : '';
      process.stderr.write(`odds-gate simulate: ${err.message}${flag}\n`);
      process.exitCode = 2;
      return;
    }
    throw err;
  }

  const { renderTimelineSvg, scenarioLabel } = await import('./timeline-svg.js');
  const { renderMonthSvg } = await import('./month-svg.js');
  const scenario = { shared: false, separateGates: 0, ...options };
  // Drawn only when asked (--svg FILE): a month as its credits day by day, any other run as its timeline.
  const svgPath = flags.svg === undefined ? null : resolve(flags.svg);
  const drawing = result.quota ? 'month' : 'timeline';
  let svgNote; // where the drawing went, or why it was not drawn
  let written = false;
  try {
    if (svgPath !== null) {
      writeFileSync(svgPath, result.quota ? renderMonthSvg(result.quota) : renderTimelineSvg(result, scenario));
      written = true;
      svgNote = `${drawing}: wrote ${relative(process.cwd(), svgPath) || svgPath} (${svgPath})`;
    }
  } catch (err) {
    if (err instanceof RangeError) {
      svgNote = `${drawing}: not drawn: ${err.message}`;
    } else if (err.code) {
      // Asked for a file and could not write it: the figures still print, the exit code says so.
      process.stderr.write(`odds-gate simulate: cannot write the ${drawing} to ${svgPath}: ${err.message}\n`);
      process.exitCode = 1;
    } else {
      throw err;
    }
  }

  if (flags.json) {
    process.stdout.write(`${JSON.stringify({ options, ...result, svg: written ? svgPath : null }, null, 2)}\n`);
    if (svgNote && !written) process.stderr.write(`${svgNote}\n`);
    return;
  }

  const label = scenarioLabel(scenario);
  const gated = Boolean(options.shared || options.separateGates || options.processes || options.threads);
  const lookups = options.lookups;
  const sent = { true: ' (X-RateLimit-* sent)', throttled: ' (X-RateLimit-* on 429s only)', false: ' (429 + Retry-After only)' }[options.headers];
  const out = [];
  const workers = options.workers + (lanes ?? []).reduce((n, l) => n + l.workers, 0);
  out.push(`odds-gate simulate: ${plural(workers, 'worker')}`
    + (options.snapshots > 1 ? ` x ${plural(options.snapshots, 'snapshot')}` : '')
    + (result.lanes ? ` in ${plural(result.lanes.length, 'lane')}` : '')
    + `, ${label}; server burst ${options.burst}, `
    + `${options.perSecond} per second, Retry-After ${options.retryAfterMs / 1000} s; `
    + `up to ${plural(options.maxAttempts, 'attempt')} per worker`
    + (options.retryBudget != null ? `, ${plural(options.retryBudget, 'retry', 'retries')} for all` : '')
    + (options.alwaysReject ? '; the server rejects everything' : '')
    + (options.learn ? `; the gates learn it${sent}` : '')
    + (options.latencyMs ? `; ${options.latencyMs} ms latency` : '')
    + (options.processes ? `; store round trip ${options.storeLatencyMs ?? 1} ms` : '')
    + (options.polls > 1 ? `; ${plural(options.polls, 'poll')}${options.pollEveryMs ? ` every ${options.pollEveryMs} ms` : ''}` : '')
    + (options.cache ? `; through a cache, snapshots fresh for ${options.cache.ttlMs} ms` : '')
    + (quota ? `; a quota of ${quota.limit} credits${quota.spread ? ', spread' : ''}` : '')
    + (lookups ? `; ${plural(lookups.calls, 'event lookup')} on a limiter of their own`
      + ` (burst ${lookups.burst}, ${lookups.perSecond} per second)` : ''));
  out.push('');
  out.push(table(
    ['scenario', 'attempts', 'throttled (429)', 'completed', 'abandoned', 'last attempt (ms)'],
    [[label, result.attempts, result.throttled, result.completed, result.abandoned, Math.round(result.lastAttemptMs)]],
  ));
  if (result.limiters) {
    out.push('');
    out.push(table(
      ['limiter', 'attempts', '429s', 'done at (ms)'],
      result.limiters.map((b) => [b.name, b.attempts, b.throttled, b.doneMs]),
    ));
  }
  if (result.lanes) {
    const ms = (n) => Number(n.toFixed(1));
    out.push('');
    out.push(table(
      ['lane', 'weight', 'workers', 'from (ms)', 'calls', 'admitted', '429s', 'done at (ms)', 'mean wait (ms)', 'max wait (ms)'],
      result.lanes.map((l) => [l.name, l.weight, l.workers, l.startMs, l.calls, l.admitted, l.throttled, l.doneMs, ms(l.meanWaitMs), ms(l.maxWaitMs)]),
    ));
    out.push(`all done at ${Math.max(...result.lanes.map((l) => l.doneMs))} ms`);
  }
  if (result.requestsSaved !== undefined) {
    out.push('');
    out.push(`cache: ${plural(result.requestsSaved, 'request')} saved (${plural(result.hits, 'fresh hit')},`
      + ` ${result.coalesced} joined to a request in flight${result.stale ? `, ${result.stale} stale` : ''});`
      + ` ${plural(result.attempts, 'request')} sent`);
  }
  if (result.quota) out.push('', ...month(result.quota));
  out.push('');
  // The cache's answers are on the timeline too, marked `cache`: no request, no admission.
  const times = result.timeline.filter((a) => !a.cache).map((a) => a.at);
  const shown = times.slice(0, MAX_LISTED).join(', ') + (times.length > MAX_LISTED ? `, ... (${times.length - MAX_LISTED} more)` : '');
  // With a gate every attempt is an admission; without one, the workers just send.
  out.push(`${gated ? 'admissions' : 'attempts sent'} (ms): ${shown}`);
  // Lookup j is worker `workers + j` in the timeline; it is listed as "lookup j".
  const rows = workers + (lookups?.calls ?? 0);
  const mark = (a) => `${a.at}${{ hit: 'h', coalesced: 'c', stale: 's' }[a.cache] ?? (a.status === 429 ? 'x' : '')}`;
  const marks = result.requestsSaved === undefined ? 'x marks a 429'
    : `x marks a 429, h a fresh answer from the cache, c a call joined to one in flight${result.stale ? ', s a stale answer' : ''}`;
  if (result.lanes) {
    // A lane's workers are listed together: the lane's attempts in time order.
    out.push(`by lane (${marks}):`);
    const width = Math.max(...result.lanes.map((l) => l.name.length));
    for (const l of result.lanes) {
      const mine = result.timeline.filter((a) => a.worker >= l.firstWorker && a.worker < l.firstWorker + l.workers);
      out.push(`  ${l.name.padEnd(width)}  ${mine.map(mark).join('  ')}`);
    }
  } else if (result.quota) {
    out.push('(per-worker times over the period: see --json)');
  } else if (rows <= MAX_LISTED) {
    out.push(`by worker (${marks}):`);
    const byWorker = Array.from({ length: rows }, () => []);
    for (const a of result.timeline) byWorker[a.worker].push(mark(a));
    const w = String(workers - 1).length;
    const name = (i) => (i < workers ? `worker ${String(i).padStart(w)}`
      : `lookup ${String(i - workers).padStart(String(lookups.calls - 1).length)}`);
    byWorker.forEach((list, i) => out.push(`  ${name(i)}  ${list.join('  ')}`));
  } else if (lookups) {
    out.push(`(per-worker times for ${options.workers} workers and ${plural(lookups.calls, 'lookup')}: see --json)`);
  } else {
    out.push(`(per-worker times for ${workers} workers: see --json)`);
  }
  if (options.learn) out.push('', ...learning(options, result));
  if (svgNote) out.push('', svgNote);
  process.stdout.write(`${out.join('\n')}\n`);
}

/** How a learning run went: the estimate's path, how soon it came near the truth, its cost. */
function learning(options, result) {
  const truth = options.perSecond;
  const near = (e) => Math.abs(e.perSecond - truth) <= 0.1 * truth;
  const first = result.learned.find(near);
  const last = result.learned.at(-1);
  const calls = result.lanes ? result.lanes.reduce((n, l) => n + l.calls, 0) : options.workers * options.snapshots * (options.polls ?? 1);
  const floorMs = (Math.max(0, calls - options.burst) / truth) * 1000;
  // The floor is the snapshots': with lookups, compare it with the last snapshot attempt.
  const lastMs = options.lookups
    ? result.timeline.reduce((m, a) => (a.worker < options.workers && !a.cache ? Math.max(m, a.at) : m), 0)
    : result.lastAttemptMs;
  const lastName = options.lookups ? 'last snapshot attempt' : 'last attempt';
  const fixed = (n) => Number(n.toFixed(3));
  const lines = ['learning (the first gate):'];
  lines.push(`  estimate at the end: ${last ? `burst ${last.burst ?? 'not learned (1 used)'}, ${fixed(last.perSecond)} per second (at least ${fixed(last.atLeast)})` : 'none'}`
    + `; the server's: burst ${options.burst}, ${truth} per second`);
  lines.push(`  pace first within 10 % of the true rate: ${first ? `${first.at} ms` : 'never'}`);
  lines.push(`  cost: ${plural(result.throttled, '429')} of ${plural(result.attempts, 'attempt')}`
    + ` (${fixed((100 * result.throttled) / Math.max(1, result.attempts))} %); ${lastName} ${lastMs} ms`
    + (floorMs > 0 ? `, ${fixed(lastMs / floorMs)} x the floor (${fixed(floorMs)} ms for ${calls} calls)` : ''));
  const shown = result.learned.slice(0, 12).map((e) => `${e.at} ms: ${fixed(e.perSecond)}/s`);
  lines.push(`  estimates: ${shown.join(', ')}${result.learned.length > 12 ? `, ... (${result.learned.length - 12} more)` : ''}`);
  return lines;
}

async function demoCommand(argv) {
  parseFlags(argv); // no flags yet: anything is a usage error
  const { runDemo } = await import('../demo/eight-workers.js');
  await runDemo();
}

async function main(argv) {
  if (argv.includes('--help') || argv.includes('-h') || argv[0] === 'help') {
    process.stdout.write(USAGE);
    return;
  }
  if (argv[0] === '--version' || argv[0] === '-v' || argv[0] === 'version') {
    const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
    process.stdout.write(`odds-gate ${version}\n`);
    return;
  }
  const [command, ...rest] = argv;
  try {
    if (command === 'simulate') return await simulateCommand(rest);
    if (command === 'demo') return await demoCommand(rest);
    throw new UsageError(command === undefined ? 'missing command' : `unknown command \`${command}\``);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`odds-gate: ${err.message}\n\n${USAGE}`);
    process.exitCode = 2;
  }
}

await main(process.argv.slice(2));

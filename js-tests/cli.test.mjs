// The package's CLI as a user runs it: `node pkg/bin/odds-gate.js ...` in a child process.
// simulate: the article's numbers in the table, the SVG timeline written (when asked) and well-formed, bad
// flags refused with exit 2; demo: the live run, where the gate's row shows no 429.
import assert from 'node:assert/strict';
import { test, after } from 'node:test';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const CLI = fileURLToPath(new URL('../pkg/bin/odds-gate.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'odds-gate-cli-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** Runs the CLI to completion (killed after `timeoutMs`); resolves with code and output. */
function cli(args, { cwd = dir, timeoutMs = 20_000 } = {}) {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [CLI, ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (d) => { stdout += d; });
    proc.stderr.on('data', (d) => { stderr += d; });
    const killer = setTimeout(() => proc.kill('SIGKILL'), timeoutMs);
    proc.on('error', reject);
    proc.on('close', (code, signal) => {
      clearTimeout(killer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/** The numbers of the table row that starts with `label`. */
function row(stdout, label) {
  const line = stdout.split('\n').find((l) => l.startsWith(label));
  assert.ok(line, `no row "${label}" in:\n${stdout}`);
  return line.slice(label.length).trim().split(/\s+/).map(Number);
}

// A small XML well-formedness check (no dependency): one root element, tags nested and closed,
// attributes quoted and unique, `&` only in entity references, no stray `<`.
const NAME = /^[A-Za-z_:][\w.:-]*/;
const ENTITY = /^&(amp|lt|gt|quot|apos|#\d+|#x[0-9a-fA-F]+);/;
function checkEntities(text, where) {
  for (let i = text.indexOf('&'); i !== -1; i = text.indexOf('&', i + 1)) {
    if (!ENTITY.test(text.slice(i))) throw new Error(`bad entity reference in ${where}: ${text.slice(i, i + 12)}`);
  }
}
function parseXml(xml) {
  const stack = [];
  const elements = [];
  let roots = 0;
  let i = 0;
  const text = (s) => {
    if (stack.length === 0 && s.trim() !== '') throw new Error(`text outside the root element: ${s.trim().slice(0, 20)}`);
    checkEntities(s, 'text');
  };
  while (i < xml.length) {
    const lt = xml.indexOf('<', i);
    if (lt === -1) { text(xml.slice(i)); break; }
    text(xml.slice(i, lt));
    const rest = xml.slice(lt);
    const close = (marker) => {
      const end = xml.indexOf(marker, lt);
      if (end === -1) throw new Error(`unterminated ${rest.slice(0, 10)}`);
      return end + marker.length;
    };
    if (rest.startsWith('<!--')) { i = close('-->'); continue; }
    if (rest.startsWith('<![CDATA[')) { if (!stack.length) throw new Error('CDATA outside the root'); i = close(']]>'); continue; }
    if (rest.startsWith('<?')) { i = close('?>'); continue; }
    if (rest.startsWith('<!')) throw new Error('DOCTYPE and other declarations are not expected here');
    if (rest.startsWith('</')) {
      const name = NAME.exec(rest.slice(2))?.[0];
      if (!name) throw new Error(`bad end tag at ${lt}`);
      let j = lt + 2 + name.length;
      while (/\s/.test(xml[j])) j++;
      if (xml[j] !== '>') throw new Error(`bad end tag </${name} at ${lt}`);
      const open = stack.pop();
      if (open !== name) throw new Error(`</${name}> closes <${open}> at ${lt}`);
      i = j + 1;
      continue;
    }
    const name = NAME.exec(rest.slice(1))?.[0];
    if (!name) throw new Error(`bad start tag at ${lt}: ${rest.slice(0, 12)}`);
    let j = lt + 1 + name.length;
    const attrs = {};
    for (;;) {
      const ws = /^\s*/.exec(xml.slice(j))[0].length;
      j += ws;
      if (xml.startsWith('/>', j) || xml[j] === '>') break;
      if (ws === 0) throw new Error(`no space before an attribute of <${name}> at ${j}`);
      const attr = NAME.exec(xml.slice(j))?.[0];
      if (!attr) throw new Error(`bad attribute in <${name}> at ${j}: ${xml.slice(j, j + 12)}`);
      j += attr.length;
      const m = /^\s*=\s*("([^"<]*)"|'([^'<]*)')/.exec(xml.slice(j));
      if (!m) throw new Error(`attribute ${attr} of <${name}> is not a quoted value at ${j}`);
      if (attr in attrs) throw new Error(`duplicate attribute ${attr} in <${name}>`);
      attrs[attr] = m[2] ?? m[3];
      checkEntities(attrs[attr], `attribute ${attr}`);
      j += m[0].length;
    }
    if (stack.length === 0) roots++;
    if (roots > 1) throw new Error('more than one root element');
    elements.push({ name, attrs });
    if (xml.startsWith('/>', j)) { i = j + 2; } else { stack.push(name); i = j + 1; }
  }
  if (stack.length) throw new Error(`unclosed <${stack.join('>, <')}>`);
  if (roots !== 1) throw new Error('no root element');
  return elements;
}

test('--version prints the package\'s version', async () => {
  const { version } = JSON.parse(readFileSync(new URL('../pkg/package.json', import.meta.url), 'utf8'));
  for (const flag of ['--version', '-v']) {
    const r = await cli([flag]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, `odds-gate ${version}\n`);
  }
});

test('the XML check itself rejects what is not well-formed', () => {
  assert.equal(parseXml('<?xml version="1.0"?>\n<a x="1"><b/>t &amp; u</a>\n').length, 2);
  for (const bad of ['<a><b></a></b>', '<a>', '<a x=1/>', '<a x="1" x="2"/>', '<a>&nope;</a>', '<a/><b/>', 'x<a/>', '<a>1 < 2</a>']) {
    assert.throws(() => parseXml(bad), Error, bad);
  }
});

test('simulate: one shared gate by default, the article\'s admissions at 0, 0, 500 ... 3000 ms', async () => {
  const r = await cli(['simulate', '--workers', '8', '--burst', '2', '--per-second', '2', '--retry-after', '1']);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(row(r.stdout, 'one shared gate'), [8, 0, 8, 0, 3000]);
  assert.match(r.stdout, /attempts\s+throttled \(429\)\s+completed\s+abandoned\s+last attempt \(ms\)/);
  assert.match(r.stdout, /^admissions \(ms\): 0, 0, 500, 1000, 1500, 2000, 2500, 3000$/m);
  // No file unless asked: nothing written in the folder it ran in, and nothing said of one.
  assert.deepEqual(readdirSync(dir).filter((f) => f.endsWith('.svg')), []);
  assert.doesNotMatch(r.stdout, /timeline:/);
  // Asked, it is written where asked, and the output says where.
  const asked = await cli(['simulate', '--workers', '8', '--svg', 'asked.svg']);
  const svg = join(dir, 'asked.svg');
  assert.ok(existsSync(svg));
  assert.match(asked.stdout, /timeline: wrote asked\.svg/);
  assert.ok(asked.stdout.includes(svg), 'the absolute path is printed');
});

test('simulate --independent: 20 attempts, 12 throttled (the article\'s collision)', async () => {
  const r = await cli(['simulate', '--independent', '--svg', 'independent.svg']);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(row(r.stdout, 'independent retries, no gate'), [20, 12, 8, 0, 3000]);
  assert.match(r.stdout, /worker 7 {2}0x {2}1000x {2}2000x {2}3000$/m);
});

test('simulate --separate-gates 2: 14 attempts, 6 throttled (one gate per process)', async () => {
  const r = await cli(['simulate', '--separate-gates', '2', '--svg', 'two-gates.svg']);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(row(r.stdout, '2 separate gates'), [14, 6, 8, 0, 3000]);
});

test('simulate --json gives the result with the options it ran', async () => {
  const r = await cli(['simulate', '--json', '--always-reject', '--max-attempts', '3', '--retry-budget', '4', '--svg=budget.svg']);
  assert.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  assert.deepEqual([out.attempts, out.throttled, out.completed, out.abandoned], [12, 12, 0, 8]);
  assert.equal(out.options.retryAfterMs, 1000);
  assert.equal(out.svg, join(dir, 'budget.svg'));
  assert.equal(out.timeline.length, 12);
});

test('simulate --cache-ttl-ms: the requests the cache saved, in the table, the JSON and the SVG', async () => {
  // 8 workers polling the same 4 snapshots every 250 ms for 6 s, fresh for 2 s: 4 x 3 requests.
  const args = ['simulate', '--workers', '8', '--snapshots', '4', '--polls', '24', '--poll-every-ms', '250', '--cache-ttl-ms', '2000'];
  const r = await cli([...args, '--svg', 'cache.svg']);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(row(r.stdout, 'one shared gate'), [12, 0, 768, 0, 5000]);
  assert.match(r.stdout, /; 24 polls every 250 ms; through a cache, snapshots fresh for 2000 ms/);
  assert.match(r.stdout, /^cache: 756 requests saved \(\d+ fresh hits, \d+ joined to a request in flight\); 12 requests sent$/m);
  assert.match(r.stdout, /^admissions \(ms\): 0, 0, 500, 1000, 2000, 2000, 2500, 3000, 4000, 4000, 4500, 5000$/m);
  assert.match(r.stdout, /^by worker \(x marks a 429, h a fresh answer from the cache, c a call joined to one in flight\):$/m);
  // Worker 1 joins worker 0's requests of the first poll; its next polls, behind, are answered fresh.
  assert.match(r.stdout, /^ {2}worker 1 {2}0c {2}0c {2}500c {2}1000c {2}1000h {2}1000h /m);
  const json = await cli([...args, '--json', '--svg', 'cache.svg']);
  const out = JSON.parse(json.stdout);
  assert.deepEqual(out.options.cache, { ttlMs: 2000 });
  assert.equal(out.requestsSaved, out.hits + out.coalesced);
  assert.equal(out.requestsSaved, 756);
  assert.equal(out.timeline.filter((a) => a.cache).length, 756);
  const elements = parseXml(readFileSync(join(dir, 'cache.svg'), 'utf8'));
  const rings = elements.filter((e) => e.attrs.class === 'cached');
  assert.equal(rings.length, 756);
  assert.deepEqual(new Set(rings.map((e) => e.attrs['data-cache'])), new Set(['hit', 'coalesced']));
  assert.equal(elements.filter((e) => e.attrs.class === 'attempt').length, 12);
  // Without the flag the run is as it was: no cache figures, every call a request.
  const plain = JSON.parse((await cli([...args.slice(0, -2), '--json', '--svg', 'plain.svg'])).stdout);
  assert.equal(plain.requestsSaved, undefined);
  assert.equal(plain.attempts, 768);
});

test('simulate --quota-limit: a month at 3x the quota runs dry after 10.5 days, and with --spread never', async () => {
  // 10 000 credits over 30 days, one worker polling 28 500 times (3 x what the spread allows).
  const args = ['simulate', '--workers', '1', '--polls', '28500', '--quota-limit', '10000'];
  const plain = await cli([...args, '--svg', 'month.svg']);
  assert.equal(plain.code, 0, plain.stderr);
  assert.match(plain.stdout, /; a quota of 10000 credits$/m);
  assert.match(plain.stdout, /^quota: 10000 of 10000 credits used \(100 %\) over 30 days; ran out after 10\.53 days$/m);
  // 10001 sent: the first call past the quota went out, and was refused (the server's 429).
  assert.match(plain.stdout, /^ {2}28500 calls wanted, 10001 sent, the first at 0 ms; 1 \/usage reading$/m);
  assert.match(plain.stdout, /^ {2}18500 calls refused for the spent quota, 0 held .*, 0 still waiting at the end$/m);
  assert.match(plain.stdout, /^day +credits +of even +\(\| an even spend: 333\.33\)$/m);
  assert.match(plain.stdout, /^1 +950 +2\.85 +#+\|#+$/m);
  assert.match(plain.stdout, /^30 +0 +0 +\|$/m);
  // The month as an SVG: a bar a day for all 30 days (0 after it ran out), the even line, days
  // on the axis; small (one bar a day, not a mark per call).
  const month = readFileSync(join(dir, 'month.svg'), 'utf8');
  const elements = parseXml(month);
  const bars = elements.filter((e) => e.attrs['data-slice'] !== undefined);
  assert.equal(bars.length, 30);
  assert.deepEqual(bars.slice(0, 2).map((b) => Number(b.attrs['data-credits'])), [950, 950]);
  assert.equal(Number(bars[29].attrs['data-credits']), 0);
  assert.equal(elements.filter((e) => e.attrs['data-even'] === '333.33').length, 1);
  assert.match(month, />day</);
  assert.match(month, /a quota of 10000 credits over 30 days</);
  assert.ok(month.length < 100_000, `${month.length} bytes`);
  assert.match(plain.stdout, /^month: wrote month\.svg/m);
  const spread = await cli([...args, '--spread', '--json', '--svg', 'month.svg']);
  assert.equal(spread.code, 0, spread.stderr);
  const out = JSON.parse(spread.stdout);
  assert.deepEqual(out.options.quota, { limit: 10000, spread: true });
  const q = out.quota;
  // #37's targets: 95 % of the limit less the reserve or more, never exhausted, every day within
  // 10 % of even (9500 credits, 0.998..1.007 measured).
  assert.ok(q.used >= 0.95 * 9500 && q.used <= 9500, q.used);
  assert.equal(q.exhaustedAtMs, null);
  assert.equal(q.refused, 0);
  assert.equal(q.spent.length, 30);
  for (const day of q.spent) assert.ok(Math.abs(day / q.even - 1) <= 0.1, `${day} vs ${q.even}`);
  // A reading due every refreshMs (15 min), sent with the next call: the polls the spread has
  // no credit for within a minute are refused at once (credit-wait), so none waits at the due
  // time (2881 when they all waited, before #49).
  assert.equal(q.readings, 2376);
  const table = await cli([...args, '--spread', '--svg', 'month.svg']);
  assert.match(table.stdout, /^quota: 9500 of 10000 credits used \(95 %\) over 30 days, spread to its end; never ran out$/m);
  // With a cache keeping the snapshot stale for a day, the polls after the quota ran out are
  // answered from it: none refused (tests/sim_spread.rs has the same run).
  const cached = await cli(['simulate', '--workers', '2', '--polls', '1000', '--quota-limit', '50', '--quota-days', '1',
    '--cache-ttl-ms', '60000', '--cache-stale-for-ms', '86400000', '--svg', 'month.svg']);
  assert.equal(cached.code, 0, cached.stderr);
  assert.match(cached.stdout, /^cache: 1951 requests saved \(0 fresh hits, 51 joined to a request in flight, 1900 stale\); 51 requests sent$/m);
  assert.match(cached.stdout, /; 1 \/usage reading$/m);
  assert.match(cached.stdout, /^ {2}0 calls refused for the spent quota/m);
  // A month is drawn as its credits a slice (a tenth of this 1-day period), not as its calls.
  const drawn = readFileSync(join(dir, 'month.svg'), 'utf8');
  assert.equal(parseXml(drawn).filter((e) => e.attrs['data-slice'] !== undefined).length, 10);
});

test('simulate --quota-limit: a small plan starts at once, and a new period resumes at once (--quota-periods)', async () => {
  // 1,000 credits with 25 days left, one poll every 12 minutes wanted: the first call at 0 ms,
  // then the spread's pace (tests/sim_spread.rs runs the same months).
  const small = await cli(['simulate', '--workers', '1', '--polls', '3000', '--quota-limit', '1000', '--quota-days', '25',
    '--spread', '--svg', 'month.svg']);
  assert.equal(small.code, 0, small.stderr);
  assert.match(small.stdout, /^ {2}3000 calls wanted, 950 sent, the first at 0 ms; \d+ \/usage readings$/m);
  assert.match(small.stdout, /^quota: 950 of 1000 credits used \(95 %\) over 25 days, spread to its end; never ran out$/m);
  // Two 1-day periods of 100 credits at 3x demand: the second period's first call goes as it begins.
  const turn = await cli(['simulate', '--workers', '1', '--polls', '600', '--quota-limit', '100', '--quota-days', '1',
    '--quota-periods', '2', '--spread', '--svg', 'month.svg']);
  assert.equal(turn.code, 0, turn.stderr);
  assert.match(turn.stdout, /over 1 day \(the last of 2 periods\), spread to its end/);
  assert.match(turn.stdout, /^ {2}period 2 began at 86400000 ms: its first call went after waiting 0 ms in it$/m);
  // The even-spend mark stands in one column on every row.
  const marks = turn.stdout.split('\n').filter((l) => /^\d+ +[\d.]+ +[\d.-]+ /.test(l)).map((l) => l.indexOf('|'));
  assert.equal(marks.length, 20);
  assert.equal(new Set(marks).size, 1, String(marks));
  const bad = await cli(['simulate', '--quota-limit', '100', '--quota-periods', '1.5']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--quota-periods/);
});

test('the SVG timeline is well-formed, with one lane per worker and a mark per attempt', async () => {
  for (const [args, workers, attempts, throttled] of [
    [['--independent'], 8, 20, 12],
    [['--separate-gates', '2'], 8, 14, 6],
    [['--workers', '5', '--burst', '1', '--per-second', '4', '--retry-after', '0.5', '--independent'], 5, null, null],
  ]) {
    const file = join(dir, `lanes-${workers}-${args.join('')}.svg`);
    const r = await cli(['simulate', ...args, '--svg', file, '--json']);
    assert.equal(r.code, 0, r.stderr);
    const result = JSON.parse(r.stdout);
    const xml = readFileSync(file, 'utf8');
    const elements = parseXml(xml);
    const root = elements[0];
    assert.equal(root.name, 'svg');
    assert.equal(root.attrs.xmlns, 'http://www.w3.org/2000/svg');
    assert.ok(Number(root.attrs.width) > 0 && Number(root.attrs.height) > 0);
    const lanes = elements.filter((e) => e.attrs.class === 'lane');
    assert.deepEqual(lanes.map((e) => Number(e.attrs['data-worker'])), Array.from({ length: workers }, (_, i) => i));
    // A mark per attempt: a circle for a 200, a cross (a group of two lines) for a 429.
    const marks = elements.filter((e) => e.attrs.class === 'attempt');
    assert.deepEqual(
      marks.map((e) => [Number(e.attrs['data-at']), Number(e.attrs['data-worker']), Number(e.attrs['data-status'])]),
      result.timeline.map((a) => [a.at, a.worker, a.status]),
    );
    assert.ok(marks.every((e) => e.name === (e.attrs['data-status'] === '200' ? 'circle' : 'g')));
    // Cooldowns shaded: none without a 429, some on a throttled worker's lane otherwise.
    const shaded = new Set(elements.filter((e) => e.attrs.class === 'cooldown').map((e) => Number(e.attrs['data-worker'])));
    for (const a of result.timeline) if (a.status === 429) assert.ok(shaded.has(a.worker), `lane ${a.worker} shaded`);
    if (attempts !== null) assert.deepEqual([result.attempts, result.throttled], [attempts, throttled]);
    assert.match(xml, /<title>[^<]*\d+ workers[^<]*<\/title>/);
    assert.match(xml, /virtual time \(ms\)/);
    assert.match(xml, /429: throttled/);
  }
});

test('bad flags: usage on stderr and exit code 2', async () => {
  for (const args of [
    ['simulate', '--nope'],
    ['simulate', '--workers'],
    ['simulate', '--workers', 'eight'],
    ['simulate', '--workers', '8x'],
    ['simulate', '--per-second', '--burst', '2'],
    ['simulate', '--independent', '--separate-gates', '2'],
    ['simulate', '--processes', '2', '--threads', '2'],
    ['simulate', '--processes', '2', '--independent'],
    ['simulate', '--threads', '2', '--separate-gates', '2'],
    ['simulate', '--headers', '--headers-on-429'],
    ['simulate', '--headers-on-429=yes'],
    ['simulate', '--lookups', '4'],
    ['simulate', '--lookups', '4', '--lookup-burst', '2'],
    ['simulate', '--lookup-burst', '2', '--lookup-per-second', '2'],
    ['simulate', '--store-latency-ms', '5'],
    ['simulate', '--threads', '2', '--store-latency-ms', '5'],
    ['simulate', '--json=yes'],
    ['simulate', '--lane', 'live:9'],
    ['simulate', '--lane', ':1:2'],
    ['simulate', '--lane', 'live:nine:8'],
    ['simulate', '--lane', 'live:9:8:0:1'],
    ['simulate', '--lane', 'live:9:8', '--independent'],
    ['simulate', '--lane', 'live:9:8', '--threads', '2'],
    ['simulate', '--lane', 'live:9:8', '--lookups', '4', '--lookup-burst', '2', '--lookup-per-second', '2'],
    ['simulate', '--cache-stale-for-ms', '5'],
    ['simulate', '--quota-days', '3'],
    ['simulate', '--spread'],
    ['simulate', '--quota-limit', '10', '--quota-cost', 'GET /x'],
    ['simulate', '--quota-limit', '10', '--quota-cost', 'GET /x=many'],
    ['simulate', 'stray'],
    ['frobnicate'],
    [],
    ['demo', '--fast'],
  ]) {
    const r = await cli(args);
    assert.equal(r.code, 2, `${args.join(' ')}: exit ${r.code}\n${r.stderr}`);
    assert.match(r.stderr, /^odds-gate: .+\n\nUsage:/, args.join(' '));
    assert.equal(r.stdout, '', args.join(' '));
  }
});

test('values simulate() refuses: its own message and exit code 2', async () => {
  for (const [args, message] of [
    [['--workers', '0'], /`workers`/],
    [['--burst', '0'], /`burst`/],
    [['--retry-after', '-1'], /`retryAfterMs`/],
    [['--separate-gates', '1.5'], /`separateGates`/],
    [['--processes', '0'], /`processes`/],
    [['--threads', '1.5'], /`threads`/],
    [['--processes', '2', '--store-latency-ms', '-1'], /`storeLatencyMs`/],
    [['--lookups', '4', '--lookup-burst', '0', '--lookup-per-second', '2'], /`lookups\.burst`/],
    [['--lookups', '-1', '--lookup-burst', '2', '--lookup-per-second', '2'], /`lookups\.calls`/],
    [['--lane', 'background:1:40', '--lane', 'live:0:8'], /`lanes\[1\]\.weight` must be .* \(`--lane live:0:8`\)$/m],
    [['--lane', 'live:1:0'], /`lanes\[0\]\.workers`/],
    [['--lane', 'live:1:2:-5'], /`lanes\[0\]\.startMs`/],
    [['--cache-ttl-ms', '-1'], /`cache\.ttlMs`/],
    [['--cache-ttl-ms', '1', '--cache-stale-for-ms', '-1'], /`cache\.staleForMs`/],
    [['--polls', '0'], /`polls`/],
    [['--poll-every-ms', '-5'], /`pollEveryMs`/],
    [['--quota-limit', '0'], /`quota\.limit` must be .* \(`--quota-limit`\)$/m],
    [['--quota-limit', '10', '--quota-reserve', '1'], /`quota\.reserve` .* \(`--quota-reserve`\)$/m],
    [['--quota-limit', '10', '--quota-days', '1', '--quota-period-ms', '5'], /Choose one of `quota\.periodMs` and `quota\.days`/],
    [['--quota-limit', '10', '--spread', '--threads', '2'], /`quota\.spread` is for one process/],
  ]) {
    const r = await cli(['simulate', ...args]);
    assert.equal(r.code, 2, `${args.join(' ')}: exit ${r.code}`);
    assert.match(r.stderr, message);
    assert.equal(r.stdout, '');
  }
});

test('--help: usage on stdout, exit 0', async () => {
  for (const args of [['--help'], ['simulate', '--help'], ['-h']]) {
    const r = await cli(args);
    assert.equal(r.code, 0);
    assert.match(r.stdout, /^Usage:/);
    assert.match(r.stdout, /--separate-gates N/);
    for (const flag of ['--headers-on-429', '--lookups N', '--lookup-burst N', '--lookup-per-second N',
      '--processes N', '--threads N', '--store-latency-ms N', '--lane NAME:WEIGHT:WORKERS[:START_MS]',
      '--polls N', '--poll-every-ms N', '--cache-ttl-ms N', '--quota-limit N', '--quota-days N',
      '--quota-period-ms N', '--quota-used N', '--spread', '--quota-reserve N', '--quota-burst-ms N',
      '--quota-refresh-ms N', '--quota-cost PATTERN=CREDITS', '--cache-stale-for-ms N']) {
      assert.ok(r.stdout.includes(flag), flag);
    }
    assert.equal(r.stderr, '');
  }
});

test('demo: the gate\'s row shows no 429, plain fetch collides', { timeout: 60_000 }, async () => {
  const r = await cli(['demo'], { timeoutMs: 45_000 });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /attempts\s+429s\s+completed\s+wall \(s\)/);
  const [attempts, throttled, completed, wall] = row(r.stdout, 'odds-gate shared gate');
  assert.deepEqual([attempts, throttled, completed], [8, 0, 8]);
  assert.ok(wall >= 2.9, `wall ${wall} s: the article's floor is 3.0 s`);
  const plain = row(r.stdout, 'plain fetch + fixed 1 s retry');
  assert.equal(plain[2], 8);
  assert.ok(plain[1] > 0, `plain fetch saw ${plain[1]} 429s`);
});

test('simulate --learn: the estimate, how soon it came near the truth, and its cost in 429s', async () => {
  const common = ['--learn', '--workers', '20', '--snapshots', '10', '--burst', '5', '--per-second', '10',
    '--latency-ms', '20', '--max-attempts', '20', '--svg', join(dir, 'learn.svg')];
  const counted = await cli(['simulate', '--headers', ...common]);
  assert.equal(counted.code, 0, counted.stderr);
  assert.match(counted.stdout, /20 workers x 10 snapshots/);
  assert.match(counted.stdout, /the gates learn it \(X-RateLimit-\* sent\)/);
  assert.deepEqual(row(counted.stdout, 'one shared gate').slice(0, 4), [200, 0, 200, 0]);
  assert.match(counted.stdout, /estimate at the end: burst 5, [\d.]+ per second/);
  assert.match(counted.stdout, /pace first within 10 % of the true rate: \d+ ms/);
  assert.match(counted.stdout, /cost: 0 429s of 200 attempts \(0 %\)/);
  const blind = await cli(['simulate', ...common]);
  assert.equal(blind.code, 0, blind.stderr);
  assert.match(blind.stdout, /429 \+ Retry-After only/);
  assert.match(blind.stdout, /burst not learned \(1 used\)/);
  const [attempts, throttled, completed] = row(blind.stdout, 'one shared gate');
  assert.equal(completed, 200);
  assert.ok(throttled <= 0.1 * attempts, `${throttled} of ${attempts}`);
});

/** The rows of the per-limiter table: name -> [attempts, 429s, done at (ms)]. */
function limiters(stdout) {
  const lines = stdout.split('\n');
  const head = lines.findIndex((l) => /^limiter\s+attempts\s+429s\s+done at \(ms\)$/.test(l));
  assert.ok(head !== -1, `no limiter table in:\n${stdout}`);
  const rows = {};
  for (const line of lines.slice(head + 1)) {
    if (line === '') break;
    const [name, ...numbers] = line.split(/\s+/);
    rows[name] = numbers.map(Number);
  }
  return rows;
}

test('simulate --lookups: a second limiter, its own table rows, and a lane per lookup', async () => {
  const file = join(dir, 'lookups.svg');
  const r = await cli(['simulate', '--lookups', '4', '--lookup-burst', '2', '--lookup-per-second', '2', '--svg', file]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /; 4 event lookups on a limiter of their own \(burst 2, 2 per second\)$/m);
  // One gate per key, told the snapshot allowance: the lookups queue behind the snapshots.
  assert.deepEqual(row(r.stdout, 'one shared gate'), [12, 0, 12, 0, 5000]);
  assert.deepEqual(limiters(r.stdout), { snapshot: [8, 0, 3000], events: [4, 0, 5000] });
  assert.match(r.stdout, /^admissions \(ms\): 0, 0, 500, 1000, 1500, 2000, 2500, 3000, 3500, 4000, 4500, 5000$/m);
  assert.match(r.stdout, /^ {2}worker 7 {2}3000\n {2}lookup 0 {2}3500\n/m);
  assert.match(r.stdout, /^ {2}lookup 3 {2}5000$/m);
  const elements = parseXml(readFileSync(file, 'utf8'));
  assert.equal(elements.filter((e) => e.attrs.class === 'lane').length, 12);
  assert.equal(elements.filter((e) => e.attrs.class === 'attempt').length, 12);

  const json = await cli(['simulate', '--json', '--lookups', '4', '--lookup-burst', '2', '--lookup-per-second', '2', '--svg', file]);
  assert.equal(json.code, 0, json.stderr);
  const out = JSON.parse(json.stdout);
  assert.deepEqual(out.options.lookups, { calls: 4, burst: 2, perSecond: 2 });
  assert.deepEqual(out.limiters, [
    { name: 'snapshot', attempts: 8, throttled: 0, doneMs: 3000 },
    { name: 'events', attempts: 4, throttled: 0, doneMs: 5000 },
  ]);
});

test('simulate --learn with lookups: --headers names the limiters on every answer, --headers-on-429 on 429s only', async () => {
  const common = ['--learn', '--workers', '20', '--snapshots', '5', '--lookups', '40', '--lookup-burst', '10',
    '--lookup-per-second', '10', '--svg', join(dir, 'learn-lookups.svg')];
  const every = await cli(['simulate', '--headers', ...common]);
  assert.equal(every.code, 0, every.stderr);
  assert.match(every.stdout, /the gates learn it \(X-RateLimit-\* sent\); 40 event lookups/);
  assert.deepEqual(row(every.stdout, 'one shared gate'), [140, 0, 140, 0, 50000]);
  assert.deepEqual(limiters(every.stdout), { snapshot: [100, 0, 50000], events: [40, 0, 4068] });
  assert.match(every.stdout, /last snapshot attempt 50000 ms, 1\.02 x the floor \(49000 ms for 100 calls\)/);
  assert.equal(every.stdout.split('\n').filter((l) => l.startsWith('  lookup ')).length, 40);

  const on429 = await cli(['simulate', '--headers-on-429', ...common]);
  assert.equal(on429.code, 0, on429.stderr);
  assert.match(on429.stdout, /the gates learn it \(X-RateLimit-\* on 429s only\)/);
  const [, throttled, completed, abandoned] = row(on429.stdout, 'one shared gate');
  assert.deepEqual([throttled, completed, abandoned], [3, 140, 0]);
  const b = limiters(on429.stdout);
  assert.deepEqual(b.snapshot.slice(0, 2), [103, 3]);
  assert.deepEqual(b.events.slice(0, 2), [40, 0]);
});

test('simulate --processes and --threads: one allowance across them, no 429', async () => {
  const fleet = await cli(['simulate', '--processes', '2', '--svg', join(dir, 'processes.svg')]);
  assert.equal(fleet.code, 0, fleet.stderr);
  assert.match(fleet.stdout, /^odds-gate simulate: 8 workers, 2 processes sharing a store; .*; store round trip 1 ms$/m);
  // Each admission waits for the store: the article's floor plus a few round trips.
  assert.deepEqual(row(fleet.stdout, '2 processes sharing a store'), [8, 0, 8, 0, 3003]);
  assert.match(fleet.stdout, /^admissions \(ms\): 1, 1, 502, 1003, 1503, 2003, 2503, 3003$/m);

  const slow = await cli(['simulate', '--processes', '2', '--store-latency-ms', '50', '--svg', join(dir, 'processes.svg')]);
  assert.equal(slow.code, 0, slow.stderr);
  assert.match(slow.stdout, /; store round trip 50 ms$/m);
  assert.deepEqual(row(slow.stdout, '2 processes sharing a store'), [8, 0, 8, 0, 3150]);
  assert.match(slow.stdout, /^admissions \(ms\): 50, 50, 600, 1150, 1650, 2150, 2650, 3150$/m);

  const threads = await cli(['simulate', '--threads', '2', '--svg', join(dir, 'threads.svg')]);
  assert.equal(threads.code, 0, threads.stderr);
  assert.deepEqual(row(threads.stdout, '2 threads sharing memory'), [8, 0, 8, 0, 3000]);
  assert.match(threads.stdout, /^admissions \(ms\): 0, 0, 500, 1000, 1500, 2000, 2500, 3000$/m);
  const lanes = parseXml(readFileSync(join(dir, 'threads.svg'), 'utf8')).filter((e) => e.attrs.class === 'lane');
  assert.equal(lanes.length, 8);
});

/** The rows of the per-lane table: name -> [weight, workers, from, calls, admitted, 429s, done at, mean wait, max wait]. */
function laneRows(stdout) {
  const lines = stdout.split('\n');
  const head = lines.findIndex((l) => /^lane\s+weight\s+workers\s+from \(ms\)\s+calls\s+admitted\s+429s\s+done at \(ms\)/.test(l));
  assert.ok(head !== -1, `no lane table in:\n${stdout}`);
  const rows = {};
  for (const line of lines.slice(head + 1)) {
    if (line === '' || line.startsWith('all done')) break;
    const [name, ...numbers] = line.split(/\s+/);
    rows[name] = numbers.map(Number);
  }
  return rows;
}

test('simulate --lane: the issue\'s case, live calls done at 4.5 s beside 40 background ones, a colour and a legend per lane', async () => {
  const file = join(dir, 'lanes.svg');
  const args = ['simulate', '--burst', '2', '--per-second', '2', '--lane', 'background:1:40', '--lane', 'live:9:8:1000', '--svg', file];
  const r = await cli(args);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^odds-gate simulate: 48 workers in 2 lanes, one shared gate; /);
  assert.deepEqual(row(r.stdout, 'one shared gate'), [48, 0, 48, 0, 23000]);
  // Nine live admissions for each background one: all eight live ones go in a row from 1 s,
  // and the queue still ends at the allowance's floor (2 at once, then 46 at 2/s).
  assert.deepEqual(laneRows(r.stdout), {
    background: [1, 40, 0, 40, 40, 0, 23000, 12962.5, 23000],
    live: [9, 8, 1000, 8, 8, 0, 4500, 1750, 3500],
  });
  assert.match(r.stdout, /^all done at 23000 ms$/m);
  assert.match(r.stdout, /^ {2}live {8}1000 {2}1500 {2}2000 {2}2500 {2}3000 {2}3500 {2}4000 {2}4500$/m);
  assert.match(r.stdout, /^ {2}background {2}0 {2}0 {2}500 {2}5000 {2}5500 /m);

  const elements = parseXml(readFileSync(file, 'utf8'));
  assert.equal(elements.filter((e) => e.attrs.class === 'lane').length, 48);
  // A legend entry and a done line per lane, and each lane's 200s in its own colour.
  assert.deepEqual(elements.filter((e) => e.attrs.class === 'lane-key').map((e) => e.attrs['data-lane']), ['background', 'live']);
  assert.deepEqual(elements.filter((e) => e.attrs.class === 'lane-done').map((e) => e.attrs['data-lane']), ['background', 'live']);
  const fills = (from, to) => new Set(elements
    .filter((e) => e.attrs.class === 'attempt' && Number(e.attrs['data-worker']) >= from && Number(e.attrs['data-worker']) < to)
    .map((e) => e.attrs.fill));
  const [background, live] = [fills(0, 40), fills(40, 48)];
  assert.equal(background.size, 1);
  assert.equal(live.size, 1);
  assert.notDeepEqual([...background], [...live]);
  const xml = readFileSync(file, 'utf8');
  assert.match(xml, /live: weight 9, 8 workers from 1000 ms, done at 4500 ms/);

  const json = await cli([...args, '--json']);
  assert.equal(json.code, 0, json.stderr);
  const out = JSON.parse(json.stdout);
  assert.deepEqual(out.options.lanes, [
    { name: 'background', weight: 1, workers: 40, startMs: 0 },
    { name: 'live', weight: 9, workers: 8, startMs: 1000 },
  ]);
  assert.deepEqual(out.lanes.map((l) => [l.name, l.firstWorker, l.workers, l.doneMs, l.throttled]),
    [['background', 0, 40, 23000, 0], ['live', 40, 8, 4500, 0]]);

  // The wrapper's own workers beside a lane are the `default` lane.
  const mixed = await cli(['simulate', '--workers', '4', '--lane', 'live:9:2:1000', '--svg', file]);
  assert.equal(mixed.code, 0, mixed.stderr);
  assert.deepEqual(Object.keys(laneRows(mixed.stdout)), ['default', 'live']);
});

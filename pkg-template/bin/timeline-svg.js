// Draws a simulate() result as a standalone SVG timeline: one lane per worker (and per event
// lookup, after the workers), virtual time on the x axis, a mark per attempt (a filled circle for a 200, a red cross for a 429) and the
// cooldowns shaded on the lanes they hold. With a cache, a ring for each call it answered (no request). With `lanes` (simulate()'s weighted lanes, each a group
// of workers), each one's workers are tinted and their 200s drawn in its own colour, with a legend
// and a dashed line where the lane was done.

const FONT = 'DejaVu Sans, Helvetica, Arial, sans-serif';
const COLORS = {
  ok: '#1b7f3b',
  throttled: '#d62728',
  cooldown: '#f6b26b',
  cooldownEdge: '#d9822b',
  stripe: '#f4f6f8',
  grid: '#d5d9de',
  axis: '#4a4f55',
  text: '#1f2328',
  muted: '#59606a',
};
// The weighted lanes' colours, in order (none of them the 429s' red); past the last, they repeat.
const LANE_COLORS = ['#1f77b4', '#ff7f0e', '#2ca02c', '#9467bd', '#8c564b', '#e377c2', '#17becf', '#7f7f7f'];
export const MAX_LANES = 1000; // beyond this the picture stops being readable; use --json
export const MAX_MARKS = 50_000; // and the file stops being small

const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
const num = (x) => String(Math.round(x * 100) / 100);

/** Which gate each worker goes through: `null` means no gate (independent retries). */
export function gateOf(worker, scenario) {
  // Processes sharing a store and threads sharing memory hold one gate between them.
  if (scenario.shared || scenario.processes || scenario.threads) return 0;
  if (scenario.separateGates) return worker % scenario.separateGates;
  return null;
}

/**
 * Cooldown intervals per lane, overlapping ones merged (touching ones kept apart, so three
 * cooldowns in a row still read as three): a 429 at `at` holds the gate the worker used (every lane
 * on that gate) for `retryAfterMs`; without a gate it is the worker's own wait.
 */
export function cooldowns(result, scenario) {
  const byHolder = new Map(); // gate index or `w<worker>` -> [[start, end], ...]
  for (const a of result.timeline) {
    if (a.status !== 429 || a.cache || !(scenario.retryAfterMs > 0)) continue;
    const g = gateOf(a.worker, scenario);
    const holder = g === null ? `w${a.worker}` : g;
    if (!byHolder.has(holder)) byHolder.set(holder, []);
    byHolder.get(holder).push([a.at, a.at + scenario.retryAfterMs]);
  }
  for (const [holder, list] of byHolder) {
    list.sort((x, y) => x[0] - y[0]);
    const merged = [];
    for (const iv of list) {
      const last = merged[merged.length - 1];
      if (last && iv[0] < last[1]) last[1] = Math.max(last[1], iv[1]);
      else merged.push([...iv]);
    }
    byHolder.set(holder, merged);
  }
  const count = laneCount(scenario);
  const lanes = Array.from({ length: count }, () => []);
  for (let w = 0; w < count; w++) {
    const g = gateOf(w, scenario);
    lanes[w] = byHolder.get(g === null ? `w${w}` : g) ?? [];
  }
  return lanes;
}

/** A tick step of 1, 2 or 5 times a power of ten giving about `target` ticks over `span`. */
function niceStep(span, target = 8) {
  const raw = span / target;
  const p = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
  return 10 * p;
}

/** Every worker: the wrapper's own, then the weighted lanes' (simulate()'s `lanes`). */
const allWorkers = (scenario) => scenario.workers + (scenario.lanes ?? []).reduce((n, l) => n + l.workers, 0);

/** Lanes drawn: the workers', then one per event lookup. */
export const laneCount = (scenario) => allWorkers(scenario) + (scenario.lookups?.calls ?? 0);

/** Describes the scenario in words, for titles and tables. */
export function scenarioLabel(scenario) {
  if (scenario.shared) return 'one shared gate';
  if (scenario.processes) return `${scenario.processes} process${scenario.processes === 1 ? '' : 'es'} sharing a store`;
  if (scenario.threads) return `${scenario.threads} thread${scenario.threads === 1 ? '' : 's'} sharing memory`;
  if (scenario.separateGates) return `${scenario.separateGates} separate gate${scenario.separateGates === 1 ? '' : 's'}`;
  return 'independent retries, no gate';
}

/** The SVG document as a string. */
export function renderTimelineSvg(result, scenario) {
  const workers = laneCount(scenario); // lanes
  const lookups = scenario.lookups?.calls ?? 0;
  if (workers > MAX_LANES || result.timeline.length > MAX_MARKS) {
    const who = lookups ? `${scenario.workers} workers and ${lookups} lookups` : `${workers} workers`;
    throw new RangeError(`too large to draw (${who}, ${result.timeline.length} attempts; at most ${MAX_LANES} and ${MAX_MARKS})`);
  }
  const lanesCool = cooldowns(result, scenario);
  const weighted = (result.lanes ?? []).map((l, i) => ({ ...l, color: LANE_COLORS[i % LANE_COLORS.length] }));
  const weightedOf = (w) => weighted.find((l) => w >= l.firstWorker && w < l.firstWorker + l.workers);
  const coolEnd = Math.max(0, ...lanesCool.flat().map((iv) => iv[1]));
  const lastAt = Math.max(0, ...result.timeline.map((a) => a.at));
  let span = Math.max(lastAt, coolEnd);
  if (!(span > 0)) span = scenario.retryAfterMs > 0 ? scenario.retryAfterMs : 1000;
  const step = niceStep(span);
  const tMax = Math.ceil(span / step) * step;

  const laneH = workers <= 24 ? 30 : Math.max(4, Math.floor(720 / workers));
  const labelEvery = laneH >= 14 ? 1 : Math.ceil(14 / laneH);
  const short = (name) => (name.length > 16 ? `${name.slice(0, 15)}…` : name);
  const left = scenario.separateGates ? 118 : scenario.processes || scenario.threads ? 150
    : weighted.length ? 96 + 7 * Math.max(...weighted.map((l) => short(l.name).length)) : 84;
  const right = 96; // room for "abandoned" notes past the last tick
  const plotW = 840;
  const cached = result.requestsSaved !== undefined;
  // Legend rows for the lanes, two a row, and one for the cache.
  const top = 104 + 22 * (Math.ceil(weighted.length / 2) + (cached ? 1 : 0));
  const plotH = laneH * workers;
  const width = left + plotW + right;
  const height = top + plotH + 58;
  const pad = 14; // keeps a mark at 0 ms off the axis
  const x = (t) => left + pad + (t / tMax) * (plotW - 2 * pad);
  const yMid = (w) => top + w * laneH + laneH / 2;
  const r = Math.max(1.5, Math.min(6.5, laneH * 0.24));

  const out = [];
  const push = (s) => out.push(s);
  const label = scenarioLabel(scenario);
  const ra = scenario.retryAfterMs;
  const title = `odds-gate simulate: ${allWorkers(scenario)} worker${allWorkers(scenario) === 1 ? '' : 's'}${lookups ? ` + ${lookups} lookups` : ''}`
    + `${weighted.length ? ` in ${weighted.length} lanes` : ''}, ${label}`;
  const sub = `server: burst ${scenario.burst}, ${scenario.perSecond} per second, Retry-After ${ra} ms`
    + ` · up to ${scenario.maxAttempts} attempts per worker`
    + (scenario.retryBudget != null ? ` · retry budget ${scenario.retryBudget}` : '')
    + (scenario.alwaysReject ? ' · server rejects everything' : '')
    + (lookups ? ` · lookups: burst ${scenario.lookups.burst}, ${scenario.lookups.perSecond} per second` : '');
  const totals = `${result.attempts} attempts · ${result.throttled} throttled (429) · ${result.completed} completed`
    + ` · ${result.abandoned} abandoned · last attempt at ${result.lastAttemptMs} ms`
    + (cached ? ` · ${result.requestsSaved} requests saved by the cache` : '');

  push('<?xml version="1.0" encoding="UTF-8"?>');
  push(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="${FONT}" font-size="12" fill="${COLORS.text}">`);
  push(`<title>${esc(`${title}. ${totals}.`)}</title>`);
  push(`<rect x="0" y="0" width="${width}" height="${height}" fill="#ffffff"/>`);
  push(`<text x="${left}" y="26" font-size="17" font-weight="bold">${esc(title)}</text>`);
  push(`<text x="${left}" y="46" fill="${COLORS.muted}">${esc(sub)}</text>`);
  push(`<text x="${left}" y="64" font-weight="bold">${esc(totals)}</text>`);

  // Legend.
  const ly = 86;
  let lx = left;
  push('<g class="legend">');
  const served = weighted.length ? "200: served, in its lane's colour" : '200: served';
  push(`<circle cx="${lx + 6}" cy="${ly - 4}" r="5.5" fill="${weighted[0]?.color ?? COLORS.ok}"/>`);
  push(`<text x="${lx + 16}" y="${ly}">${esc(served)}</text>`);
  lx += weighted.length ? 240 : 104;
  push(cross(lx + 6, ly - 4, 5.5));
  push(`<text x="${lx + 16}" y="${ly}">429: throttled</text>`);
  lx += 112;
  push(`<rect x="${lx}" y="${ly - 11}" width="26" height="14" fill="${COLORS.cooldown}" fill-opacity="0.45" stroke="${COLORS.cooldownEdge}" stroke-width="0.8"/>`);
  const coolText = gateOf(0, scenario) !== null
    ? `cooldown: Retry-After (${ra} ms) from a 429, holding every worker on that gate`
    : `waiting Retry-After (${ra} ms) after the worker's own 429`;
  push(`<text x="${lx + 34}" y="${ly}">${esc(coolText)}</text>`);
  // The lanes, two a row: each one's colour, weight, workers and when it was done.
  weighted.forEach((l, i) => {
    const [kx, ky] = [left + (i % 2) * (plotW / 2), ly + 22 * (1 + Math.floor(i / 2))];
    const text = `${short(l.name)}: weight ${l.weight}, ${l.workers} workers${l.startMs ? ` from ${l.startMs} ms` : ''}, done at ${l.doneMs} ms`;
    push(`<g class="lane-key" data-lane="${esc(l.name)}"><circle cx="${kx + 6}" cy="${ky - 4}" r="5.5" fill="${l.color}"/>`
      + `<text x="${kx + 16}" y="${ky}">${esc(text)}</text></g>`);
  });
  if (cached) {
    // A row of its own, after the lanes'.
    const cy = ly + 22 * (1 + Math.ceil(weighted.length / 2));
    push(`<circle cx="${left + 6}" cy="${cy - 4}" r="4.5" fill="#ffffff" stroke="${COLORS.ok}" stroke-width="1.6"/>`);
    push(`<text x="${left + 16}" y="${cy}">${esc(`answered by the cache, no request (${result.hits} fresh hits, ${result.coalesced} joined a request in flight${result.stale ? `, ${result.stale} stale` : ''})`)}</text>`);
  }
  push('</g>');

  // Lanes: stripes, cooldowns, grid, then marks on top.
  push('<g class="lanes">');
  for (let w = 0; w < workers; w++) {
    const y0 = top + w * laneH;
    push(`<rect class="lane" data-worker="${w}" x="${left}" y="${y0}" width="${plotW}" height="${laneH}" fill="${w % 2 ? '#ffffff' : COLORS.stripe}"/>`);
    const l = weightedOf(w);
    if (l) push(`<rect class="lane-tint" data-lane="${esc(l.name)}" x="${left}" y="${y0}" width="${plotW}" height="${laneH}" fill="${l.color}" fill-opacity="0.08"/>`);
  }
  push('</g>');
  push('<g class="cooldowns">');
  for (let w = 0; w < workers; w++) {
    const y0 = top + w * laneH;
    for (const [s, e] of lanesCool[w]) {
      // Inset by a pixel at each end, so back-to-back cooldowns read as separate blocks.
      const w0 = x(Math.min(e, tMax)) - x(s);
      const inset = w0 > 4 ? 1 : 0;
      push(`<rect class="cooldown" data-worker="${w}" x="${num(x(s) + inset)}" y="${y0 + 1}" width="${num(w0 - 2 * inset)}" height="${Math.max(1, laneH - 2)}" fill="${COLORS.cooldown}" fill-opacity="0.45" stroke="${COLORS.cooldownEdge}" stroke-width="0.8"/>`);
    }
  }
  push('</g>');

  push('<g class="axis">');
  for (let t = 0; t <= tMax + 1e-9; t += step) {
    push(`<line x1="${num(x(t))}" y1="${top}" x2="${num(x(t))}" y2="${top + plotH + 5}" stroke="${COLORS.grid}" stroke-width="1"/>`);
    push(`<text x="${num(x(t))}" y="${top + plotH + 19}" text-anchor="middle" fill="${COLORS.axis}">${esc(num(t))}</text>`);
  }
  push(`<line x1="${left}" y1="${top + plotH}" x2="${left + plotW}" y2="${top + plotH}" stroke="${COLORS.axis}" stroke-width="1"/>`);
  push(`<line x1="${left}" y1="${top}" x2="${left}" y2="${top + plotH}" stroke="${COLORS.axis}" stroke-width="1"/>`);
  push(`<text x="${left + plotW / 2}" y="${top + plotH + 42}" text-anchor="middle" fill="${COLORS.axis}">virtual time (ms)</text>`);
  for (let w = 0; w < workers; w += labelEvery) {
    const g = gateOf(w, scenario);
    const n = scenario.processes || scenario.threads;
    const l = weightedOf(w);
    const name = l ? `worker ${w} · ${short(l.name)}`
      : w >= scenario.workers ? `lookup ${w - scenario.workers}`
      : scenario.separateGates ? `worker ${w} · gate ${g}`
        : n ? `worker ${w} · ${scenario.processes ? 'process' : 'thread'} ${w % n}` : `worker ${w}`;
    push(`<text x="${left - 8}" y="${num(yMid(w) + 4)}" text-anchor="end" font-size="${laneH >= 14 ? 12 : 9}">${esc(name)}</text>`);
  }
  push('</g>');

  push('<g class="attempts">');
  const last = new Map(); // worker -> last attempt
  for (const a of result.timeline) {
    const cx = x(a.at);
    const cy = yMid(a.worker);
    const data = `class="attempt" data-worker="${a.worker}" data-at="${a.at}" data-status="${a.status}"`;
    if (a.cache) {
      // A ring: the call was answered without a request (a fresh entry, or one in flight joined).
      const how = { hit: 'a fresh answer from the cache', coalesced: 'joined a request in flight', stale: 'a stale answer from the cache (the gate would have held or refused it)' }[a.cache];
      push(`<circle class="cached" data-cache="${a.cache}" data-worker="${a.worker}" data-at="${a.at}" data-status="${a.status}" cx="${num(cx)}" cy="${num(cy)}" r="${num(r * 0.8)}" fill="#ffffff" stroke="${a.status === 429 ? COLORS.throttled : COLORS.ok}" stroke-width="1.6"><title>${esc(`${a.at} ms: worker ${a.worker}: ${how}`)}</title></circle>`);
    } else if (a.status === 429) push(cross(cx, cy, r, `${a.at} ms: worker ${a.worker} throttled (429)`, data));
    else {
      const l = weightedOf(a.worker);
      const who = l ? `worker ${a.worker} (${l.name})` : `worker ${a.worker}`;
      push(`<circle ${data} cx="${num(cx)}" cy="${num(cy)}" r="${num(r)}" fill="${l?.color ?? COLORS.ok}"><title>${esc(`${a.at} ms: ${who} served (200)`)}</title></circle>`);
    }
    last.set(a.worker, a);
  }
  if (laneH >= 12) {
    for (const [w, a] of last) {
      if (a.status !== 429) continue;
      push(`<text x="${num(x(a.at) + r + 6)}" y="${num(yMid(w) + 4)}" fill="${COLORS.throttled}" font-size="11">abandoned</text>`);
    }
  }
  push('</g>');
  // Where each lane was done: a dashed line in its colour across its workers.
  push('<g class="lanes-done">');
  for (const l of weighted) {
    const [y0, y1] = [top + l.firstWorker * laneH, top + (l.firstWorker + l.workers) * laneH];
    push(`<line class="lane-done" data-lane="${esc(l.name)}" x1="${num(x(l.doneMs))}" y1="${y0}" x2="${num(x(l.doneMs))}" y2="${y1}" stroke="${l.color}" stroke-width="1.5" stroke-dasharray="4 3"><title>${esc(`${l.name} done at ${l.doneMs} ms`)}</title></line>`);
  }
  push('</g>');
  push('</svg>');
  return out.join('\n') + '\n';
}

function cross(cx, cy, r, tip, data = '') {
  const [x1, y1, x2, y2] = [num(cx - r), num(cy - r), num(cx + r), num(cy + r)];
  const t = tip ? `<title>${esc(tip)}</title>` : '';
  return `<g ${data} stroke="${COLORS.throttled}" stroke-width="2.4" stroke-linecap="round">${t}`
    + `<line x1="${x1}" y1="${y1}" x2="${x2}" y2="${y2}"/><line x1="${x1}" y1="${y2}" x2="${x2}" y2="${y1}"/></g>`;
}

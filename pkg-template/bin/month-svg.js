// Draws simulate({ quota })'s month as a standalone SVG: a bar for each slice's credits (a day,
// or a tenth of a short period) over the whole run, the even spend as a dashed line, the days on
// the x axis and credits on the y axis. A few KB whatever the calls: one bar a slice, not a mark
// per attempt (the timeline of a month is thousands of overlapping dots).

const FONT = 'DejaVu Sans, Helvetica, Arial, sans-serif';
const COLORS = { bar: '#1f77b4', over: '#d62728', even: '#1b7f3b', grid: '#d5d9de', axis: '#4a4f55', text: '#1f2328', muted: '#59606a' };
const DAY_MS = 86_400_000;

const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
const num = (x) => String(Math.round(x * 100) / 100);
const plural = (n, one, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** A tick step of 1, 2 or 5 times a power of ten giving about `target` ticks over `span`. */
function niceStep(span, target = 6) {
  const raw = span / target;
  const p = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
  return 10 * p;
}

/** The SVG document for `q`, simulate()'s `quota` report, as a string. */
export function renderMonthSvg(q) {
  const daily = q.sliceMs === DAY_MS;
  const slices = q.spent.length;
  const left = 72;
  const plotW = Math.max(480, Math.min(960, slices * 24));
  const plotH = 320;
  const top = 86;
  const width = left + plotW + 40;
  const height = top + plotH + 64;
  const most = Math.max(q.even, ...q.spent) || 1;
  const step = niceStep(most);
  const yMax = Math.ceil(most / step) * step;
  const slot = plotW / slices;
  const x = (i) => left + i * slot;
  const y = (credits) => top + plotH - (credits / yMax) * plotH;
  const out = [];
  const push = (s) => out.push(s);
  const days = q.periodMs / DAY_MS;
  const period = q.periodMs >= DAY_MS ? plural(Number(days.toFixed(2)), 'day') : `${Math.round(q.periodMs)} ms`;
  const ranOut = q.exhaustedAtMs === null ? 'never ran out'
    : `ran out ${daily ? `after ${num(q.exhaustedAtMs / DAY_MS)} days` : `at ${Math.round(q.exhaustedAtMs)} ms`}`;
  const title = `odds-gate simulate: a quota of ${q.limit} credits over ${period}${q.periods > 1 ? `, ${q.periods} periods` : ''}`
    + `${q.spread ? ', spread to its end' : ''}`;
  const sub = `${num(q.used)} credits used in the last period · ${ranOut} · ${q.wanted} calls wanted, ${q.sent} sent`
    + ` · ${plural(q.readings, '/usage reading')}`;
  push(`<?xml version="1.0" encoding="UTF-8"?>`);
  push(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="${FONT}">`);
  push(`<rect width="${width}" height="${height}" fill="#ffffff"/>`);
  push(`<text x="${left}" y="28" font-size="16" font-weight="bold" fill="${COLORS.text}">${esc(title)}</text>`);
  push(`<text x="${left}" y="48" font-size="12" fill="${COLORS.muted}">${esc(sub)}</text>`);
  // The legend: a bar, and the even line.
  push(`<rect x="${left}" y="60" width="12" height="10" fill="${COLORS.bar}"/>`);
  push(`<text x="${left + 18}" y="69" font-size="12" fill="${COLORS.text}">credits spent ${daily ? 'each day' : 'in each tenth of the period'} (red: above even)</text>`);
  push(`<line x1="${left + 300}" y1="65" x2="${left + 324}" y2="65" stroke="${COLORS.even}" stroke-width="2" stroke-dasharray="5 3"/>`);
  push(`<text x="${left + 330}" y="69" font-size="12" fill="${COLORS.text}">an even spend: ${num(q.even)}</text>`);
  // The credits axis and its grid.
  for (let c = 0; c <= yMax + 1e-9; c += step) {
    push(`<line x1="${left}" y1="${num(y(c))}" x2="${left + plotW}" y2="${num(y(c))}" stroke="${COLORS.grid}" stroke-width="1"/>`);
    push(`<text x="${left - 8}" y="${num(y(c) + 4)}" font-size="11" text-anchor="end" fill="${COLORS.axis}">${num(c)}</text>`);
  }
  push(`<text x="16" y="${top + plotH / 2}" font-size="12" fill="${COLORS.axis}" transform="rotate(-90 16 ${top + plotH / 2})" text-anchor="middle">credits</text>`);
  // A bar a slice, every slice of the run (the days after the quota ran out too).
  q.spent.forEach((credits, i) => {
    const h = Math.max(0, top + plotH - y(credits));
    const fill = q.even > 0 && credits > q.even * 1.1 ? COLORS.over : COLORS.bar;
    push(`<rect data-slice="${i}" data-credits="${num(credits)}" x="${num(x(i) + slot * 0.12)}" y="${num(top + plotH - h)}" width="${num(slot * 0.76)}" height="${num(h)}" fill="${fill}"/>`);
  });
  // The even spend across the whole run.
  push(`<line data-even="${num(q.even)}" x1="${left}" y1="${num(y(q.even))}" x2="${left + plotW}" y2="${num(y(q.even))}" stroke="${COLORS.even}" stroke-width="2" stroke-dasharray="5 3"/>`);
  // The time axis: days (or ms), a tick every few slices.
  push(`<line x1="${left}" y1="${top + plotH}" x2="${left + plotW}" y2="${top + plotH}" stroke="${COLORS.axis}" stroke-width="1"/>`);
  const every = Math.max(1, Math.ceil(slices / 15));
  for (let i = 0; i < slices; i += every) {
    const at = daily ? String(i + 1) : String(Math.round(i * q.sliceMs));
    push(`<text x="${num(x(i) + slot / 2)}" y="${top + plotH + 16}" font-size="11" text-anchor="middle" fill="${COLORS.axis}">${at}</text>`);
  }
  push(`<text x="${left + plotW / 2}" y="${top + plotH + 40}" font-size="12" text-anchor="middle" fill="${COLORS.axis}">${daily ? 'day' : 'from (ms)'}</text>`);
  push('</svg>');
  return `${out.join('\n')}\n`;
}

// stats() and the metrics' figures cross from wasm as JSON text, in 64 KB pieces (a call into
// JavaScript per field cost 25-45 us a gate), in its compact form: parsed here, each histogram's bins
// paired with their bounds again and the gates' times, which cross as Unix milliseconds (JSON
// has no dates), made `Date`s again, so the object is the shape index.d.ts gives.

/** The figures written in the JSON text `pieces` make; `bounds`: the histograms' bins' upper bounds (ms). */
export function parseFigures(pieces, bounds) {
  const figures = JSON.parse(pieces.join(''));
  for (const g of figures.gates) {
    const { quota, learned } = g;
    if (quota.periodEnd !== null) quota.periodEnd = new Date(quota.periodEnd);
    if (quota.projectedEnd != null) quota.projectedEnd = new Date(quota.projectedEnd);
    if (learned !== null && learned.lastThrottle !== null) learned.lastThrottle = new Date(learned.lastThrottle);
    g.admissionWaitMs.bins = bins(g.admissionWaitMs.bins, bounds);
    g.backoffMs.bins = bins(g.backoffMs.bins, bounds);
  }
  return figures;
}

/** `[{ leMs, count }]` from the counts alone. */
function bins(counts, bounds) {
  const out = new Array(counts.length);
  for (let i = 0; i < counts.length; i++) out[i] = { leMs: bounds[i], count: counts[i] };
  return out;
}

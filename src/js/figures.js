// @ts-check
// stats() and the metrics' figures cross from wasm in two parts: their many records (the gates,
// and the metrics' lanes on each gate) as numbers in a row, their texts beside them (the core's
// base/wire.rs, in pieces of some 90 gates), and the rest, a few keys, as an object with `gates`
// (and `lanes`) null in their places. Building each gate's object from the numbers costs far less
// than a call into JavaScript per field. Only this file reads the numbers: each value's
// place is its name's in the layout the core sends with every piece, which must be LAYOUT below
// (the builders spell it out, key by key, in the order index.d.ts gives); NaN is null (or a key
// left out), times cross as Unix milliseconds and become `Date`s, histograms' bins cross as
// counts and are paired with their bounds again.
//
// Numbers are made small integers where they are: V8 boxes a number read from a Float64Array (a
// heap object of its own, for the collector to copy), but not an int32, and a field that ever
// held a fraction boxes every value stored in it after. Most figures are small counts: a gate's
// objects came to 2.3 KB from 3.7 KB (Node 20), and building 10,000 gates to about 2/3 of the time.

const LAYOUT = 'scope,requests,admitted,waiting,peakWaiting,cancelled,abandonedInQueue,throttled,wakeups,'
  + 'timerArmed,cooldownUntil,cooldownRemainingMs,slow,retries{throttled,serverError,network,timeout},'
  + 'abandoned{attempts,time-budget,retry-budget,deadline,retry-after-exceeds-deadline,store-unavailable,'
  + 'queue-wait,queue-full,credit-wait},quotaRejected,'
  + 'quota{state,periodEnd,spread?{used,limit,spreadPerHour,waitingForCredit,unpaced,projectedEnd}},'
  + 'retryBudget,rate{burst,perSecond},learned?{burst,perSecond,atLeast,confidence,lastThrottle},'
  + 'store{kind,threads,calls,failures,up},admissionWaitMs{count,sumMs,maxMs,bins[]},'
  + 'backoffMs{count,sumMs,maxMs,bins[]},lastFeedback?{retryAfterMs,limit,remaining,resetMs,limiter}';

// The piece being read: its numbers, the next one's index, its text and the next character's.
let n;
let i = 0;
let text = '';
let at = 0;
let bounds;

/** Builds the gates of one piece (`numbers`, `chars`, written in `layout`) onto `gates`; `binBounds`: the histograms' bins' upper bounds (ms). */
export function addGates(gates, layout, numbers, chars, binBounds) {
  if (layout !== LAYOUT) throw new Error(`odds-gate: stats() gates written as ${layout}, read as ${LAYOUT}`);
  [n, i, text, at, bounds] = [numbers, 0, chars, 0, binBounds];
  while (i < n.length) gates.push(gate());
  n = bounds = undefined;
}

// The metrics' lanes: each lane's calls waiting on each gate.
const LANES = 'scope,lane,waiting';

/** Builds the lanes of one piece (`numbers`, `chars`, written in `layout`) onto `lanes`: `{ scope, lane, waiting }` each. */
export function addLanes(lanes, layout, numbers, chars) {
  if (layout !== LANES) throw new Error(`odds-gate: the metrics' lanes written as ${layout}, read as ${LANES}`);
  [n, i, text, at] = [numbers, 0, chars, 0];
  while (i < n.length) lanes.push({ scope: str(), lane: str(), waiting: num() });
  n = undefined;
}

// `v`, an int32 when it is one (-0 stays -0).
const small = (v) => {
  const k = v | 0;
  return k === v && (k !== 0 || 1 / v > 0) ? k : v;
};
const num = () => {
  const v = n[i++];
  return v === v ? small(v) : null;
};
const flag = () => n[i++] === 1;
const date = () => {
  const v = n[i++];
  return v === v ? new Date(v) : null;
};
function str() {
  const units = n[i++];
  if (units !== units) return null;
  at += units;
  return text.slice(at - units, at);
}
// An optional group's header: whether it is there; when not, its values are passed over.
function present() {
  const width = n[i++];
  if (width < 0) i -= width;
  return width >= 0;
}

function gate() {
  return {
    scope: str(),
    requests: num(),
    admitted: num(),
    waiting: num(),
    peakWaiting: num(),
    cancelled: num(),
    abandonedInQueue: num(),
    throttled: num(),
    wakeups: num(),
    timerArmed: flag(),
    cooldownUntil: num(),
    cooldownRemainingMs: num(),
    slow: flag(),
    retries: { throttled: num(), serverError: num(), network: num(), timeout: num() },
    abandoned: {
      attempts: num(),
      'time-budget': num(),
      'retry-budget': num(),
      deadline: num(),
      'retry-after-exceeds-deadline': num(),
      'store-unavailable': num(),
      'queue-wait': num(),
      'queue-full': num(),
      'credit-wait': num(),
    },
    quotaRejected: num(),
    quota: quota(),
    retryBudget: num(),
    rate: { burst: num(), perSecond: num() },
    learned: present()
      ? { burst: num(), perSecond: num(), atLeast: num(), confidence: num(), lastThrottle: date() }
      : null,
    store: store(),
    admissionWaitMs: histogram(),
    backoffMs: histogram(),
    lastFeedback: present()
      ? { retryAfterMs: num(), limit: num(), remaining: num(), resetMs: num(), limiter: str() }
      : null,
  };
}

function quota() {
  const q = { state: str(), periodEnd: date() };
  if (present()) {
    q.used = num();
    q.limit = num();
    q.spreadPerHour = num();
    q.waitingForCredit = num();
    q.unpaced = num();
    q.projectedEnd = date();
  }
  return q;
}

// Each key but `kind` is left out when it does not apply (NaN).
function store() {
  const s = { kind: str() };
  let v = n[i++];
  if (v === v) s.threads = v === 1;
  v = n[i++];
  if (v === v) s.calls = small(v);
  v = n[i++];
  if (v === v) s.failures = small(v);
  v = n[i++];
  if (v === v) s.up = v === 1;
  return s;
}

// The last bin (bound Infinity) is made apart, so its object's shape is not the others': one
// Infinity in their `leMs` would box every bound.
function histogram() {
  const last = bounds.length - 1;
  const h = { count: num(), sumMs: num(), maxMs: num(), bins: new Array(last + 1) };
  for (let k = 0; k < last; k++) h.bins[k] = { leMs: small(bounds[k]), count: small(n[i++]) };
  const above = {};
  above.leMs = bounds[last];
  above.count = small(n[i++]);
  h.bins[last] = above;
  return h;
}

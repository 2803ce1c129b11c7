// @ts-check
// One attempt: the inner fetch under a per-attempt timeout and the caller's signal. Plain
// JavaScript because it runs on every call: the package's fast path (fast.js) calls it for a
// call the gate admits at once, and the driver (driver.rs) for every other attempt: one
// implementation, one module, one timer.
import { callerSignal, feedbackOf } from './reads.js';
import { EARLY_MS } from './protocol.js';
import { inRequestOf, perRequest } from './requests.js';

/** How an attempt ended, as passed to `settle(id, value, how, status, feedback)`. */
export const RESPONSE = 0; // value: the Response (any status)
export const FAILED = 1; // value: the inner fetch's rejection
export const TIMED_OUT = 2; // value: the rejection caused by our per-attempt timeout
export const CALLER_ABORTED = 3; // value: the caller's abort reason; never retried
export const INVALID = 4; // value: the inner fetch's rejection of a request that cannot be made

/** A response's status, read here once for both paths; 0 when it has none (or reading it throws). */
function statusOf(response) {
  try {
    return response !== null && typeof response === 'object' && typeof response.status === 'number' ? response.status : 0;
  } catch {
    return 0;
  }
}

/** Settles an attempt that got `response`: its status and feedback headers go along. */
const answered = (settle, id, response) => settle(id, response, RESPONSE, statusOf(response), feedbackOf(response));

// Attempts in flight under a timeout, and one timer for the earliest of them: a process with
// thousands of calls in flight holds one timer, and none holds the process open once nothing is
// in flight.
const inFlight = new Set();
let timer;
let armedFor = Infinity;
// Node fires a delay above 2^31 - 1 ms after 1 ms; longer waits fire early and re-arm.
const MAX_DELAY_MS = 2147483647;
// Node's timers run on whole milliseconds and may fire up to one early; that counts as due
// (EARLY_MS, the core's).

function arm(due) {
  if (due >= armedFor) {
    // A timer kept from earlier attempts (see `landed`) serves: it fires, finds who is due
    // and re-arms for the rest.
    timer.ref?.();
    return;
  }
  clearTimeout(timer);
  armedFor = due;
  timer = setTimeout(expire, Math.min(Math.max(0, Math.ceil(due - performance.now())), MAX_DELAY_MS));
}

function expire() {
  timer = undefined;
  armedFor = Infinity;
  const now = performance.now();
  let next = Infinity;
  for (const flight of inFlight) {
    if (flight.due <= now + EARLY_MS) {
      inFlight.delete(flight);
      flight.timedOut = true;
      flight.controller.abort(new DOMException('The attempt timed out', 'TimeoutError'));
    } else if (flight.due < next) next = flight.due;
  }
  if (next !== Infinity) arm(next);
}

function landed(flight) {
  if (flight.own !== undefined) return clearTimeout(flight.own);
  inFlight.delete(flight);
  // With nothing in flight the timer is kept but no longer holds the process open (where a timer
  // is an object: Workers' is a number): the next attempt reuses it instead of a setTimeout and a clearTimeout per call.
  if (inFlight.size === 0 && timer !== undefined) timer.unref?.();
}

function abortReason(signal) {
  return signal.reason !== undefined ? signal.reason : new DOMException('This operation was aborted', 'AbortError');
}

/** How a rejection of the inner fetch ended the attempt: the network, or the request itself. */
function failed(input, init) {
  try {
    new Request(input, init); // eslint-disable-line no-new
    return FAILED;
  } catch {
    return INVALID;
  }
}

function call(fetch, input, init) {
  try {
    return Promise.resolve(fetch(input, init));
  } catch (error) {
    return Promise.reject(error);
  }
}

/**
 * Calls `fetch(input, init)` and settles with `settle(id, value, how, status, feedback)`;
 * `status` is the response's, 0 for anything but a response, and `feedback` its feedback
 * headers read in one pass (see `feedbackOf`). With `timeoutMs` 0 the call goes out as it is:
 * no copy of `init`, no timer (`retry: false`). Otherwise it gets a copy of `init` whose signal
 * aborts when the caller's does or after `timeoutMs`, whichever is first.
 */
export function attempt(fetch, input, init, timeoutMs, settle, id) {
  if (timeoutMs === 0) {
    return call(fetch, input, init).then((r) => answered(settle, id, r), (e) => settle(id, e, failed(input, init), 0));
  }
  const caller = callerSignal(input, init);
  if (caller && caller.aborted) return Promise.resolve(caller).then((c) => settle(id, abortReason(c), CALLER_ABORTED, 0));
  const controller = new AbortController();
  /** @type {{ due: number, controller: AbortController, timedOut: boolean, own?: any }} */
  const flight = { due: performance.now() + timeoutMs, controller, timedOut: false };
  if (perRequest()) {
    // Its request's own timer: one armed from another request would end with that request.
    flight.own = setTimeout(() => {
      flight.timedOut = true;
      controller.abort(new DOMException('The attempt timed out', 'TimeoutError'));
    }, Math.min(Math.ceil(timeoutMs), MAX_DELAY_MS));
  } else {
    inFlight.add(flight);
    arm(flight.due);
  }
  const onAbort = () => controller.abort(abortReason(caller));
  if (caller) caller.addEventListener('abort', onAbort);
  const guarded = Object.assign({}, init !== null && typeof init === 'object' ? init : undefined);
  guarded.signal = controller.signal;
  const done = () => {
    landed(flight);
    if (caller) caller.removeEventListener('abort', onAbort);
  };
  return call(fetch, input, guarded).then(
    (response) => {
      done();
      return answered(settle, id, response);
    },
    (error) => {
      done();
      if (caller && caller.aborted) return settle(id, abortReason(caller), CALLER_ABORTED, 0);
      return settle(id, error, flight.timedOut ? TIMED_OUT : failed(input, guarded), 0);
    },
  );
}

/** The driver's way to an attempt (see `attempt`): sent from the call's own request where calls keep to theirs (requests.js). */
export function send(fetch, input, init, timeoutMs, settle, id) {
  inRequestOf(id, () => attempt(fetch, input, init, timeoutMs, settle, id));
}

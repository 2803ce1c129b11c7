// @ts-check
// Runtimes that give each incoming request a context of its own (Cloudflare's workerd) cancel a
// request's timers when it ends, call a request hung when everything it waits for belongs to
// another, and refuse I/O made for one request from another's. The edge entry turns this file on
// (`listen`): then a call that waits keeps a timer of its own request that wakes the gates when
// they are due (so one request's end never strands another's calls), and its attempts are sent
// from its own request, through a promise it awaits (workerd runs a promise's continuations in
// the request that awaited it). Elsewhere nothing here runs.

/** @type {(() => number) | null} Wakes the gates if they are due: ms until they are due next. */
let wake = null;
/** @type {Map<number, { tasks: (() => void)[], post: () => void, timer: any }>} */
const waiting = new Map();
const MAX_DELAY_MS = 2147483647;
const delay = (ms) => Math.min(Math.max(0, Math.ceil(ms)), MAX_DELAY_MS);

/** From now on calls keep to their own requests; `tick` wakes the gates if due and says how long until they are due next. */
export function listen(tick) {
  wake = tick;
}

/** Call `id` waits, from its caller's request: `dueInMs` until the gates wake next. */
export function enroll(id, dueInMs) {
  if (wake === null) return;
  /** @type {{ tasks: (() => void)[], post: () => void, timer: any }} */
  const call = { tasks: [], post: () => {}, timer: undefined };
  // A promise this request awaits; its continuation runs what was posted, in this request,
  // and awaits the next (made inside it, so in this request too).
  const next = () => {
    /** @type {(value?: unknown) => void} */
    let resolve = () => {};
    new Promise((r) => (resolve = r)).then(() => {
      const tasks = call.tasks.splice(0);
      next();
      for (const task of tasks) task();
    });
    call.post = resolve;
  };
  next();
  const tick = () => {
    const left = /** @type {() => number} */ (wake)();
    if (waiting.get(id) === call) call.timer = setTimeout(tick, delay(Number.isFinite(left) ? left : MAX_DELAY_MS));
  };
  call.timer = setTimeout(tick, delay(Number.isFinite(dueInMs) ? dueInMs : MAX_DELAY_MS));
  waiting.set(id, call);
}

/** Call `id` settled: its timer goes. */
export function leave(id) {
  const call = waiting.get(id);
  if (call === undefined) return;
  waiting.delete(id);
  clearTimeout(call.timer);
}

/** Runs `task` for call `id` in the call's own request (at once where it keeps none). */
export function inRequestOf(id, task) {
  const call = waiting.get(id);
  if (call === undefined) return task();
  call.tasks.push(task);
  call.post();
}

/** Whether calls keep to their own requests (see `listen`). */
export const perRequest = () => wake !== null;

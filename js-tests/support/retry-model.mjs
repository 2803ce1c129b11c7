// The article's reference model ("What Happens When Eight Workers Share One Odds API Key?",
// section 2, retry-model.mjs), verbatim: the oracle js-tests/article.test.mjs compares simulate() with.
// Synthetic teaching settings: burst 2, refill 2 requests/second.
class Bucket {
  constructor() {
    this.tokens = 2;
    this.last = 0;
  }
  refill(now) {
    this.tokens = Math.min(2, this.tokens + (now - this.last) / 500);
    this.last = now;
  }
  take(now) {
    this.refill(now);
    if (this.tokens < 1) return false;
    this.tokens--;
    return true;
  }
}
 
export class Gate extends Bucket {
  blockedUntil = 0;
  defer(now, delayMs) {
    if (!Number.isFinite(delayMs) || delayMs < 0) {
      throw new RangeError('A finite, non-negative delay is required');
    }
    this.blockedUntil = Math.max(this.blockedUntil, now + delayMs);
  }
  admitAt(now) {
    if (now < this.blockedUntil) return this.blockedUntil;
    this.refill(now);
    if (this.tokens < 1) return now + Math.ceil((1 - this.tokens) * 500);
    this.tokens--;
    return now;
  }
}
 
export function simulate({
  shared = false,
  separateGates = false,
  alwaysReject = false,
  maxAttempts = 10,
  retryBudget = null,
} = {}) {
  const server = new Bucket();
  const gate = new Gate();
  const twoGates = [new Gate(), new Gate()];
  const queue = [];
  const timeline = [];
  let order = 0, steps = 0, completed = 0, abandoned = 0;
  let retriesLeft = retryBudget;
  const schedule = (at, worker, count) => {
    queue.push({ at, worker, count, order: order++ });
  };
 
  for (let worker = 0; worker < 8; worker++) schedule(0, worker, 0);
 
  while (queue.length) {
    if (++steps > 1000) throw new Error('Scheduler did not terminate');
    queue.sort((a, b) => a.at - b.at || a.order - b.order);
    const { at, worker, count } = queue.shift();
    if (count > 0 && retriesLeft !== null && retriesLeft <= 0) {
      abandoned++;
      continue;
    }
 
    const activeGate = shared ? gate : separateGates ? twoGates[worker % 2] : null;
    if (activeGate) {
      const next = activeGate.admitAt(at);
      if (next > at) {
        schedule(next, worker, count);
        continue;
      }
    }
 
    if (count > 0 && retriesLeft !== null) retriesLeft--;
    const allowed = !alwaysReject && server.take(at);
    timeline.push({ at, worker, status: allowed ? 200 : 429 });
    if (allowed) {
      completed++;
      continue;
    }
    if (count + 1 >= maxAttempts) {
      abandoned++;
      continue;
    }
 
    // The fake server's 429 has Retry-After: 1.
    if (activeGate) activeGate.defer(at, 1000);
    schedule(at + 1000, worker, count + 1);
  }
 
  return {
    attempts: timeline.length,
    rejected: timeline.filter(x => x.status === 429).length,
    completed,
    abandoned,
    lastAttemptMs: timeline.at(-1)?.at ?? 0,
    timeline,
  };
}


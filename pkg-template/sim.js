// simulate() and the article's Gate, from the simulator's own module (sim/), loaded on their
// first use: the fetch wrapper never needs it, and an import of the package never compiles it.
// CommonJS through createRequire reads and compiles it synchronously, so both stay synchronous.
import { createRequire } from 'node:module';

let loaded;
const sim = () => (loaded ??= createRequire(import.meta.url)('./sim/odds_gate_sim.cjs'));

export function simulate(options) {
  return sim().simulate(options);
}

/** The article's gate: the simulator module's `Gate`, behind a class this module can export. */
export class Gate {
  #gate;

  constructor(rate) {
    this.#gate = new (sim().Gate)(rate);
  }

  admitAt(now) {
    return this.#gate.admitAt(now);
  }

  defer(now, delayMs) {
    return this.#gate.defer(now, delayMs);
  }

  get blockedUntil() {
    return this.#gate.blockedUntil;
  }

  free() {
    this.#gate.free();
  }
}

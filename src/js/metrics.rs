//! OpenTelemetry metrics, when `createFetch` is given a `meter`: `metrics.js` makes the
//! instruments on it. Counters and gauges are observed from the wrapper's figures when the
//! meter collects (nothing per call); the two histograms are recorded as things happen, from
//! the gate's events (each admission's wait, each backoff). A wrapper's lanes share its
//! instruments: what is per gate carries the gate's `odds_gate.scope`, what is per call or per
//! lane (the histograms, the queue depth) also the lane's `odds_gate.lane`. The cache's
//! (`odds_gate.cache.*`, as `stats().cache` names them) carry neither: one cache serves the
//! wrapper, its lanes and every credential. A wrapper that spreads its quota also has the
//! spread's gauges (`odds_gate.quota.*`, as `stats().gates[i].quota` names them), per gate.

use wasm_bindgen::prelude::*;

use crate::core::base::histogram::bounds_seconds;
use crate::core::gate::action::{Event, Measured};

#[wasm_bindgen(module = "/src/js/metrics.js")]
extern "C" {
    /// A wrapper's instruments.
    pub type Instruments;
    /// A histogram instrument.
    type Histogram;

    #[wasm_bindgen(catch)]
    fn instruments(
        meter: &JsValue,
        bounds_seconds: &[f64],
        cache: bool,
        spread: bool,
    ) -> Result<Instruments, JsValue>;
    fn attributes(scope: &str, lane: &str) -> JsValue;
    fn observe(instruments: &Instruments, read: &JsValue);

    #[wasm_bindgen(method, getter)]
    fn wait(this: &Instruments) -> Histogram;
    #[wasm_bindgen(method, getter)]
    fn backoff(this: &Instruments) -> Histogram;
    #[wasm_bindgen(method)]
    fn record(this: &Histogram, value: f64, attributes: &JsValue);
}

/// The instruments of one wrapper.
pub struct Metrics {
    instruments: Instruments,
    wait: Histogram,
    backoff: Histogram,
}

impl Metrics {
    /// Makes the instruments on `meter` (a `TypeError` if it is not a Meter), the cache's too
    /// for a wrapper that `caches`, the spread's for one that `spreads`.
    pub fn new(meter: &JsValue, caches: bool, spreads: bool) -> Result<Metrics, JsValue> {
        let instruments = instruments(meter, &bounds_seconds(), caches, spreads)?;
        Ok(Metrics {
            wait: instruments.wait(),
            backoff: instruments.backoff(),
            instruments,
        })
    }

    /// The measurements' attributes for the calls in the lane called `lane` on the gate of
    /// `scope`.
    pub fn attributes(scope: &str, lane: &str) -> JsValue {
        attributes(scope, lane)
    }

    /// Reports the figures `read()` returns (`figures::observed`, or `undefined` once no
    /// wrapper measured here is left) whenever the meter collects. `read` returns a `Result` (`Exported`): a closure
    /// returning a lone JS value is the export shape Node 20's V8 can crash on.
    pub fn observe(&self, read: Closure<dyn Fn() -> super::Exported>) {
        observe(&self.instruments, &read.into_js_value());
    }

    /// Records what `event` measures (the core's `Event::measured`). `attributes` are the
    /// gate's and the lane's.
    pub fn record(&self, event: &Event, attributes: impl FnOnce() -> JsValue) {
        match event.measured() {
            Some(Measured::Wait(s)) => self.wait.record(s, &attributes()),
            Some(Measured::Backoff(s)) => self.backoff.record(s, &attributes()),
            None => {}
        }
    }
}

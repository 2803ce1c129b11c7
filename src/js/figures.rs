//! The wrapper's figures (`stats()`, and what the metrics observe) and configuration summary
//! (`describe()`): the core gathers them in the shapes JavaScript sees (`gates/report.rs`).
//! The figures' many records (the gates, and the metrics' lanes on each gate) cross as numbers
//! in pieces (`base/wire.rs`; `figures.js` builds the objects and makes the gates' times
//! `Date`s): serde-wasm-bindgen's call into JavaScript per field cost 25-45 us a gate. The rest,
//! a few keys, and the summary, one wrapper's, go through serde-wasm-bindgen, times as `Date`s.

use std::rc::Rc;

use wasm_bindgen::prelude::*;

use super::clock;
use super::options::Config;
use super::props::set;
use super::shapes::{to_js, Date};
use super::shared_memory;
use super::Exported;
use crate::core::base::histogram::BOUNDS_MS;
use crate::core::base::wire::Wire;
use crate::core::gates::ids::WrapperId;
use crate::core::gates::report::Setting;
use crate::core::gates::Gates;
use crate::core::rules::cache::CacheFigures;

/// `stats()` of `wrapper`, whose calls wait in the lane called `lane`; for a batch, its time
/// (ms) and retries left; its cache's figures.
pub fn stats(
    gates: &mut Gates,
    wrapper: WrapperId,
    lane: &str,
    extra: (Option<(f64, Option<u32>)>, Option<CacheFigures>),
) -> Exported {
    let (head, listed) = gates.stats(clock::now(), wrapper, lane, extra, wall);
    let stats = to_js(&head);
    let bounds = bin_bounds();
    let gates = crossed(|w| listed.write(w), |all, l, n, t| add_gates(all, l, n, t, &bounds))?;
    set(&stats, "gates", gates.into());
    Ok(stats)
}

/// What the meter observes for the wrappers sharing its instruments (`measured`: a wrapper
/// made with a `meter` and its lanes, with their lanes' names), and their cache's figures.
pub fn observed(
    gates: &mut Gates,
    measured: &[(WrapperId, Rc<str>)],
    cache: Option<CacheFigures>,
) -> Exported {
    let measured = measured.iter().map(|(w, name)| (*w, &**name));
    let (head, listed) = gates.observed(clock::now(), measured, cache, wall);
    let observed = to_js(&head);
    set(&observed, "lanes", crossed(|w| listed.write_lanes(w), add_lanes)?.into());
    let bounds = bin_bounds();
    let gates = crossed(|w| listed.write(w), |all, l, n, t| add_gates(all, l, n, t, &bounds))?;
    set(&observed, "gates", gates.into());
    Ok(observed)
}

#[wasm_bindgen(module = "/src/js/figures.js")]
extern "C" {
    #[wasm_bindgen(js_name = addGates, catch)]
    fn add_gates(
        gates: &js_sys::Array,
        layout: &str,
        numbers: &[f64],
        text: &str,
        bounds: &[f64],
    ) -> Result<(), JsValue>;
    #[wasm_bindgen(js_name = addLanes, catch)]
    fn add_lanes(
        lanes: &js_sys::Array,
        layout: &str,
        numbers: &[f64],
        text: &str,
    ) -> Result<(), JsValue>;
}

/// The records' numbers cross in pieces of about this many (64 KB, some 90 gates): wasm memory
/// holds one piece, not all (91 numbers, 728 bytes, a gate), and a crossing per piece costs
/// nothing that shows.
const PIECE: usize = 8 * 1024;

/// The histograms' bins' upper bounds (ms), the last `Infinity`, for `figures.js` to pair the
/// bins with.
fn bin_bounds() -> Vec<f64> {
    BOUNDS_MS.iter().copied().chain([f64::INFINITY]).collect()
}

/// The records `write` writes (`base/wire.rs`), made objects piece by piece by `add` (a
/// `figures.js` builder) into one array. An error when `figures.js` reads another layout than
/// the core writes (a package built from mismatched sources).
fn crossed(
    write: impl FnOnce(&mut Wire),
    add: impl Fn(&js_sys::Array, &str, &[f64], &str) -> Result<(), JsValue>,
) -> Result<js_sys::Array, JsValue> {
    let all = js_sys::Array::new();
    let mut refused = Ok(());
    let mut sink = |layout: &str, numbers: &[f64], text: &str| {
        if refused.is_ok() {
            refused = add(&all, layout, numbers, text);
        }
    };
    let mut wire = Wire::new(PIECE, &mut sink);
    write(&mut wire);
    wire.finish();
    refused.map(|()| all)
}

/// A time on the gates' clock as the Unix milliseconds `figures.js` makes a `Date` of.
fn wall(at: Option<f64>) -> Option<f64> {
    at.map(clock::to_wall)
}

#[wasm_bindgen(module = "/src/js/summary.js")]
extern "C" {
    fn summary(facts: &JsValue) -> JsValue;
}

/// The checklist's configuration summary: what the next engineer tunes when the provider
/// changes its limits. The core gives the facts; `summary.js` words them.
pub fn describe(config: &Config, gates: &mut Gates, wrapper: WrapperId) -> JsValue {
    let setting = Setting {
        store: config.store.as_deref(),
        threads: config.threads,
        shared_memory: shared_memory::size(),
        metrics: config.metrics.is_some(),
        lane_name: &config.lane_name,
        cache: config.cache.as_ref().map(|c| c.borrow().0.cache().config()),
    };
    match gates.facts(clock::now(), wrapper, setting, Date) {
        Some(facts) => summary(&to_js(&facts)),
        None => JsValue::UNDEFINED,
    }
}

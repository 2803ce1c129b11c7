//! The wrapper's figures (`stats()`, and what the metrics observe) and configuration summary
//! (`describe()`): the core gathers them in the shapes JavaScript sees (`gates/report.rs`).
//! The figures cross as JSON text in pieces (`figures.js` joins and parses them and makes their
//! times `Date`s again): serde-wasm-bindgen's call into JavaScript per field cost 25-45 us a gate. The
//! summary, one wrapper's, goes through serde-wasm-bindgen, times as `Date`s.

use std::rc::Rc;

use wasm_bindgen::prelude::*;

use super::clock;
use super::options::Config;
use super::shapes::{to_js, Date};
use super::shared_memory;
use crate::core::base::histogram::BOUNDS_MS;
use crate::core::base::json::write_json;
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
) -> JsValue {
    figures(&gates.stats(clock::now(), wrapper, lane, extra, wall))
}

/// What the meter observes for the wrappers sharing its instruments (`measured`: a wrapper
/// made with a `meter` and its lanes, with their lanes' names), and their cache's figures.
pub fn observed(
    gates: &mut Gates,
    measured: &[(WrapperId, Rc<str>)],
    cache: Option<CacheFigures>,
) -> JsValue {
    let measured = measured.iter().map(|(w, name)| (*w, &**name));
    figures(&gates.observed(clock::now(), measured, cache, wall))
}

#[wasm_bindgen(module = "/src/js/figures.js")]
extern "C" {
    #[wasm_bindgen(js_name = parseFigures)]
    fn parse_figures(pieces: &js_sys::Array, bounds: &[f64]) -> JsValue;
}

/// The JSON's pieces cross at about this size: wasm memory holds one piece, not the whole text
/// (about 800 bytes a gate), and a crossing per 64 KB costs nothing that shows.
const PIECE: usize = 64 * 1024;

/// `stats()` or the metrics' figures, through JSON text crossing in pieces, histograms' bins as
/// counts (`figures.js` pairs them with their bounds, the last `Infinity`).
fn figures(value: &impl serde::Serialize) -> JsValue {
    let bounds: Vec<f64> = BOUNDS_MS.iter().copied().chain([f64::INFINITY]).collect();
    let pieces = js_sys::Array::new();
    let written = write_json(value, PIECE, &mut |piece| {
        pieces.push(&JsValue::from_str(piece));
    });
    written.map_or(JsValue::NULL, |()| parse_figures(&pieces, &bounds))
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
        cache: config.cache.as_ref().map(|c| c.borrow().0.config()),
    };
    match gates.facts(clock::now(), wrapper, setting, Date) {
        Some(facts) => summary(&to_js(&facts)),
        None => JsValue::UNDEFINED,
    }
}

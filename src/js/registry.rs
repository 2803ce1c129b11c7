//! The process-wide map from credential scope to its one gate: every wrapper in the process
//! that sees the same key draws from the same allowance.

use std::cell::RefCell;
use std::hash::BuildHasherDefault;
use std::rc::Rc;

use wasm_bindgen::JsValue;

use super::clock;
use super::driver::GateDriver;
use super::errors::range_error;
use super::options::Config;
use super::random::OsRandom;
use super::text::number;
use crate::core::budget::RefillingConfig;
use crate::core::config::Rate;
use crate::core::gate::Gate;
use crate::core::map::Map;
use crate::core::scope::Scope;

thread_local! {
    static GATES: RefCell<Map<Scope, Rc<GateDriver>>> =
        const { RefCell::new(Map::with_hasher(BuildHasherDefault::new())) };
}

/// The gate for `scope`, created from `config` on first use. Asking for a different allowance
/// (or shared retry budget, or store) for a scope that already has a gate is an error: two
/// allowances for one key cannot both hold.
pub fn gate_for(scope: &Scope, config: &Config) -> Result<Rc<GateDriver>, JsValue> {
    GATES.with(|gates| {
        let mut gates = gates.borrow_mut();
        if let Some(driver) = gates.get(scope) {
            let existing_store = driver.store().map_or("memory".into(), |s| s.identity());
            let wanted_store = config
                .store
                .as_ref()
                .map_or("memory".into(), |s| s.identity());
            if existing_store != wanted_store {
                return Err(mismatch(
                    scope,
                    &format!("keeps its state in {existing_store}"),
                    &wanted_store,
                    "One credential has one gate: use the same store.",
                ));
            }
            let (rate, budget) = driver.with(|g| (g.rate(), g.budget_config()));
            // A wrapper that does not retry uses no budget and joins any gate; a retrying one
            // brings its budget to a gate that has none, and must agree with one that has.
            match (budget, config.budget) {
                (None, Some(wanted)) => driver.with(|g| g.install_budget(wanted)),
                (Some(has), Some(wanted)) if has != wanted => {
                    return Err(mismatch(
                        scope,
                        &format!("already has {}", budget_text(budget)),
                        &budget_text(config.budget),
                        "Wrappers sharing a credential share its retry budget: configure \
                         `retry.budget` the same way in each.",
                    ));
                }
                _ => {}
            }
            if rate != config.rate {
                return Err(mismatch(
                    scope,
                    &format!("already enforces {}", rate_text(rate)),
                    &rate_text(config.rate),
                    "One credential has one allowance: configure every wrapper that uses it the \
                     same way.",
                ));
            }
            driver.hear(&config.events);
            return Ok(driver.clone());
        }
        let now = clock::now();
        let random = Box::new(OsRandom);
        let gate = match &config.store {
            Some(store) => Gate::shared(config.rate, config.budget, store.settings(), now, random),
            None => Gate::new(config.rate, config.budget, now, random),
        };
        let driver = GateDriver::new(scope.clone(), gate, config.store.clone());
        driver.hear(&config.events);
        gates.insert(scope.clone(), driver.clone());
        Ok(driver)
    })
}

/// "The gate for credential … `has`; this wrapper asks for `wants`. `advice`": one template for
/// every way two wrappers can disagree about a credential's gate.
fn mismatch(scope: &Scope, has: &str, wants: &str, advice: &str) -> JsValue {
    range_error(&format!(
        "The gate for credential {} {has}; this wrapper asks for {wants}. {advice}",
        short(scope)
    ))
}

fn rate_text(rate: Rate) -> String {
    format!(
        "{{ burst: {}, perSecond: {} }}",
        number(rate.burst()),
        number(rate.per_second())
    )
}

/// A scope shortened for messages: enough to tell two keys apart in a log.
pub fn short(scope: &Scope) -> &str {
    let name = scope.as_str();
    name.get(.."key:".len() + 8).unwrap_or(name)
}

fn budget_text(budget: Option<RefillingConfig>) -> String {
    match budget {
        None => "no shared retry budget".into(),
        Some(b) => format!(
            "a retry budget of {} (throttle {}, transient {}, success refill {})",
            number(b.capacity),
            number(b.throttle_cost),
            number(b.transient_cost),
            number(b.success_refill)
        ),
    }
}

//! The process-wide map from credential scope to its one gate: every wrapper in the process
//! that sees the same key draws from the same allowance. A gate that holds nothing worth
//! keeping is forgotten as new gates are made, so a process serving many keys does not grow
//! with every key it has ever seen.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

use wasm_bindgen::JsValue;

use super::clock;
use super::driver::GateDriver;
use super::errors::range_error;
use super::options::Config;
use super::random::OsRandom;
use super::shelf::{self, ShelfSlot};
use super::text::number;
use crate::core::authority::threads::{Settings, ThreadAuthority};
use crate::core::base::map::Map;
use crate::core::gate::Gate;
use crate::core::gates::scope::{Role, Routes, Scope};
use crate::core::rules::allowance::{Allowance, Rate};
use crate::core::rules::budget::RefillingConfig;
use crate::core::rules::learn::Learner;
use crate::core::Millis;

/// Every live gate by scope, and the scopes in the order they are next looked at for eviction.
#[derive(Default)]
struct Registry {
    gates: Map<Scope, Rc<GateDriver>>,
    sweep: VecDeque<Scope>,
    /// Each credential's routes that draw from another limiter bucket than its first.
    routes: Map<Scope, Routes>,
}

thread_local! {
    static GATES: RefCell<Registry> = RefCell::new(Registry::default());
}

/// Gates looked at for eviction each time a gate is made: enough to keep up with any stream of
/// new keys, few enough to cost nothing.
const SWEEP_PER_GATE: usize = 2;

/// The gate for `scope`, created from `config` on first use. Asking for a different allowance
/// (or shared retry budget, or store) for a scope that already has a gate is an error: two
/// allowances for one key cannot both hold.
pub fn gate_for(scope: &Scope, config: &Config) -> Result<Rc<GateDriver>, JsValue> {
    GATES.with(|registry| {
        let mut registry = registry.borrow_mut();
        if let Some(driver) = registry.gates.get(scope) {
            check(scope, driver, config)?;
            driver.hear(&config.events);
            return Ok(driver.clone());
        }
        registry.evict_idle(SWEEP_PER_GATE);
        let now = clock::now();
        let random = Box::new(OsRandom);
        // A learning gate starts from the learner's first allowance (see [`Learner`]).
        let (rate, learn) = match config.rate {
            Allowance::Fixed(rate) => (rate, None),
            Allowance::Learned(ceiling) => (Learner::new(ceiling).rate(now), Some(ceiling)),
        };
        let gate = match &config.store {
            Some(store) => Gate::shared(rate, config.budget, store.settings(), now, random),
            None if config.threads => threaded(scope, config, rate, now)?,
            None => Gate::new(rate, config.budget, now, random),
        };
        let gate = match learn {
            Some(ceiling) => gate.learning(ceiling, now),
            None => gate,
        };
        let driver = GateDriver::new(scope.clone(), gate, config.store.clone());
        driver.hear(&config.events);
        if let (Some(store), Allowance::Learned(_)) = (&config.store, config.rate) {
            driver.recall(store);
        }
        registry.gates.insert(scope.clone(), driver.clone());
        registry.sweep.push_back(scope.clone());
        Ok(driver)
    })
}

/// The scope of the limiter bucket `route` of `credential` draws from, when the responses
/// said it is another than the credential's first.
pub fn routed(credential: &Scope, route: &str) -> Option<Scope> {
    GATES.with(|registry| {
        let registry = registry.borrow();
        let bucket = registry.routes.get(credential)?.bucket(route)?;
        Some(credential.in_bucket(bucket))
    })
}

/// What a new call of `route` of `credential` does (see `Routes::role`). Called per request:
/// the credential is copied only the first time.
pub fn role(credential: &Scope, route: &str) -> Role {
    GATES.with(|registry| {
        let mut registry = registry.borrow_mut();
        if let Some(routes) = registry.routes.get_mut(credential) {
            return routes.role(route);
        }
        let routes = registry.routes.entry(credential.clone()).or_default();
        routes.role(route)
    })
}

/// The scout of `route` of `credential` ended without naming a bucket.
pub fn scout_ended(credential: &Scope, route: &str) {
    GATES.with(|registry| {
        if let Some(routes) = registry.borrow_mut().routes.get_mut(credential) {
            routes.scout_ended(route);
        }
    })
}

/// The first limiter bucket `credential`'s answers named, if its gate heard one.
pub fn first_bucket(credential: &Scope) -> Option<String> {
    GATES.with(|registry| {
        let registry = registry.borrow();
        let driver = registry.gates.get(credential)?;
        driver.with(|g| g.bucket().map(str::to_owned))
    })
}

/// A response to `route` of `credential` came from limiter `bucket`.
pub fn heard_route(credential: &Scope, route: &str, bucket: &str) {
    let first = first_bucket(credential);
    GATES.with(|registry| {
        let mut registry = registry.borrow_mut();
        let routes = registry.routes.entry(credential.clone()).or_default();
        routes.heard(route, bucket, first.as_deref());
    })
}

/// The gate of `scope`, starting at `rate`, in the slot the process's threads share; this
/// thread's own where memory cannot be shared or the shelf has no room. (A learning gate
/// learns once made.)
fn threaded(scope: &Scope, config: &Config, rate: Rate, now: Millis) -> Result<Gate, JsValue> {
    let random = Box::new(OsRandom);
    let offset = shelf::clock_offset();
    let Some(slot) = shelf::current().and_then(|s| ShelfSlot::find(s, scope, offset)) else {
        return Ok(Gate::new(rate, config.budget, now, random).for_threads());
    };
    let settings = Settings {
        rate,
        budget: config.budget,
        learn: matches!(config.rate, Allowance::Learned(_)),
    };
    match ThreadAuthority::join(Box::new(slot), settings, shelf::thread_number(), offset) {
        Ok(authority) => Ok(Gate::threaded(authority, random)),
        Err(held) if held.learn != settings.learn || held.rate != rate => Err(mismatch(
            scope,
            &format!("{} in another thread", held_text(held)),
            &wanted_text(config.rate),
            "One credential has one allowance in the whole process: configure every wrapper \
             in every thread the same way.",
        )),
        Err(held) => Err(mismatch(
            scope,
            &format!("already has {} in another thread", budget_text(held.budget)),
            &budget_text(config.budget),
            "Wrappers sharing a credential share its retry budget in every thread: configure \
             `retry.budget` the same way in each.",
        )),
    }
}

impl Registry {
    /// Looks at up to `n` gates, oldest first, and forgets those that hold nothing worth keeping
    /// (made anew later, a gate starts exactly as they stand). The others go to the back.
    fn evict_idle(&mut self, n: usize) {
        let now = clock::now();
        for _ in 0..n.min(self.sweep.len()) {
            let Some(scope) = self.sweep.pop_front() else {
                return;
            };
            match self.gates.get(&scope) {
                Some(driver) if driver.idle(now) => {
                    if let Some(driver) = self.gates.remove(&scope) {
                        driver.retire(now);
                    }
                }
                Some(_) => self.sweep.push_back(scope),
                None => {}
            }
        }
    }
}

/// Whether `config` agrees with the gate `driver` already is for `scope`; the error says how
/// it does not. A retrying wrapper brings its budget to a gate that has none.
fn check(scope: &Scope, driver: &GateDriver, config: &Config) -> Result<(), JsValue> {
    let existing_store = driver.store().map_or_else(
        || memory(driver.with(|g| g.shared_by_threads())),
        |s| s.identity(),
    );
    let wanted_store = config
        .store
        .as_ref()
        .map_or_else(|| memory(config.threads), |s| s.identity());
    if existing_store != wanted_store {
        return Err(mismatch(
            scope,
            &format!("keeps its state in {existing_store}"),
            &wanted_store,
            "One credential has one gate: use the same store.",
        ));
    }
    let (allowance, budget) = driver.with(|g| (g.allowance(), g.budget_config()));
    // A wrapper that does not retry uses no budget and joins any gate; a retrying one must
    // agree with a gate that has one.
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
    if allowance != config.rate {
        return Err(mismatch(
            scope,
            &format!("already {}", allowance_text(allowance)),
            &wanted_text(config.rate),
            "One credential has one allowance: configure every wrapper that uses it the \
             same way.",
        ));
    }
    Ok(())
}

/// "The gate for credential … `has`; this wrapper asks for `wants`. `advice`": one template for
/// every way two wrappers can disagree about a credential's gate.
fn mismatch(scope: &Scope, has: &str, wants: &str, advice: &str) -> JsValue {
    range_error(&format!(
        "The gate for credential {} {has}; this wrapper asks for {wants}. {advice}",
        short(scope)
    ))
}

/// Where a gate in memory keeps its state, as a mismatch names it.
fn memory(threads: bool) -> String {
    match threads {
        true => "memory shared by the process's threads".into(),
        false => "this thread's memory (threads: false)".into(),
    }
}

/// What a gate does with the allowance, as a mismatch names it ("already ...").
fn allowance_text(allowance: Allowance) -> String {
    match allowance {
        Allowance::Fixed(rate) => format!("enforces {}", rate_text(rate)),
        Allowance::Learned(None) => "learns the allowance".into(),
        Allowance::Learned(Some(rate)) => {
            format!("learns the allowance below {}", rate_text(rate))
        }
    }
}

/// The allowance a wrapper asks for, as a mismatch names it ("asks for ...").
fn wanted_text(allowance: Allowance) -> String {
    match allowance {
        Allowance::Fixed(rate) => rate_text(rate),
        Allowance::Learned(None) => "an allowance learned from the responses (rate: 'auto')".into(),
        Allowance::Learned(Some(rate)) => {
            format!("an allowance learned below {}", rate_text(rate))
        }
    }
}

/// What another thread's gate holds, as a mismatch names it.
fn held_text(held: Settings) -> String {
    match held.learn {
        true => "already learns the allowance".into(),
        false => format!("already enforces {}", rate_text(held.rate)),
    }
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

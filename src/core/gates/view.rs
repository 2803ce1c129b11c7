//! What the gates look like from outside: each gate's figures and state, which gates a
//! wrapper used, and the figures of those since forgotten (for `stats()`, `describe()`, the
//! metrics, the simulator's reports and the tests).

use super::ids::{CallRef, GateId, WrapperId};
use super::memos::MEMOS;
use super::profile::Keeping;
use super::scope::Scope;
use super::{Gates, LaneFigures};
use crate::core::authority::LOW_REMAINING;
use crate::core::gate::figures::{Counts, Figures};
use crate::core::gate::queue::Lane;
use crate::core::gate::Gate;
use crate::core::rules::allowance::Rate;
use crate::core::rules::backoff::Backoff;
use crate::core::rules::budget::RefillingConfig;
use crate::core::rules::fair::LaneId;
use crate::core::rules::learn::Estimate;
use crate::core::rules::learn::BETA;
use crate::core::rules::quota::{asks_account, SUSPICIOUS_RUN};
use crate::core::rules::routes::{route_of, MAX_LIMITERS, MAX_ROUTES};
use crate::core::rules::streak::TOLERATED;
use crate::core::Millis;

/// The numbers the core runs by that `describe()` words, so none is written twice.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize),
    serde(rename_all = "camelCase")
)]
pub(crate) struct Limits {
    /// A `Remaining` below this share of the limit means someone else drains the key.
    pub low_remaining: f64,
    /// Bare 429s in a row that make the quota suspect.
    pub suspicious_run: u32,
    /// Failures of a run tolerated before they hold the gate, once it has had an answer.
    pub failures_tolerated: u32,
    /// The hold after failures, and between quota probes, without a retry policy's backoff.
    pub probe_base_ms: Millis,
    /// Its cap.
    pub probe_cap_ms: Millis,
    /// The share of its pace a learning gate keeps after a 429.
    pub learn_cut: f64,
    /// Routes per credential whose limiter is known.
    pub max_routes: usize,
    /// Gates per credential for limiters beside its own.
    pub max_limiters: usize,
    /// Forgotten gates' estimates kept per thread.
    pub max_remembered: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            low_remaining: LOW_REMAINING,
            suspicious_run: SUSPICIOUS_RUN,
            failures_tolerated: TOLERATED,
            probe_base_ms: Backoff::DEFAULT.base_ms(),
            probe_cap_ms: Backoff::DEFAULT.cap_ms(),
            learn_cut: BETA,
            max_routes: MAX_ROUTES,
            max_limiters: MAX_LIMITERS,
            max_remembered: 2 * MEMOS,
        }
    }
}

/// What a gate looks like now, for `stats()` and `describe()`.
#[derive(Debug, Clone)]
pub struct GateView<'a> {
    /// Its scope.
    pub scope: &'a Scope,
    /// Its figures.
    pub figures: Figures,
    /// Its allowance now (a learning gate's estimate).
    pub rate: Rate,
    /// What it learned, if it learns.
    pub learned: Option<Estimate>,
    /// Where its state lives.
    pub keeping: Keeping,
    /// The process's threads share its state (not so for a key the memory they share had no
    /// room for).
    pub threads: bool,
    /// Store operations sent, failures, and whether the store answers now.
    pub store: Option<(u64, u64, bool)>,
    /// Whether a wake-up is due.
    pub timer_armed: bool,
}

impl Gates {
    /// The gates `wrapper` used, most recently used first.
    pub fn gates_of(&self, wrapper: WrapperId) -> Vec<GateId> {
        let Some(w) = self.wrappers.get(wrapper) else {
            return Vec::new();
        };
        // The heap's own sort (no other sort's code in the module): least recently used first,
        // then reversed.
        let used: std::collections::BinaryHeap<(u64, GateId)> = w
            .gates
            .iter()
            .filter_map(|&g| Some((self.entries.get(g)?.used, g)))
            .collect();
        used.into_sorted_vec()
            .into_iter()
            .rev()
            .map(|(_, g)| g)
            .collect()
    }

    /// `wrapper`'s lane, its admissions, and its calls waiting now (in that lane, on its gates:
    /// lane 0 is every wrapper's own, so its count is theirs together).
    pub fn lane_of(&self, wrapper: WrapperId) -> Option<(Lane, LaneFigures, usize)> {
        let w = self.wrappers.get(wrapper)?;
        let waiting = w
            .gates
            .iter()
            .filter_map(|&g| self.entries.get(g))
            .map(|e| e.gate.waiting_in(w.lane.id))
            .sum();
        Some((w.lane, w.lane_figures, waiting))
    }

    /// Calls waiting on `gate` in `lane`.
    pub(crate) fn waiting_in(&self, gate: GateId, lane: LaneId) -> usize {
        self.entries
            .get(gate)
            .map_or(0, |e| e.gate.waiting_in(lane))
    }

    /// The figures of the gates `wrapper` used that have since been forgotten.
    pub fn retired(&self, wrapper: WrapperId) -> Counts {
        self.wrappers
            .get(wrapper)
            .map(|w| w.retired.clone())
            .unwrap_or_default()
    }

    /// A gate's scope.
    pub(crate) fn scope(&self, gate: GateId) -> Option<&Scope> {
        self.entries.get(gate).map(|e| &e.scope)
    }

    /// The gate `call` is at now (a moved call's new one).
    pub fn gate_of(&self, call: CallRef) -> Option<GateId> {
        self.calls.get(call).map(|placed| placed.gate)
    }

    /// The gate of `scope`, if it has one.
    pub fn find(&self, scope: &Scope) -> Option<GateId> {
        self.scopes.get(scope).copied()
    }

    /// Whether a GET of `url` by `wrapper` with the credential of `scope` would be held at
    /// `now` past a cooldown or for credit the spread has not, or refused for a spent quota,
    /// by the gate it would go to (its route's limiter's, for a learning wrapper that knows
    /// one); no gate yet holds nothing. A cache answers such a call from a stale entry rather
    /// than let it wait or fail.
    pub fn holds(&mut self, now: Millis, wrapper: WrapperId, scope: &Scope, url: &str) -> bool {
        let w = self.wrappers.get(wrapper);
        let (learns, reads) = w.map_or((false, false), |w| {
            (w.profile.learns(), w.profile.reads_routes())
        });
        let reserve = w.is_some_and(|w| w.lane.reserve);
        let route = reads.then(|| route_of("GET", url));
        let limiter = (route.as_deref().filter(|_| learns))
            .and_then(|route| self.routes.get(scope)?.limiter(route).map(str::to_owned))
            .map(|limiter| scope.in_limiter(&limiter));
        let gate = (limiter.and_then(|s| self.find(&s))).or_else(|| self.find(scope));
        let account = asks_account("GET", url);
        let entry = gate.and_then(|g| self.entries.get_mut(g));
        entry.is_some_and(|e| e.gate.holds(now, account, route.as_deref(), reserve))
    }

    /// Where a gate's state lives, its allowance now, and its retry budget's capacity: what a
    /// store operation carries.
    pub(crate) fn keeping(&self, gate: GateId) -> Option<(Keeping, Rate, Option<f64>)> {
        let e = self.entries.get(gate)?;
        let budget = e.gate.budget_config().map(|b| b.capacity);
        Some((e.keeping, e.gate.rate(), budget))
    }

    /// A gate's retry budget settings, if it has a budget.
    pub fn budget(&self, gate: GateId) -> Option<RefillingConfig> {
        self.entries.get(gate)?.gate.budget_config()
    }

    /// A gate's counts so far and its calls waiting, for a wrapper's totals.
    pub(crate) fn counts(&self, gate: GateId) -> Option<(&Counts, usize)> {
        let gate = &self.entries.get(gate)?.gate;
        Some((gate.counts(), gate.waiting()))
    }

    /// What a gate looks like now.
    pub fn view(&mut self, now: Millis, gate: GateId) -> Option<GateView<'_>> {
        let e = self.entries.get_mut(gate)?;
        Some(GateView {
            figures: e.gate.figures(now),
            rate: e.gate.rate(),
            learned: e.gate.learned(now),
            keeping: e.keeping,
            threads: e.gate.shared_by_threads(),
            store: e.gate.store_counts(),
            timer_armed: e.due.is_some(),
            scope: &e.scope,
        })
    }

    /// Gates alive now.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// No gate is alive.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The gate of `scope`, to look at or change directly (tests; what is changed this way is
    /// performed at the next event).
    pub fn gate_mut(&mut self, scope: &Scope) -> Option<&mut Gate> {
        let gate = *self.scopes.get(scope)?;
        self.entries.get_mut(gate).map(|e| &mut *e.gate)
    }
}

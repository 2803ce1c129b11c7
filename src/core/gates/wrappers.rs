//! Wrappers and the gates they make: each wrapper's profile (kept by the wrapper and its
//! batches), its stores, and the gate of a scope, made from the profile on first use or checked
//! against it (see [`compat`](super::compat)).

use super::action::{Action, Refused};
use super::ids::{GateId, WrapperId};
use super::profile::{Keeping, LaneAsks, Profile, StoreId};
use super::scope::{Print, Scope};
use super::{compat, lane_name};
use super::{Entry, Gates, Wrapper, SWEEP_PER_GATE};
use crate::core::authority::threads::{Settings, ThreadAuthority};
use crate::core::base::map::{Map, Set};
use crate::core::base::room::push_one;
use crate::core::base::slab::Mirror;
use crate::core::gate::figures::Counts;
use crate::core::gate::queue::Lane;
use crate::core::gate::store_link::StoreSettings;
use crate::core::gate::Gate;
use crate::core::rules::allowance::Allowance;
use crate::core::rules::learn::Learner;
use crate::core::rules::routes::{MAX_LIMITERS, OVERFLOW};
use crate::core::Millis;

impl Gates {
    /// A number for a store a wrapper brings, known as `identity` (two stores of the same
    /// identity hold the same shared state, so their wrappers may share gates), with its
    /// settings. A gate's operations go through the store of the wrapper that made it.
    pub fn store(&mut self, identity: &str, settings: StoreSettings) -> StoreId {
        self.identities.push(identity.to_owned());
        self.stores.push(settings);
        self.stores.len() - 1
    }

    /// A store's identity.
    pub(crate) fn store_identity(&self, store: StoreId) -> Option<&str> {
        self.identities.get(store).map(String::as_str)
    }

    /// A new wrapper asking for `profile`, retained once (see [`release`](Self::release)). Its
    /// calls wait in the default lane, with every other wrapper's own calls.
    pub fn wrapper(&mut self, profile: Profile) -> WrapperId {
        self.wrapper_in(profile, Lane::default())
    }

    /// A new wrapper whose calls wait in a lane of their own with `weight` (a positive finite
    /// number: the boundary checks it), drawing on the spread's `reserve` if it asks:
    /// `lane()`, on the same gates as the wrapper whose [`Profile::lane`] `profile` is. A
    /// named lane is the lane of that name in every thread and process (and for every wrapper
    /// of this one) that shares the gates; an unnamed one is the one made in the same order.
    pub fn lane(
        &mut self,
        profile: Profile,
        (weight, reserve): (f64, bool),
        name: Option<&str>,
    ) -> WrapperId {
        let id = match name {
            Some(name) => lane_name::id(name),
            None => {
                self.lanes += 1;
                self.lanes
            }
        };
        let lane = Lane {
            id,
            weight,
            reserve,
        };
        self.wrapper_in(profile, lane)
    }

    /// A lane of `parent` (`lane(options)`): its profile the parent's with what `asks` gives
    /// (see [`Profile::lane`]), its `weight`, and its `name` (an unnamed lane's comes from its
    /// number). The new wrapper and its lane's name; `None` when `parent` is gone.
    pub fn lane_of_wrapper(
        &mut self,
        parent: WrapperId,
        asks: LaneAsks,
        weight: f64,
        name: Option<&str>,
    ) -> Option<(WrapperId, String)> {
        let reserve = asks.reserve;
        let profile = self.profile(parent)?.lane(asks);
        let wrapper = self.lane(profile, (weight, reserve), name);
        let named = match name {
            Some(name) => name.to_owned(),
            None => lane_name::unnamed(self.wrappers.get(wrapper)?.lane),
        };
        Some((wrapper, named))
    }

    fn wrapper_in(&mut self, profile: Profile, lane: Lane) -> WrapperId {
        self.wrappers.insert(Wrapper {
            profile,
            lane,
            lane_figures: Default::default(),
            prints: Map::default(),
            gates: Set::default(),
            retired: Counts::default(),
            holders: 1,
        })
    }

    /// One more holder of `wrapper` (a batch shares its wrapper's gates).
    pub fn retain(&mut self, wrapper: WrapperId) {
        if let Some(w) = self.wrappers.get_mut(wrapper) {
            w.holders += 1;
        }
    }

    /// A holder of `wrapper` is gone; with the last, the wrapper is forgotten (the answer is
    /// whether it was).
    pub fn release(&mut self, wrapper: WrapperId) -> bool {
        let last = self.wrappers.get_mut(wrapper).is_some_and(|w| {
            w.holders -= 1;
            w.holders == 0
        });
        if last {
            // Its gates forget it too: a lane made per call must not leave a user behind on
            // its gate with every call (each searched by the next).
            if let Some(w) = self.wrappers.remove(wrapper) {
                for gate in w.gates.iter() {
                    if let Some(entry) = self.entries.get_mut(*gate) {
                        entry.users.retain(|&(user, _)| user != wrapper);
                    }
                }
            }
        }
        last
    }

    /// What `wrapper` asks for.
    pub fn profile(&self, wrapper: WrapperId) -> Option<&Profile> {
        self.wrappers.get(wrapper).map(|w| &w.profile)
    }

    /// Whether memory is shared by the process's threads here.
    pub fn shares_memory(&self) -> bool {
        self.home.shares_memory()
    }

    /// Declares the quota available again on every gate `wrapper` used.
    pub fn reset_quota(&mut self, now: Millis, wrapper: WrapperId) {
        for gate in self.gates_of(wrapper) {
            if let Some(entry) = self.entries.get_mut(gate) {
                entry.gate.reset_quota(now);
                self.touch(gate);
            }
        }
    }

    /// Ends the cooldown on every gate `wrapper` used.
    pub fn clear_cooldown(&mut self, now: Millis, wrapper: WrapperId) {
        for gate in self.gates_of(wrapper) {
            if let Some(entry) = self.entries.get_mut(gate) {
                entry.gate.clear_cooldown(now);
                entry.gate.handle_timeout(now);
                self.touch(gate);
            }
        }
    }

    /// The gate for `scope`, made from `wrapper`'s profile on first use (when `wrapper` knows
    /// the credential by `print`, that is remembered beside it). Asking for a different
    /// allowance, budget or store for a scope that already has a gate is refused.
    pub(super) fn gate_for(
        &mut self,
        now: Millis,
        wrapper: WrapperId,
        scope: &Scope,
        print: Option<Print>,
    ) -> Result<GateId, Refused> {
        let Some(profile) = self.wrappers.get(wrapper).map(|w| w.profile.clone()) else {
            return Err(Refused::Gone);
        };
        if let Some(&gate) = self.scopes.get(scope) {
            if let Some(e) = self.entries.get_mut(gate) {
                compat::check(scope, &mut e.gate, e.keeping, &profile, &self.identities)
                    .map_err(Refused::Mismatch)?;
            }
            self.know(wrapper, gate, print);
            return Ok(gate);
        }
        self.evict_idle(now, SWEEP_PER_GATE);
        let credential = scope.credential();
        let limiter = scope.capped_limiter();
        let made = self.limiters.get(&credential).copied().unwrap_or(0);
        if limiter && made >= MAX_LIMITERS {
            // Past the cap the limiter's calls go to the gate all such limiters share.
            return self.gate_for(now, wrapper, &credential.in_limiter(OVERFLOW), None);
        }
        let mut gate = self.make(now, scope, &profile)?;
        if limiter {
            self.limiters.insert(credential, made + 1);
        } else if credential != *scope {
            // A limiter's scope past the cap: the shared gate.
            gate.assume_limiter(OVERFLOW);
        }
        let gate = self.entries.insert(Entry {
            scope: scope.clone(),
            gate: Box::new(gate),
            keeping: profile.keeping,
            refs: Mirror::default(),
            users: Vec::new(),
            used: self.uses,
            due: None,
            ready: false,
        });
        self.scopes.insert(scope.clone(), gate);
        self.sweep.push_back(gate);
        self.know(wrapper, gate, print);
        if let (Keeping::Store(store), true) = (profile.keeping, profile.learns()) {
            if let Some(entry) = self.entries.get_mut(gate) {
                entry.gate.recall(now);
            }
            let credential = scope.credential();
            self.actions.push_back(Action::Recall {
                gate,
                store,
                credential,
            });
        }
        Ok(gate)
    }

    /// `wrapper` uses `gate` (knowing it by `print`, for a credential's gate).
    pub(super) fn know(&mut self, wrapper: WrapperId, gate: GateId, print: Option<Print>) {
        let Some(entry) = self.entries.get_mut(gate) else {
            return;
        };
        match entry.users.iter_mut().find(|(w, _)| *w == wrapper) {
            Some(user) => user.1 = user.1.or(print),
            // Most gates have one user: room for it alone.
            None => push_one(&mut entry.users, (wrapper, print)),
        }
        if let Some(w) = self.wrappers.get_mut(wrapper) {
            w.gates.insert(gate);
        }
    }

    /// A new gate for `scope` as `profile` asks: in a store, in memory the process's threads
    /// share, or in this thread's; learning if the profile learns, from where the scope's
    /// forgotten gate left off when this thread kept its memo.
    fn make(&mut self, now: Millis, scope: &Scope, profile: &Profile) -> Result<Gate, Refused> {
        let (rate, ceiling) = match profile.allowance {
            Allowance::Fixed(rate) => (rate, None),
            Allowance::Learned(ceiling) => (Learner::new(ceiling).rate(now), Some(ceiling)),
        };
        let random = self.home.random();
        let budget = profile.budget_used();
        let gate = match profile.keeping {
            Keeping::Store(store) => {
                let settings = self.stores[store];
                Gate::shared(rate, budget, settings, now, random)
            }
            Keeping::Memory { threads: true } => {
                let settings = Settings {
                    rate,
                    budget,
                    learn: profile.learns(),
                };
                match self.home.slot(scope) {
                    None if self.home.shares_memory() => {
                        Gate::new(rate, budget, now, random).no_room()
                    }
                    None => Gate::new(rate, budget, now, random),
                    Some(slot) => {
                        let (thread, offset) = (self.home.thread(), self.home.offset());
                        match ThreadAuthority::join(slot, settings, thread, offset) {
                            Ok(authority) => Gate::threaded(authority, random),
                            Err(theirs) => {
                                let mismatch = compat::thread_mismatch(scope, theirs, profile);
                                return Err(Refused::Mismatch(mismatch));
                            }
                        }
                    }
                }
            }
            Keeping::Memory { threads: false } => Gate::new(rate, budget, now, random),
        };
        let mut gate = match ceiling {
            Some(ceiling) => gate.learning(ceiling, now),
            None => gate,
        };
        if let Some((spread, costs)) = &profile.spread {
            gate = gate
                .spreading(*spread, costs.clone())
                .map_err(Refused::Config)?;
        }
        if let Keeping::Memory { .. } = profile.keeping {
            let kept = self.memos.take(scope.print(self.keys)).unwrap_or_default();
            if let Some(memo) = &kept.learned {
                gate.resume_learning(now, memo);
            }
            if let Some(left) = kept.budget_left {
                gate.cap_budget(left);
            }
            if let Some(spending) = kept.spending {
                gate.resume_spending(spending);
            }
        }
        Ok(gate)
    }
}

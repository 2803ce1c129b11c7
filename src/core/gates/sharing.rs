//! What a learning gate tells the fleet through its store, and what a gate made later takes
//! from it (the facts themselves are [`Shared`], in `fleet.rs`).

use super::action::Action;
use super::fleet::Shared;
use super::ids::GateId;
use super::profile::StoreId;
use super::scope::Scope;
use super::Gates;
use crate::core::rules::routes::LimiterFeedback;
use crate::core::Millis;

impl Gates {
    /// Tells the fleet through `store` the allowance `gate` learned.
    pub(super) fn share_learned(&mut self, store: StoreId, gate: GateId) {
        let Some(entry) = self.entries.get(gate) else {
            return;
        };
        let estimate = Shared::Estimate(entry.scope.as_str().into(), entry.gate.rate());
        let credential = entry.scope.credential();
        self.share(store, &credential, vec![estimate]);
    }

    /// Puts `facts` about `credential` (and its first limiter, once known) in `store`.
    pub(super) fn share(&mut self, store: StoreId, credential: &Scope, mut facts: Vec<Shared>) {
        if let Some(first) = self.first_limiter(credential) {
            facts.push(Shared::First(first));
        }
        self.actions.push_back(Action::Share {
            store,
            credential: credential.clone(),
            facts,
        });
    }

    /// The first limiter `credential`'s answers named, if its gate heard one.
    pub(super) fn first_limiter(&self, credential: &Scope) -> Option<String> {
        let gate = self.scopes.get(credential)?;
        self.entries.get(*gate)?.gate.limiter().map(str::to_owned)
    }

    /// What the fleet learned of `gate`'s credential: its first limiter (for the credential's
    /// own gate), the gate's estimate (taken when it has heard no answer of its own), and every
    /// route's limiter.
    pub(crate) fn recalled(&mut self, now: Millis, gate: GateId, facts: Vec<Shared>) {
        let Some(entry) = self.entries.get_mut(gate) else {
            return;
        };
        entry.gate.recalled();
        let credential = entry.scope.credential();
        for fact in &facts {
            match fact {
                Shared::First(limiter) if entry.scope == credential => {
                    entry.gate.assume_limiter(limiter);
                }
                Shared::Estimate(scope, rate) if scope == entry.scope.as_str() => {
                    entry.gate.adopt_estimate(now, *rate);
                }
                _ => {}
            }
        }
        let first = self.first_limiter(&credential);
        let routes = self.routes.entry(credential).or_default();
        for fact in facts {
            if let Shared::Route(route, limiter) = fact {
                let heard = LimiterFeedback::Limiter(limiter);
                routes.heard(&route, &heard, first.as_deref());
            }
        }
        self.touch(gate);
    }
}

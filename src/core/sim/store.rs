//! The simulator's shared store: the store authority standing in for `gate.lua` (one state per
//! gate, made on first use from what the operation carries, following the rate each operation
//! carries as the script does, with the order between the processes' queues), and the learned
//! facts of `learned.lua`, answering after a latency, or not at all while it is down.

use crate::core::authority::store::StoreAuthority;
use crate::core::authority::Op;
use crate::core::base::map::Map;
use crate::core::gate::store_link::StoreReply;
use crate::core::gates::fleet::Shared;
use crate::core::gates::scope::Scope;
use crate::core::rules::allowance::Rate;
use crate::core::rules::budget::RefillingConfig;
use crate::core::Millis;

/// A store every simulated process reaches.
#[derive(Debug, Default)]
pub struct FakeStore {
    /// Each gate's state, by scope.
    pub gates: Map<Scope, StoreAuthority>,
    /// What each credential's learning gates shared.
    pub learned: Map<Scope, Vec<Shared>>,
    /// Milliseconds before each answer.
    pub latency: Millis,
    /// While true, operations get no answer at all.
    pub down: bool,
    /// Operations run (learned facts included).
    pub ops: usize,
}

impl FakeStore {
    /// Runs `op` for process `who`'s gate of `scope` at `now`, with the gate's rate and budget
    /// as the operation carries them, answering with the rate it held before, the fair order
    /// and the shared spread's figures, as the script does; `None` while down.
    pub fn run(
        &mut self,
        now: Millis,
        (scope, who): (&Scope, f64),
        op: &Op,
        rate: Rate,
        budget: Option<RefillingConfig>,
    ) -> Option<StoreReply> {
        self.ops += 1;
        if self.down {
            return None;
        }
        let authority = self
            .gates
            .entry(scope.clone())
            .or_insert_with(|| StoreAuthority::new(rate, budget, now));
        let stored = authority.memory.rate();
        if stored != rate {
            authority.follow(now, rate);
        }
        let answer = authority.apply_for(now, who, rate, op);
        Some(StoreReply {
            answer,
            stored: Some(stored),
            shares: Some(authority.shares()),
            credits: authority.credit_view(now, op),
        })
    }

    /// Puts `facts` about `credential`, each replacing the one it updates.
    pub fn share(&mut self, credential: &Scope, facts: Vec<Shared>) {
        self.ops += 1;
        if self.down {
            return;
        }
        let kept = self.learned.entry(credential.clone()).or_default();
        for fact in facts {
            kept.retain(|k| !same_field(k, &fact));
            kept.push(fact);
        }
    }

    /// What was shared about `credential`; `None` while down.
    pub(crate) fn recall(&mut self, credential: &Scope) -> Option<Vec<Shared>> {
        self.ops += 1;
        (!self.down).then(|| self.learned.get(credential).cloned().unwrap_or_default())
    }
}

/// Whether two facts are about the same thing (the same field of the store's hash).
fn same_field(a: &Shared, b: &Shared) -> bool {
    match (a, b) {
        (Shared::First(_), Shared::First(_)) => true,
        (Shared::Route(x, _), Shared::Route(y, _)) => x == y,
        (Shared::Estimate(x, _), Shared::Estimate(y, _)) => x == y,
        _ => false,
    }
}

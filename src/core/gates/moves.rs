//! Limiters: what a call's answer said of its route's limiter, and the calls that move
//! because of it. A call of a route heard from another limiter goes to that limiter's gate; the
//! calls behind a route's scout go on once it answers (into the queue of the gate it went
//! through, or moved to their limiter's). A moved call is the same call, with the same
//! [`CallRef`](super::CallRef), made when it was made: its `maxWaitMs` counts from then,
//! `maxWaiting` judged it once, and it keeps its place in the call order.

use super::fleet::Shared;
use super::ids::{CallRef, GateId};
use super::profile::Keeping;
use super::Gates;
use crate::core::gate::ids::CallId;
use crate::core::rules::learn::Sample;
use crate::core::rules::routes::LimiterFeedback;
use crate::core::Millis;

impl Gates {
    /// `call` of `gate` heard `heard` of its route's limiter; `answer`, when it drew from
    /// another limiter, teaches that limiter's gate if it has heard nothing yet.
    pub(super) fn routed(
        &mut self,
        now: Millis,
        gate: GateId,
        call: CallId,
        heard: LimiterFeedback,
        answer: Option<Sample>,
    ) {
        let Some(entry) = self.entries.get(gate) else {
            return;
        };
        let Some(&call_ref) = entry.refs.get(call) else {
            return;
        };
        let Some(placed) = self.calls.get(call_ref) else {
            return;
        };
        let (Some(route), wrapper) = (placed.route.clone(), placed.wrapper) else {
            return;
        };
        let credential = entry.scope.credential();
        let keeping = entry.keeping;
        let first = self.first_limiter(&credential);
        let routes = self.routes.entry(credential.clone()).or_default();
        let before = routes.limiter(&route).map(str::to_owned);
        routes.heard(&route, &heard, first.as_deref());
        let target = routes.limiter(&route).map(str::to_owned);
        if let (LimiterFeedback::Limiter(limiter), Keeping::Store(store)) = (&heard, keeping) {
            if before.as_ref() != Some(limiter) && first.as_ref() != Some(limiter) {
                let fact = Shared::Route(route.to_string(), limiter.clone());
                self.share(store, &credential, vec![fact]);
            }
        }
        let target_scope = match &target {
            Some(limiter) => credential.in_limiter(limiter),
            None => credential,
        };
        let target = match (self.scopes.get(&target_scope), wrapper) {
            (Some(&g), _) => Some(g),
            (None, Some(wrapper)) => self.gate_for(now, wrapper, &target_scope, None).ok(),
            (None, None) => None,
        };
        let target = target.filter(|&t| t != gate);
        if let (Some(to), Some(answer)) = (target, answer) {
            if let Some(there) = self.entries.get_mut(to) {
                there.gate.hear(now, &answer);
            }
        }
        // The route's other calls still waiting here, never sent.
        let Some(entry) = self.entries.get(gate) else {
            return;
        };
        let calls = &self.calls;
        let waiting: Vec<(CallId, CallRef)> = entry
            .refs
            .iter()
            .filter(|&(local, r)| {
                local != call
                    && calls
                        .get(*r)
                        .is_some_and(|p| p.route.as_ref() == Some(&route))
            })
            .map(|(local, &r)| (local, r))
            .collect();
        if waiting.is_empty() {
            return;
        }
        for (local, moving) in waiting {
            let Some(entry) = self.entries.get_mut(gate) else {
                return;
            };
            let Some(to) = target else {
                entry.gate.release(now, local);
                continue;
            };
            let Some(taken) = entry.gate.withdraw(local) else {
                continue;
            };
            entry.refs.remove(local);
            self.flush(now, to);
            let Some(there) = self.entries.get_mut(to) else {
                continue;
            };
            let arrived = there.gate.take_in(now, taken);
            there.refs.insert(arrived, moving);
            if let Some(placed) = self.calls.get_mut(moving) {
                placed.gate = to;
                placed.call = arrived;
                if let Some(wrapper) = placed.wrapper {
                    self.know(wrapper, to, None);
                }
            }
        }
        if let Some(to) = target {
            self.touch(to);
        }
    }
}

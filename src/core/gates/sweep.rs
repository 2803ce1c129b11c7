//! Forgetting gates that hold nothing worth keeping, a few at a time as new gates are made, so
//! a process serving many keys does not grow with every key it has seen. A forgotten gate's
//! figures stay in its wrappers' totals; made anew later, it starts exactly as it stood, a
//! learning gate from the estimate its memo kept (in a store, from the fleet's). A credential
//! none of whose gates is left forgets its routes too: its next calls scout again.

use super::action::Action;
use super::memos::Kept;
use super::profile::Keeping;
use super::{Gates, SWEEP_AT_LEAST, SWEEP_EVERY_MS};
use crate::core::gate::early::EARLY_MS;
use crate::core::gate::Gate;
use crate::core::Millis;

impl Gates {
    /// When the next timed sweep is due, if any gate is left: the driver's second timer, one
    /// that must not keep the process alive (an idle process exits with its gates unswept).
    pub fn sweep_timeout(&mut self, now: Millis) -> Option<Millis> {
        if self.sweep.is_empty() {
            self.sweep_due = None;
            self.sweep_round = (0, 0);
            return None;
        }
        Some(*self.sweep_due.get_or_insert(now + SWEEP_EVERY_MS))
    }

    /// The sweep timer fired at `now`: forgets idle gates among a sixth of them (what follows
    /// comes from [`poll_action`](Self::poll_action)). A sixth of those there when the round
    /// of six sweeps began, not of those left: as the idle go, a sixth of the rest would look
    /// at fewer each time, and never reach the last of them within the minute.
    pub(crate) fn handle_sweep(&mut self, now: Millis) {
        if !self.sweep_due.is_some_and(|due| due <= now + EARLY_MS) {
            return;
        }
        self.sweep_due = None;
        let (each, left) = &mut self.sweep_round;
        if *left == 0 {
            (*each, *left) = (0, 6);
        }
        *left -= 1;
        *each = (*each)
            .max(self.sweep.len().div_ceil(6))
            .max(SWEEP_AT_LEAST);
        let n = *each;
        self.evict_idle(now, n);
    }

    /// Looks at up to `n` gates, oldest first, and forgets those that hold nothing worth
    /// keeping. The others go to the back.
    pub(super) fn evict_idle(&mut self, now: Millis, n: usize) {
        for _ in 0..n.min(self.sweep.len()) {
            let Some(gate) = self.sweep.pop_front() else {
                return;
            };
            let Some(entry) = self.entries.get_mut(gate) else {
                continue;
            };
            if entry.due.is_some() || entry.ready || !entry.gate.idle(now) {
                entry.gate.compact();
                entry.users.shrink_to_fit();
                self.sweep.push_back(gate);
                continue;
            }
            let Some(mut entry) = self.entries.remove(gate) else {
                continue;
            };
            self.scopes.remove(&entry.scope);
            if let Keeping::Memory { .. } = entry.keeping {
                let kept = Kept {
                    learned: entry.gate.memo(),
                    budget_left: budget_not_full(&mut entry.gate),
                    spending: entry.gate.take_spending(),
                };
                if kept != Kept::default() {
                    self.memos.put(entry.scope.print(self.keys), kept);
                }
            }
            let credential = entry.scope.credential();
            if entry.scope.capped_limiter() {
                let left = self
                    .limiters
                    .get(&credential)
                    .map_or(0, |n| n.saturating_sub(1));
                if left == 0 {
                    self.limiters.remove(&credential);
                } else {
                    self.limiters.insert(credential.clone(), left);
                }
            }
            let counts = entry.gate.counts();
            for (wrapper, print) in entry.users {
                let Some(w) = self.wrappers.get_mut(wrapper) else {
                    continue;
                };
                if let Some(print) = print {
                    if w.prints.get(&print) == Some(&gate) {
                        w.prints.remove(&print);
                    }
                }
                w.gates.remove(&gate);
                w.retired.absorb(counts);
            }
            if !self.scopes.contains_key(&credential) && !self.limiters.contains_key(&credential) {
                self.routes.remove(&credential);
            }
            self.actions.push_back(Action::Forgotten { gate });
        }
    }
}

/// What is left of `gate`'s retry budget kept in this process, when it is not full.
fn budget_not_full(gate: &mut Gate) -> Option<f64> {
    let capacity = gate.budget_config()?.capacity;
    gate.local_budget_left().filter(|&left| left < capacity)
}

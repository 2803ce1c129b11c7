//! One timer for every gate: each gate's next wake-up is kept in a heap, and the gates' wake-up
//! is the earliest live one. A wake-up that changed before it came is skipped when it comes up.

use std::cmp::Ordering;

use super::{GateId, Gates};
use crate::core::gate::EARLY_MS;
use crate::core::Millis;

/// A gate's wake-up, earliest first in a max-heap.
#[derive(Debug, Clone, Copy)]
pub(super) struct Wake {
    pub(super) at: Millis,
    pub(super) gate: GateId,
}

impl Ord for Wake {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .at
            .total_cmp(&self.at)
            .then(other.gate.cmp(&self.gate))
    }
}
impl PartialOrd for Wake {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl PartialEq for Wake {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Wake {}

impl Gates {
    /// When the gates next need waking, if ever.
    pub fn poll_timeout(&mut self) -> Option<Millis> {
        while let Some(wake) = self.wakes.peek() {
            let due = self.entries.get(wake.gate).and_then(|e| e.due);
            if due == Some(wake.at) {
                return Some(wake.at);
            }
            self.wakes.pop();
        }
        None
    }

    /// The timer fired at `now`: every gate whose wake-up is due handles it (what follows comes
    /// from [`poll_action`](Self::poll_action)).
    pub fn handle_timeout(&mut self, now: Millis) {
        while let Some(&wake) = self.wakes.peek() {
            if wake.at > now + EARLY_MS {
                break;
            }
            self.wakes.pop();
            let Some(entry) = self.entries.get_mut(wake.gate) else {
                continue;
            };
            if entry.due != Some(wake.at) {
                continue;
            }
            entry.due = None;
            self.armed -= 1;
            entry.gate.handle_timeout(now);
            self.touch(wake.gate);
        }
    }

    /// Sets `gate`'s wake-up to what it asks for now.
    pub(super) fn reschedule(&mut self, now: Millis, gate: GateId) {
        let Some(entry) = self.entries.get_mut(gate) else {
            return;
        };
        let due = entry.gate.poll_timeout(now);
        if due == entry.due {
            return;
        }
        match (entry.due, due) {
            (None, Some(_)) => self.armed += 1,
            (Some(_), None) => self.armed -= 1,
            _ => {}
        }
        entry.due = due;
        if let Some(at) = due {
            self.wakes.push(Wake { at, gate });
        }
        if self.wakes.len() > 2 * self.armed + 64 {
            // Wake-ups that changed before they came pile up: keep the live ones.
            let entries = &self.entries;
            self.wakes
                .retain(|w| entries.get(w.gate).is_some_and(|e| e.due == Some(w.at)));
        }
    }
}

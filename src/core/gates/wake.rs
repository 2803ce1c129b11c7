//! One timer for every gate: each gate's next wake-up is kept in a heap, and the gates' wake-up
//! is the earliest live one. A wake-up that changed before it came is skipped when it comes up.

use super::ids::GateId;
use super::Gates;
use crate::core::gate::early::EARLY_MS;
use crate::core::Millis;

impl Gates {
    /// When the gates next need waking, if ever.
    pub fn poll_timeout(&mut self) -> Option<Millis> {
        while let Some((at, &gate)) = self.wakes.peek() {
            let due = self.entries.get(gate).and_then(|e| e.due);
            if due == Some(at) {
                return Some(at);
            }
            self.wakes.pop();
        }
        None
    }

    /// The timer fired at `now`: every gate whose wake-up is due handles it (what follows comes
    /// from [`poll_action`](Self::poll_action)).
    pub fn handle_timeout(&mut self, now: Millis) {
        while let Some((at, &gate)) = self.wakes.peek() {
            if at > now + EARLY_MS {
                break;
            }
            self.wakes.pop();
            let Some(entry) = self.entries.get_mut(gate) else {
                continue;
            };
            if entry.due != Some(at) {
                continue;
            }
            entry.due = None;
            self.armed -= 1;
            entry.gate.handle_timeout(now);
            self.touch(gate);
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
            self.wakes.push(at, gate, gate);
        }
        if self.wakes.len() > 2 * self.armed + 64 {
            // Wake-ups that changed before they came pile up: keep the live ones.
            let entries = &self.entries;
            self.wakes
                .retain(|at, &gate| entries.get(gate).is_some_and(|e| e.due == Some(at)));
        }
    }
}

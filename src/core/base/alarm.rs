//! One timer's state, as the bindings keep it with `setTimeout`: when it is due, whether a new
//! due time needs it armed again, and the delay to arm it with.

use crate::core::Millis;

/// The longest delay `setTimeout` takes (Node treats anything above 2^31 - 1 ms as 1 ms): a
/// longer wait fires early, and is armed again for what is left.
pub const MAX_DELAY_MS: Millis = 2_147_483_647.0;

/// When the timer is due, if it is armed.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Alarm {
    due: Option<Millis>,
}

impl Alarm {
    /// The timer must run at `due` or earlier, on the clock where it is `now`: the delay to arm
    /// it with (whole ms, at most [`MAX_DELAY_MS`]), the caller clearing the one it had; `None`
    /// when the one armed already runs no later, so many waiters cost one timer.
    pub fn arm(&mut self, due: Millis, now: Millis) -> Option<Millis> {
        if self.due.is_some_and(|armed| armed <= due) {
            return None;
        }
        self.due = Some(due);
        // Not `clamp`: its NaN assertion would bring float formatting into the module.
        #[allow(clippy::manual_clamp)]
        Some((due - now).ceil().max(0.0).min(MAX_DELAY_MS))
    }

    /// Nothing is due any more.
    pub fn disarm(&mut self) {
        self.due = None;
    }

    /// The timer ran: when it was due.
    pub fn fired(&mut self) -> Option<Millis> {
        self.due.take()
    }

    /// How long from `now` until it is due (0 once due); `None` when nothing is. For a waiter
    /// that keeps a timer of its own beside this one (a request's, in workerd).
    pub fn left(&self, now: Millis) -> Option<Millis> {
        self.due.map(|due| (due - now).max(0.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_left_is_the_wait_until_due_and_nothing_once_disarmed() {
        let mut alarm = Alarm::default();
        assert_eq!(alarm.left(0.0), None);
        alarm.arm(250.0, 100.0);
        assert_eq!(alarm.left(100.0), Some(150.0));
        assert_eq!(alarm.left(300.0), Some(0.0), "due: no wait");
        alarm.disarm();
        assert_eq!(alarm.left(300.0), None);
    }

    #[test]
    fn one_timer_for_many_waiters_armed_again_only_for_an_earlier_due() {
        let mut alarm = Alarm::default();
        assert_eq!(alarm.arm(100.4, 0.0), Some(101.0));
        assert_eq!(alarm.arm(200.0, 10.0), None, "the armed one runs earlier");
        assert_eq!(alarm.arm(100.4, 10.0), None, "at the same time");
        assert_eq!(alarm.arm(50.0, 60.0), Some(0.0), "already due: at once");
        assert_eq!(alarm.fired(), Some(50.0));
        assert_eq!(
            alarm.arm(1e12, 0.0),
            Some(MAX_DELAY_MS),
            "re-armed when it fires early"
        );
        alarm.disarm();
        assert_eq!(alarm.fired(), None);
        assert_eq!(alarm.arm(5.0, 0.0), Some(5.0));
    }
}

//! Failures in a row hold the whole gate, not one call. While the server fails (a 5xx, a fetch
//! that rejects, an attempt that times out), every call the gate lets go meets the same
//! failure, and each call's own backoff spaces only that call: the others, and new calls, keep
//! the server busy with requests that fail (and spend their attempts and the retry budget). So
//! the gate backs off as one caller would, with full jitter: the n-th failure of a run that
//! holds the gate holds it for `uniform(0, min(cap, base * 2^(n-1)))` (the server's
//! `Retry-After` instead, when it gave one). Any answer that is not a failure ends the run (a
//! 429 too: the server is up; its pace is the learner's and the cooldown's business).
//!
//! Before the server's first answer, every failure holds: nothing says the server is up. Once
//! it has answered, the first `TOLERATED` failures in a row hold nothing, so a server that
//! fails now and then costs no hold: where one answer in 7 is a 503 at random, two come in a
//! row every 49 requests, and holding from the second slowed 128 calls at 5/s from 1.09 to
//! 1.15 times the allowance's floor learning (1.23 to 1.30 at the fixed rate) on the virtual
//! clock; from the third, 1.10 (1.22), while a server down for 3 s still got 8 requests
//! instead of 15 (`tests/learn_matrix.rs`).

use crate::core::Millis;

/// Failures in a row, once the server has answered, that hold nothing.
pub(crate) const TOLERATED: u32 = 2;

/// A gate's run of failures.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Streak {
    /// Failures in a row, each of a request sent after the one before it came back.
    run: u32,
    /// When the run's last failure came.
    last: Millis,
    /// Failures in a row that hold nothing: none until the server's first answer.
    tolerated: u32,
}

impl Default for Streak {
    fn default() -> Self {
        Streak {
            run: 0,
            last: f64::NEG_INFINITY,
            tolerated: 0,
        }
    }
}

impl Streak {
    /// An attempt sent at `sent` failed at `now`. When it holds the gate, its place among the
    /// run's failures that hold (1 for the first). A failure of a request sent before the
    /// run's last failure came back is that same failure heard again: it neither lengthens
    /// the run nor holds.
    pub(crate) fn failed(&mut self, now: Millis, sent: Millis) -> Option<u32> {
        if sent < self.last {
            return None;
        }
        self.run += 1;
        self.last = now;
        self.run.checked_sub(self.tolerated).filter(|&n| n > 0)
    }

    /// Another thread or process of the allowance heard the server answer (a learning gate
    /// took their estimate): a failure here is no longer all there is to know of the server.
    pub(crate) fn answered_elsewhere(&mut self) {
        self.tolerated = TOLERATED;
    }

    /// The server answered (anything but a failure): the run is over.
    pub(crate) fn answered(&mut self) {
        *self = Streak {
            tolerated: TOLERATED,
            ..Streak::default()
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn before_any_answer_every_failure_holds() {
        let mut s = Streak::default();
        assert_eq!(s.failed(20.0, 0.0), Some(1));
        assert_eq!(s.failed(60.0, 40.0), Some(2));
    }

    #[test]
    fn once_answered_only_a_run_holds_and_an_answer_ends_it() {
        let mut s = Streak::default();
        s.answered();
        assert_eq!(s.failed(20.0, 0.0), None);
        assert_eq!(s.failed(60.0, 40.0), None);
        assert_eq!(s.failed(90.0, 70.0), Some(1), "the third in a row");
        assert_eq!(s.failed(120.0, 100.0), Some(2));
        s.answered();
        assert_eq!(s.failed(150.0, 130.0), None, "an answer ends the run");
    }

    #[test]
    fn an_answer_heard_elsewhere_tolerates_failures_but_ends_no_run() {
        let mut s = Streak::default();
        assert_eq!(s.failed(20.0, 0.0), Some(1));
        s.answered_elsewhere();
        assert_eq!(s.failed(60.0, 40.0), None, "the second in a row");
        assert_eq!(s.failed(90.0, 70.0), Some(1));
    }

    #[test]
    fn failures_of_requests_sent_before_the_last_one_came_are_that_same_failure() {
        let mut s = Streak::default();
        // Two requests out together, both failing: one failure of the server, not two.
        assert_eq!(s.failed(20.0, 0.0), Some(1));
        assert_eq!(s.failed(21.0, 0.0), None);
        // Sent once the failure was heard: the next in the run.
        assert_eq!(s.failed(50.0, 20.0), Some(2));
    }
}

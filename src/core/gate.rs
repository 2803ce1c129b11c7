//! The gate: one token bucket plus one cooldown deadline, and the line of callers waiting for
//! them. It decides and remembers; it never sleeps. The caller asks, and when told "come back
//! at t" arranges one wake-up for the whole line, not one per waiter.

use std::collections::VecDeque;

use super::bucket::TokenBucket;
use super::config::{at_least, ConfigError, Rate};
use super::feedback::Feedback;
use super::Millis;

/// A place in the gate's line. Tickets are issued in increasing order, so the line is sorted by
/// ticket and a cancelled one is found by binary search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ticket(u64);

impl Ticket {
    /// The ticket's number, for maps keyed by it.
    pub fn id(self) -> u64 {
        self.0
    }
}

/// The answer to "may I go?".
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Admission {
    /// Go now; a token has been spent.
    Now,
    /// Wait in line with this ticket; the gate next needs waking at `wake_at`.
    Wait {
        /// The waiter's place in line.
        ticket: Ticket,
        /// When the gate next needs waking.
        wake_at: Millis,
    },
}

/// Live figures, for people and dashboards.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Figures {
    /// Calls let through (each spent one token).
    pub admitted: u64,
    /// Calls currently in line.
    pub waiting: usize,
    /// The most calls ever in line at once.
    pub peak_waiting: usize,
    /// Waiters that left the line without being admitted (aborted).
    pub cancelled: u64,
    /// Throttled responses (429) observed.
    pub throttled: u64,
    /// Times the line was polled on a wake-up.
    pub wakeups: u64,
    /// No admission before this time; 0 when never deferred.
    pub cooldown_until: Millis,
    /// The headers of the last throttled response.
    pub last_feedback: Option<Feedback>,
}

/// A token bucket behind a cooldown, with a FIFO line of waiters.
#[derive(Debug, Clone)]
pub struct Gate {
    bucket: TokenBucket,
    blocked_until: Millis,
    line: VecDeque<Ticket>,
    next_ticket: u64,
    figures: Figures,
}

impl Gate {
    /// A gate with a full bucket whose clock starts at `now`.
    pub fn new(rate: Rate, now: Millis) -> Self {
        Gate {
            bucket: TokenBucket::new(rate, now),
            blocked_until: 0.0,
            line: VecDeque::new(),
            next_ticket: 0,
            figures: Figures::default(),
        }
    }

    /// The allowance this gate enforces.
    pub fn rate(&self) -> Rate {
        self.bucket.rate()
    }

    /// No admission happens before this time.
    pub fn blocked_until(&self) -> Millis {
        self.blocked_until
    }

    /// Admits at `now` (spending a token) and returns `now`, or returns the earliest time worth
    /// coming back, spending nothing. The cooldown is checked first, so after a cooldown only
    /// the burst goes at once and the rest wait for tokens.
    pub fn admit_at(&mut self, now: Millis) -> Millis {
        if now >= self.blocked_until && self.bucket.take(now) {
            self.figures.admitted += 1;
            return now;
        }
        self.earliest(now)
    }

    /// When the next admission can happen, without spending anything.
    fn earliest(&mut self, now: Millis) -> Millis {
        self.blocked_until.max(self.bucket.ready_at(now))
    }

    /// Holds every admission until `now + delay_ms`. A later, shorter delay never moves an
    /// existing deadline earlier.
    pub fn defer(&mut self, now: Millis, delay_ms: Millis) -> Result<(), ConfigError> {
        let delay_ms = at_least("delayMs", delay_ms, 0.0, "a finite number >= 0")?;
        self.blocked_until = self.blocked_until.max(now + delay_ms);
        self.figures.cooldown_until = self.blocked_until;
        Ok(())
    }

    /// Records a throttled response and sets the cooldown it asks for, if any. A response whose
    /// `Retry-After` could not be honoured is recorded with `retry_after_ms: None`.
    pub fn observe_throttle(&mut self, now: Millis, feedback: Feedback) {
        self.figures.throttled += 1;
        if let Some(delay) = feedback.retry_after_ms {
            // Parsed feedback is finite and non-negative, so this cannot fail.
            let _ = self.defer(now, delay);
        }
        self.figures.last_feedback = Some(feedback);
    }

    /// Asks to go at `now`. Nobody jumps the line: while anyone waits, a newcomer waits too.
    pub fn request(&mut self, now: Millis) -> Admission {
        if self.line.is_empty() && self.admit_at(now) == now {
            return Admission::Now;
        }
        let ticket = Ticket(self.next_ticket);
        self.next_ticket += 1;
        self.line.push_back(ticket);
        self.figures.peak_waiting = self.figures.peak_waiting.max(self.line.len());
        let wake_at = self.earliest(now);
        Admission::Wait { ticket, wake_at }
    }

    /// Takes a waiter out of line without admitting it. Returns false when the ticket is not in
    /// line (already admitted or cancelled).
    pub fn cancel(&mut self, ticket: Ticket) -> bool {
        match self.line.binary_search(&ticket) {
            Ok(index) => {
                self.line.remove(index);
                self.figures.cancelled += 1;
                true
            }
            Err(_) => false,
        }
    }

    /// Admits waiters from the head of the line while the gate allows, appending their tickets
    /// to `admitted`. Returns when the gate next needs waking, or `None` when nobody waits.
    pub fn poll(&mut self, now: Millis, admitted: &mut Vec<Ticket>) -> Option<Millis> {
        self.figures.wakeups += 1;
        while let Some(&head) = self.line.front() {
            let at = self.admit_at(now);
            if at > now {
                return Some(at);
            }
            self.line.pop_front();
            admitted.push(head);
        }
        None
    }

    /// Calls in line right now.
    pub fn waiting(&self) -> usize {
        self.line.len()
    }

    /// A snapshot of the live figures.
    pub fn figures(&self) -> Figures {
        Figures {
            waiting: self.line.len(),
            ..self.figures.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn article_gate() -> Gate {
        Gate::new(Rate::new(2.0, 2.0).unwrap(), 0.0)
    }

    #[test]
    fn admits_the_burst_then_says_when_to_come_back() {
        let mut g = article_gate();
        assert_eq!(g.admit_at(0.0), 0.0);
        assert_eq!(g.admit_at(0.0), 0.0);
        assert_eq!(g.admit_at(0.0), 500.0);
        assert_eq!(g.admit_at(0.0), 500.0, "come back at t spends no token");
        assert_eq!(g.admit_at(500.0), 500.0);
        assert_eq!(g.figures().admitted, 3);
    }

    #[test]
    fn cooldown_holds_everyone_then_only_the_burst_goes() {
        let mut g = article_gate();
        g.defer(0.0, 2000.0).unwrap();
        assert!((0..8).all(|_| g.admit_at(1999.0) == 2000.0));
        let resumed: Vec<Millis> = (0..8).map(|_| g.admit_at(2000.0)).collect();
        assert_eq!(resumed.iter().filter(|&&t| t == 2000.0).count(), 2);
        assert_eq!(resumed.iter().filter(|&&t| t > 2000.0).count(), 6);
    }

    #[test]
    fn a_later_shorter_delay_never_shortens_the_cooldown() {
        let mut g = article_gate();
        g.defer(0.0, 5000.0).unwrap();
        g.defer(100.0, 1000.0).unwrap();
        assert_eq!(g.blocked_until(), 5000.0);
        g.defer(1000.0, 8000.0).unwrap();
        assert_eq!(g.blocked_until(), 9000.0);
    }

    #[test]
    fn defer_refuses_a_negative_or_non_finite_delay() {
        let mut g = article_gate();
        for bad in [-1.0, f64::NAN, f64::INFINITY] {
            let err = g.defer(0.0, bad).unwrap_err();
            assert!(err.to_string().contains("delayMs"));
        }
        assert_eq!(g.blocked_until(), 0.0);
    }

    #[test]
    fn waiters_go_in_arrival_order_with_one_wake_up_each_refill() {
        let mut g = article_gate();
        assert_eq!(g.request(0.0), Admission::Now);
        assert_eq!(g.request(0.0), Admission::Now);
        let tickets: Vec<Ticket> = (0..4)
            .map(|_| match g.request(0.0) {
                Admission::Wait { ticket, wake_at } => {
                    assert_eq!(wake_at, 500.0);
                    ticket
                }
                Admission::Now => panic!("the burst is spent"),
            })
            .collect();
        let mut admitted = Vec::new();
        assert_eq!(g.poll(499.0, &mut admitted), Some(500.0));
        assert!(admitted.is_empty());
        assert_eq!(g.poll(500.0, &mut admitted), Some(1000.0));
        assert_eq!(g.poll(1500.0, &mut admitted), Some(2000.0));
        assert_eq!(g.poll(2000.0, &mut admitted), None);
        assert_eq!(admitted, tickets);
    }

    #[test]
    fn a_newcomer_never_jumps_the_line() {
        let mut g = article_gate();
        g.request(0.0);
        g.request(0.0);
        let Admission::Wait { ticket: first, .. } = g.request(0.0) else {
            panic!("should wait")
        };
        // At 500 a token is there, but the waiter ahead of the newcomer gets it.
        assert!(matches!(g.request(500.0), Admission::Wait { .. }));
        let mut admitted = Vec::new();
        g.poll(500.0, &mut admitted);
        assert_eq!(admitted, vec![first]);
    }

    #[test]
    fn a_cancelled_waiter_spends_nothing_and_leaves_the_line() {
        let mut g = article_gate();
        g.request(0.0);
        g.request(0.0);
        let Admission::Wait { ticket: a, .. } = g.request(0.0) else {
            panic!()
        };
        let Admission::Wait { ticket: b, .. } = g.request(0.0) else {
            panic!()
        };
        assert!(g.cancel(a));
        assert!(!g.cancel(a));
        let mut admitted = Vec::new();
        assert_eq!(g.poll(500.0, &mut admitted), None);
        assert_eq!(admitted, vec![b]);
        assert_eq!(g.figures().cancelled, 1);
        assert_eq!(g.figures().admitted, 3);
    }

    #[test]
    fn the_wake_up_after_a_cooldown_waits_for_both_cooldown_and_token() {
        let mut g = article_gate();
        g.request(0.0);
        g.request(0.0);
        g.defer(0.0, 200.0).unwrap();
        // Cooldown ends at 200 but the next token only at 500: one wake-up, at 500.
        assert!(matches!(
            g.request(0.0),
            Admission::Wait { wake_at, .. } if wake_at == 500.0
        ));
    }

    #[test]
    fn a_throttle_sets_the_servers_cooldown_and_is_recorded() {
        let mut g = article_gate();
        let feedback = Feedback {
            retry_after_ms: Some(30_000.0),
            ..Feedback::default()
        };
        g.observe_throttle(100.0, feedback.clone());
        assert_eq!(g.admit_at(10_000.0), 30_100.0);
        let figures = g.figures();
        assert_eq!(figures.throttled, 1);
        assert_eq!(figures.cooldown_until, 30_100.0);
        assert_eq!(figures.last_feedback, Some(feedback));
    }

    #[test]
    fn a_throttle_without_retry_after_sets_no_cooldown() {
        let mut g = article_gate();
        g.observe_throttle(100.0, Feedback::default());
        assert_eq!(g.blocked_until(), 0.0);
        assert_eq!(g.admit_at(100.0), 100.0);
    }
}

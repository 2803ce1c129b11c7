//! The gate: one token bucket plus one cooldown deadline, the line of callers waiting for them,
//! and what the gate has learnt from responses (quota, pacing, the shared retry budget). It
//! decides and remembers; it never sleeps. The caller asks, and when told "come back at t"
//! arranges one wake-up for the whole line, not one per waiter.

use std::collections::VecDeque;

use super::bucket::TokenBucket;
use super::budget::{RefillingBudget, RefillingConfig};
use super::classify::Outcome;
use super::config::{at_least, ConfigError, Rate};
use super::feedback::{honours_retry_after, Feedback};
use super::histogram::Histogram;
use super::policy::Reason;
use super::quota::{QuotaState, QuotaWatch, Usage};
use super::Millis;

/// Below this share of `X-RateLimit-Limit` left, a gate that sees the key drained by someone
/// else refills at half rate.
const LOW_REMAINING: f64 = 0.1;

/// A place in the gate's line. Tickets are issued in increasing order, so the line is sorted by
/// ticket and a cancelled one is found by binary search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ticket(u64);

impl Ticket {
    /// The ticket's number, for maps keyed by it.
    pub fn id(self) -> u64 {
        self.0
    }

    /// The ticket with this number (as kept in a map).
    pub fn from_id(id: u64) -> Ticket {
        Ticket(id)
    }
}

/// The answer to "may I go?".
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Admission {
    /// Go now; a token has been spent. Report the response with [`Gate::responded`].
    Now {
        /// The admitted call's ticket.
        ticket: Ticket,
    },
    /// Wait in line with this ticket; the gate next needs waking at `wake_at`.
    Wait {
        /// The waiter's place in line.
        ticket: Ticket,
        /// When the gate next needs waking.
        wake_at: Millis,
    },
    /// Admission is predicted after the deadline: give up now, before anything is sent.
    Late {
        /// The predicted admission time.
        predicted: Millis,
    },
    /// The monthly quota is spent.
    Exhausted {
        /// When the period ends, on the gate's clock, if known.
        until: Option<Millis>,
    },
}

/// What a response taught the gate.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Observed {
    /// Waiters the new cooldown made hopeless, out of line now.
    pub expired: Vec<Ticket>,
    /// The cooldown the response asked for, to share with other processes.
    pub hold_ms: Option<Millis>,
}

/// What a wake-up did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Wakeup {
    /// Waiters admitted, in line order.
    pub admitted: Vec<Ticket>,
    /// Waiters whose deadline passed before they could be admitted.
    pub expired: Vec<Ticket>,
    /// When the gate next needs waking; `None` when nobody waits.
    pub next: Option<Millis>,
}

/// Retries counted by what caused them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RetryCounts {
    /// After a 429.
    pub throttled: u64,
    /// After a 5xx.
    pub server_error: u64,
    /// After a network failure.
    pub network: u64,
    /// After our per-attempt timeout.
    pub timeout: u64,
}

/// Live figures, for people and dashboards.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Figures {
    /// Admission requests (first attempts and retries).
    pub requests: u64,
    /// Calls let through (each spent one token).
    pub admitted: u64,
    /// Calls currently in line.
    pub waiting: usize,
    /// The most calls ever in line at once.
    pub peak_waiting: usize,
    /// Waiters that left the line without being admitted (aborted).
    pub cancelled: u64,
    /// Waiters whose deadline came before their turn.
    pub expired: u64,
    /// Throttled responses (429) observed.
    pub throttled: u64,
    /// Times the line was polled on a wake-up.
    pub wakeups: u64,
    /// No admission before this time; 0 when never deferred.
    pub cooldown_until: Millis,
    /// Refilling at half rate because the server says the key is nearly spent.
    pub slow: bool,
    /// The headers of the last throttled response.
    pub last_feedback: Option<Feedback>,
    /// Retries by cause.
    pub retries: RetryCounts,
    /// Calls given up, by [`Reason`] in the order of [`Reason::ALL`].
    pub abandoned: [u64; 6],
    /// Calls rejected because the quota is spent.
    pub quota_rejected: u64,
    /// The quota as the gate sees it.
    pub quota: Option<QuotaState>,
    /// Time from asking to admission, for calls that waited or not.
    pub admission_wait: Histogram,
    /// Backoff delays chosen (without `Retry-After`).
    pub backoff: Histogram,
    /// Tokens left in the shared retry budget, when there is one.
    pub retry_budget: Option<f64>,
}

#[derive(Debug, Clone, Copy)]
struct Waiter {
    ticket: Ticket,
    deadline: Millis,
}

/// A token bucket behind a cooldown, with a FIFO line of waiters.
#[derive(Debug, Clone)]
pub struct Gate {
    bucket: TokenBucket,
    blocked_until: Millis,
    line: VecDeque<Waiter>,
    next_ticket: u64,
    anchor: Option<Ticket>,
    quota: QuotaWatch,
    budget: Option<RefillingBudget>,
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
            anchor: None,
            quota: QuotaWatch::default(),
            budget: None,
            figures: Figures::default(),
        }
    }

    /// Gives the gate a shared, refilling retry budget.
    pub fn with_budget(mut self, config: Option<RefillingConfig>) -> Self {
        self.budget = config.map(RefillingBudget::new);
        self
    }

    /// Gives a gate without a retry budget this one (a gate never changes a budget it has).
    pub fn install_budget(&mut self, config: RefillingConfig) {
        if self.budget.is_none() {
            self.budget = Some(RefillingBudget::new(config));
        }
    }

    /// The allowance this gate enforces.
    pub fn rate(&self) -> Rate {
        self.bucket.rate()
    }

    /// The shared retry budget's settings, if it has one.
    pub fn budget_config(&self) -> Option<RefillingConfig> {
        self.budget.as_ref().map(RefillingBudget::config)
    }

    /// The shared retry budget, for a retry decision.
    pub fn budget_mut(&mut self) -> Option<&mut RefillingBudget> {
        self.budget.as_mut()
    }

    /// No admission happens before this time.
    pub fn blocked_until(&self) -> Millis {
        self.blocked_until
    }

    /// Admits at `now` (spending a token) and returns `now`, or returns the earliest time worth
    /// coming back, spending nothing. The cooldown is checked first, so after a cooldown only
    /// the burst goes at once and the rest wait for tokens. (The article's model; the live path
    /// is [`request`](Self::request).)
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

    /// When a caller with `ahead` others in front of it would be admitted if nothing changed.
    pub fn predict(&mut self, now: Millis, ahead: usize) -> Millis {
        self.blocked_until.max(self.bucket.nth_ready_at(now, ahead))
    }

    /// Holds every admission until `now + delay_ms`. A later, shorter delay never moves an
    /// existing deadline earlier.
    pub fn defer(&mut self, now: Millis, delay_ms: Millis) -> Result<(), ConfigError> {
        let delay_ms = at_least("delayMs", delay_ms, 0.0, "a finite number >= 0")?;
        self.blocked_until = self.blocked_until.max(now + delay_ms);
        self.figures.cooldown_until = self.blocked_until;
        Ok(())
    }

    /// As [`defer`](Self::defer) for the live gate: also takes out of line, and returns, the
    /// waiters that can no longer be admitted before their deadline.
    fn hold(&mut self, now: Millis, delay_ms: Millis) -> Vec<Ticket> {
        // Parsed feedback is finite and non-negative, so this cannot fail.
        let _ = self.defer(now, delay_ms);
        self.expire_hopeless(now)
    }

    fn expire_hopeless(&mut self, now: Millis) -> Vec<Ticket> {
        let mut expired = Vec::new();
        let mut kept = VecDeque::with_capacity(self.line.len());
        for waiter in std::mem::take(&mut self.line) {
            if self.predict(now, kept.len()) > waiter.deadline {
                expired.push(waiter.ticket);
            } else {
                kept.push_back(waiter);
            }
        }
        self.line = kept;
        self.figures.expired += expired.len() as u64;
        expired
    }

    /// Learns from a response: a `Retry-After` on a 429 or 503 becomes the shared cooldown;
    /// `X-RateLimit-Remaining` (or the IETF `RateLimit`) lowers the gate's own count when the
    /// server knows of less, and under 10% of the limit, with the key drained by someone else,
    /// halves the refill rate until it recovers; nothing left with a reset time holds the gate
    /// until the reset.
    pub fn observe(&mut self, now: Millis, status: u16, feedback: Feedback) -> Observed {
        let mut hold_ms = None;
        if honours_retry_after(status) {
            hold_ms = feedback.retry_after_ms;
        }
        if let (Some(limit), Some(remaining)) = (feedback.limit, feedback.remaining) {
            let remaining = remaining as f64;
            let ours = self.bucket.tokens(now);
            let drained_by_others = ours > remaining + 1.0;
            if drained_by_others {
                self.bucket.at_most(now, remaining + 1.0);
            }
            let low = remaining < LOW_REMAINING * limit as f64;
            if low && drained_by_others || !low && self.bucket.is_slow() {
                self.bucket.set_slow(now, low);
                self.figures.slow = low;
            }
            if remaining == 0.0 {
                if let Some(reset) = feedback.reset_ms {
                    hold_ms = Some(hold_ms.map_or(reset, |ms: Millis| ms.max(reset)));
                }
            }
        }
        if status == 429 {
            self.figures.throttled += 1;
            self.figures.last_feedback = Some(feedback);
        }
        let expired = match hold_ms {
            Some(delay) => self.hold(now, delay),
            None => Vec::new(),
        };
        Observed { expired, hold_ms }
    }

    /// Asks to go at `now`, for a call that must be admitted by `deadline`. Nobody jumps the
    /// line: while anyone waits, a newcomer waits too.
    pub fn request(&mut self, now: Millis, deadline: Millis) -> Admission {
        if let QuotaState::Exhausted { until } = self.quota.state(now) {
            self.figures.quota_rejected += 1;
            return Admission::Exhausted { until };
        }
        self.figures.requests += 1;
        if self.line.is_empty() && now >= self.blocked_until {
            if let Some(anchor) = self.bucket.take_anchored(now) {
                let ticket = self.issue();
                self.admitted(ticket, anchor, 0.0);
                return Admission::Now { ticket };
            }
        }
        let predicted = self.predict(now, self.line.len());
        if predicted > deadline {
            self.figures.expired += 1;
            return Admission::Late { predicted };
        }
        let ticket = self.issue();
        self.line.push_back(Waiter { ticket, deadline });
        self.figures.peak_waiting = self.figures.peak_waiting.max(self.line.len());
        let wake_at = self.earliest(now);
        Admission::Wait { ticket, wake_at }
    }

    /// Joins the line without trying the local bucket: a shared store decides admissions, and
    /// `predicted` is its estimate of when this caller's turn comes.
    pub fn join(&mut self, now: Millis, deadline: Millis, predicted: Millis) -> Admission {
        if let QuotaState::Exhausted { until } = self.quota.state(now) {
            self.figures.quota_rejected += 1;
            return Admission::Exhausted { until };
        }
        self.figures.requests += 1;
        if predicted > deadline {
            self.figures.expired += 1;
            return Admission::Late { predicted };
        }
        let ticket = self.issue();
        self.line.push_back(Waiter { ticket, deadline });
        self.figures.peak_waiting = self.figures.peak_waiting.max(self.line.len());
        Admission::Wait {
            ticket,
            wake_at: now,
        }
    }

    /// The head of the line and its deadline.
    pub fn head(&self) -> Option<(Ticket, Millis)> {
        self.line.front().map(|w| (w.ticket, w.deadline))
    }

    /// Admits the head because the shared store said so (no local token is spent).
    pub fn admit_head(&mut self, waited: Millis) -> Option<Ticket> {
        let head = self.line.pop_front()?;
        self.admitted(head.ticket, false, waited);
        Some(head.ticket)
    }

    /// Lets go of the head, whose deadline has passed.
    pub fn expire_head(&mut self) -> Option<Ticket> {
        let head = self.line.pop_front()?;
        self.figures.expired += 1;
        Some(head.ticket)
    }

    /// Empties the line (the store is down and the gate fails closed).
    pub fn drain(&mut self) -> Vec<Ticket> {
        self.line.drain(..).map(|w| w.ticket).collect()
    }

    /// The shared store says the quota is spent for `ms` more.
    pub fn quota_closed(&mut self, now: Millis, ms: Millis) -> Vec<Ticket> {
        self.quota.close(Some(now + ms));
        let drained = self.drain();
        self.figures.quota_rejected += drained.len() as u64;
        drained
    }

    fn issue(&mut self) -> Ticket {
        let ticket = Ticket(self.next_ticket);
        self.next_ticket += 1;
        ticket
    }

    fn admitted(&mut self, ticket: Ticket, anchor: bool, waited: Millis) {
        self.figures.admitted += 1;
        self.figures.admission_wait.record(waited);
        if anchor {
            self.anchor = Some(ticket);
        }
    }

    /// Reports that an admitted call's attempt is over (response, failure or abort). If its
    /// admission paused the refill, the refill restarts now; returns true when it did, so the
    /// caller can re-time its wake-up.
    pub fn responded(&mut self, ticket: Ticket, now: Millis) -> bool {
        if self.anchor != Some(ticket) {
            return false;
        }
        self.anchor = None;
        self.bucket.resume(now);
        true
    }

    /// Takes a waiter out of line without admitting it. Returns false when the ticket is not in
    /// line (already admitted or cancelled).
    pub fn cancel(&mut self, ticket: Ticket) -> bool {
        match self.line.binary_search_by_key(&ticket, |w| w.ticket) {
            Ok(index) => {
                self.line.remove(index);
                self.figures.cancelled += 1;
                true
            }
            Err(_) => false,
        }
    }

    /// Admits waiters from the head of the line while the gate allows, and lets go of those
    /// whose deadline has passed. `asked` gives each admitted waiter's asking time, for the
    /// wait histogram.
    pub fn poll(&mut self, now: Millis, asked: impl Fn(Ticket) -> Millis) -> Wakeup {
        self.figures.wakeups += 1;
        let mut wakeup = Wakeup::default();
        while let Some(&head) = self.line.front() {
            if head.deadline < now {
                self.line.pop_front();
                self.figures.expired += 1;
                wakeup.expired.push(head.ticket);
                continue;
            }
            if now < self.blocked_until {
                break;
            }
            let Some(anchor) = self.bucket.take_anchored(now) else {
                break;
            };
            self.line.pop_front();
            self.admitted(head.ticket, anchor, now - asked(head.ticket));
            wakeup.admitted.push(head.ticket);
        }
        wakeup.next = self.next_wake(now);
        wakeup
    }

    /// When the line next needs attention, or `None` when nobody waits.
    pub fn next_wake(&mut self, now: Millis) -> Option<Millis> {
        if self.line.is_empty() {
            None
        } else {
            Some(self.earliest(now))
        }
    }

    /// Calls in line right now.
    pub fn waiting(&self) -> usize {
        self.line.len()
    }

    /// The quota at `now`.
    pub fn quota(&mut self, now: Millis) -> QuotaState {
        self.quota.state(now)
    }

    /// Records a response for quota suspicion; true when this call should start the one probe.
    pub fn quota_suspect(&mut self, status: u16, has_retry_after: bool) -> bool {
        self.quota.observe(status, has_retry_after)
    }

    /// A 429's body spoke of the quota; true when this call should start the one probe.
    pub fn quota_hint(&mut self) -> bool {
        self.quota.suspect()
    }

    /// The probe's answer. When it confirms exhaustion, everyone in line is let go (returned)
    /// and new calls fail fast until the period ends.
    pub fn quota_probed(&mut self, usage: Option<Usage>) -> (QuotaState, Vec<Ticket>) {
        let state = self.quota.probed(usage);
        let drained = match state {
            QuotaState::Exhausted { .. } => {
                let drained: Vec<Ticket> = self.line.drain(..).map(|w| w.ticket).collect();
                self.figures.quota_rejected += drained.len() as u64;
                drained
            }
            _ => Vec::new(),
        };
        (state, drained)
    }

    /// The caller says the quota is back.
    pub fn reset_quota(&mut self) {
        self.quota.reset();
    }

    /// Counts a retry and, for a computed backoff, its delay.
    pub fn record_retry(&mut self, cause: Outcome, backoff_ms: Option<Millis>) {
        let r = &mut self.figures.retries;
        match cause {
            Outcome::Response { status: 429, .. } => r.throttled += 1,
            Outcome::Response { .. } => r.server_error += 1,
            Outcome::Network => r.network += 1,
            Outcome::Timeout => r.timeout += 1,
        }
        if let Some(ms) = backoff_ms {
            self.figures.backoff.record(ms);
        }
    }

    /// Counts a call given up.
    pub fn record_abandoned(&mut self, reason: Reason) {
        let index = Reason::ALL.iter().position(|&r| r == reason).unwrap_or(0);
        self.figures.abandoned[index] += 1;
    }

    /// A snapshot of the live figures.
    pub fn figures(&mut self, now: Millis) -> Figures {
        Figures {
            waiting: self.line.len(),
            quota: Some(self.quota.state(now)),
            retry_budget: self.budget.as_ref().map(RefillingBudget::available),
            ..self.figures.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NEVER: Millis = f64::INFINITY;

    fn article_gate() -> Gate {
        Gate::new(Rate::new(2.0, 2.0).unwrap(), 0.0)
    }

    fn wait(g: &mut Gate, now: Millis, deadline: Millis) -> Ticket {
        match g.request(now, deadline) {
            Admission::Wait { ticket, .. } => ticket,
            other => panic!("expected to wait, got {other:?}"),
        }
    }

    /// Admits at once and reports an instant response, as the article's zero-latency model.
    fn go(g: &mut Gate, now: Millis) {
        match g.request(now, NEVER) {
            Admission::Now { ticket } => {
                g.responded(ticket, now);
            }
            other => panic!("expected admission, got {other:?}"),
        }
    }

    fn poll(g: &mut Gate, now: Millis) -> Wakeup {
        g.poll(now, |_| 0.0)
    }

    #[test]
    fn admits_the_burst_then_says_when_to_come_back() {
        let mut g = article_gate();
        assert_eq!(g.admit_at(0.0), 0.0);
        assert_eq!(g.admit_at(0.0), 0.0);
        assert_eq!(g.admit_at(0.0), 500.0);
        assert_eq!(g.admit_at(0.0), 500.0, "come back at t spends no token");
        assert_eq!(g.admit_at(500.0), 500.0);
        assert_eq!(g.figures(0.0).admitted, 3);
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
        go(&mut g, 0.0);
        go(&mut g, 0.0);
        let tickets: Vec<Ticket> = (0..4).map(|_| wait(&mut g, 0.0, NEVER)).collect();
        let mut admitted = Vec::new();
        let w = poll(&mut g, 499.0);
        assert_eq!((w.admitted.len(), w.next), (0, Some(500.0)));
        for (now, next) in [
            (500.0, Some(1000.0)),
            (1500.0, Some(2000.0)),
            (2000.0, None),
        ] {
            let w = poll(&mut g, now);
            assert_eq!(w.next, next, "at {now}");
            for &t in &w.admitted {
                g.responded(t, now);
            }
            admitted.extend(w.admitted);
        }
        assert_eq!(admitted, tickets);
    }

    #[test]
    fn a_newcomer_never_jumps_the_line() {
        let mut g = article_gate();
        go(&mut g, 0.0);
        go(&mut g, 0.0);
        let first = wait(&mut g, 0.0, NEVER);
        // At 500 a token is there, but the waiter ahead of the newcomer gets it.
        assert!(matches!(g.request(500.0, NEVER), Admission::Wait { .. }));
        assert_eq!(poll(&mut g, 500.0).admitted, vec![first]);
    }

    #[test]
    fn a_cancelled_waiter_spends_nothing_and_leaves_the_line() {
        let mut g = article_gate();
        go(&mut g, 0.0);
        go(&mut g, 0.0);
        let a = wait(&mut g, 0.0, NEVER);
        let b = wait(&mut g, 0.0, NEVER);
        assert!(g.cancel(a));
        assert!(!g.cancel(a));
        let w = poll(&mut g, 500.0);
        assert_eq!((w.admitted, w.next), (vec![b], None));
        let f = g.figures(500.0);
        assert_eq!((f.cancelled, f.admitted), (1, 3));
    }

    #[test]
    fn the_wake_up_after_a_cooldown_waits_for_both_cooldown_and_token() {
        let mut g = article_gate();
        go(&mut g, 0.0);
        go(&mut g, 0.0);
        g.defer(0.0, 200.0).unwrap();
        // Cooldown ends at 200 but the next token only at 500: one wake-up, at 500.
        assert!(matches!(
            g.request(0.0, NEVER),
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
        g.observe(100.0, 429, feedback.clone());
        assert_eq!(g.admit_at(10_000.0), 30_100.0);
        let figures = g.figures(0.0);
        assert_eq!(figures.throttled, 1);
        assert_eq!(figures.cooldown_until, 30_100.0);
        assert_eq!(figures.last_feedback, Some(feedback));
    }

    #[test]
    fn a_throttle_without_retry_after_sets_no_cooldown() {
        let mut g = article_gate();
        g.observe(100.0, 429, Feedback::default());
        assert_eq!(g.blocked_until(), 0.0);
        assert_eq!(g.admit_at(100.0), 100.0);
    }

    #[test]
    fn retry_after_on_a_503_holds_the_gate_too_but_not_on_a_200() {
        let mut g = article_gate();
        let ra = |ms| Feedback {
            retry_after_ms: Some(ms),
            ..Feedback::default()
        };
        g.observe(0.0, 200, ra(9_000.0));
        assert_eq!(g.blocked_until(), 0.0);
        g.observe(0.0, 503, ra(2_000.0));
        assert_eq!(g.blocked_until(), 2_000.0);
    }

    #[test]
    fn a_call_predicted_to_miss_its_deadline_is_refused_before_anything_is_sent() {
        let mut g = article_gate();
        go(&mut g, 0.0);
        go(&mut g, 0.0);
        wait(&mut g, 0.0, NEVER); // admitted at 500
        assert_eq!(g.request(0.0, 999.0), Admission::Late { predicted: 1000.0 });
        wait(&mut g, 0.0, 1000.0);
        assert_eq!(g.figures(0.0).expired, 1);
    }

    #[test]
    fn a_new_cooldown_lets_go_of_waiters_it_makes_hopeless() {
        let mut g = article_gate();
        go(&mut g, 0.0);
        go(&mut g, 0.0);
        let patient = wait(&mut g, 0.0, NEVER);
        let hurried = wait(&mut g, 0.0, 1_500.0);
        let retry_after = Feedback {
            retry_after_ms: Some(2_000.0),
            ..Feedback::default()
        };
        let observed = g.observe(10.0, 429, retry_after);
        assert_eq!(observed.expired, vec![hurried]);
        assert_eq!(observed.hold_ms, Some(2_000.0));
        assert_eq!(poll(&mut g, 2_010.0).admitted, vec![patient]);
    }

    #[test]
    fn a_waiter_whose_deadline_passed_in_line_is_let_go_not_admitted() {
        let mut g = article_gate();
        go(&mut g, 0.0);
        go(&mut g, 0.0);
        let late = wait(&mut g, 0.0, 500.0);
        let w = poll(&mut g, 501.0);
        assert_eq!((w.admitted.len(), w.expired), (0, vec![late]));
        assert_eq!(g.figures(501.0).admitted, 2);
    }

    #[test]
    fn the_refill_after_a_burst_starts_when_its_response_comes_back() {
        let mut g = article_gate();
        let Admission::Now { ticket: first } = g.request(0.0, NEVER) else {
            panic!()
        };
        let Admission::Now { ticket: second } = g.request(0.0, NEVER) else {
            panic!()
        };
        let third = wait(&mut g, 0.0, NEVER);
        assert!(
            !g.responded(second, 2.0),
            "only the burst's first take anchors"
        );
        assert!(g.responded(first, 4.0));
        assert!(poll(&mut g, 500.0).admitted.is_empty());
        let w = poll(&mut g, 504.0);
        assert_eq!(w.admitted, vec![third]);
    }

    #[test]
    fn remaining_from_the_server_lowers_the_count_and_slows_when_others_drain_the_key() {
        let mut g = Gate::new(Rate::new(20.0, 10.0).unwrap(), 0.0);
        let seen = |remaining| Feedback {
            limit: Some(20),
            remaining: Some(remaining),
            ..Feedback::default()
        };
        // We think 20 are left; the server says 1: someone else is using the key.
        g.observe(0.0, 200, seen(1));
        let f = g.figures(0.0);
        assert!(f.slow);
        assert_eq!(g.predict(0.0, 2), 200.0, "two tokens, then one per 200 ms");
        g.observe(0.0, 200, seen(10));
        assert!(!g.figures(0.0).slow, "recovered above 10%");
    }

    #[test]
    fn nothing_remaining_with_a_reset_holds_the_gate_until_the_reset() {
        let mut g = article_gate();
        let f = Feedback {
            limit: Some(2),
            remaining: Some(0),
            reset_ms: Some(4_000.0),
            ..Feedback::default()
        };
        g.observe(100.0, 200, f);
        assert_eq!(g.blocked_until(), 4_100.0);
    }

    #[test]
    fn alone_at_the_exact_allowance_the_gate_is_not_slowed() {
        let mut g = article_gate();
        g.request(0.0, NEVER);
        g.request(0.0, NEVER);
        let f = Feedback {
            limit: Some(2),
            remaining: Some(0),
            ..Feedback::default()
        };
        g.observe(1.0, 200, f);
        assert!(!g.figures(1.0).slow);
        assert_eq!(g.blocked_until(), 0.0);
    }

    #[test]
    fn a_store_decided_line_keeps_order_and_deadlines_without_local_tokens() {
        let mut g = article_gate();
        let a = match g.join(0.0, NEVER, 0.0) {
            Admission::Wait { ticket, .. } => ticket,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            g.join(0.0, 100.0, 500.0),
            Admission::Late { predicted: 500.0 }
        );
        let b = match g.join(0.0, NEVER, 500.0) {
            Admission::Wait { ticket, .. } => ticket,
            other => panic!("{other:?}"),
        };
        assert_eq!(g.head(), Some((a, NEVER)));
        assert_eq!(g.admit_head(3.0), Some(a));
        assert_eq!(g.expire_head(), Some(b));
        let f = g.figures(0.0);
        assert_eq!((f.admitted, f.expired, f.requests), (1, 2, 3));
        assert_eq!(g.admit_at(0.0), 0.0, "the local bucket was not touched");
    }

    #[test]
    fn a_store_closed_quota_drains_the_line_and_refuses_until_it_ends() {
        let mut g = article_gate();
        g.join(0.0, NEVER, 0.0);
        assert_eq!(g.quota_closed(0.0, 1_000.0).len(), 1);
        assert_eq!(
            g.request(999.0, NEVER),
            Admission::Exhausted {
                until: Some(1_000.0)
            }
        );
        assert!(matches!(g.request(1_000.0, NEVER), Admission::Now { .. }));
    }

    #[test]
    fn a_confirmed_exhaustion_lets_everyone_go_and_refuses_newcomers() {
        let mut g = article_gate();
        go(&mut g, 0.0);
        go(&mut g, 0.0);
        let a = wait(&mut g, 0.0, NEVER);
        let b = wait(&mut g, 0.0, NEVER);
        assert!(g.quota_hint());
        let usage = Usage {
            used: 5.0,
            limit: 5.0,
            period_end: Some(9_000.0),
        };
        let (state, drained) = g.quota_probed(Some(usage));
        assert_eq!(drained, vec![a, b]);
        assert_eq!(
            state,
            QuotaState::Exhausted {
                until: Some(9_000.0)
            }
        );
        assert_eq!(
            g.request(1.0, NEVER),
            Admission::Exhausted {
                until: Some(9_000.0)
            }
        );
        g.reset_quota();
        assert!(matches!(g.request(1.0, NEVER), Admission::Wait { .. }));
    }
}

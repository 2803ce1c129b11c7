//! The per-call retry decision. After each attempt the policy answers: deliver what happened,
//! retry not before `t`, or give up with a reason. Every retry is bounded three ways: the
//! call's attempts, the call's time (its deadline), and the shared budgets.
//!
//! The server's word wins: with `Retry-After` the wait is exactly the server's (it also
//! becomes the gate's shared cooldown), never jittered and never cut by a local cap; when that
//! wait outlasts the time the call has left, the call gives up at once rather than waiting to
//! fail. Without it, full-jitter backoff.

use std::fmt;

use super::backoff::Backoff;
use super::budget::{BatchBudget, RefillingBudget, RefillingConfig};
use super::classify::{Kind, Outcome, RetryRules};
use super::config::{at_least, ConfigError};
use super::random::Random;
use super::Millis;

/// Why a call was given up. Giving up is never success.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reason {
    /// The call's attempts are spent.
    Attempts,
    /// The call's own time budget ran out (or could not cover the next admission).
    TimeBudget,
    /// A shared retry budget (the gate's or the batch's) is spent.
    RetryBudget,
    /// The batch's deadline passed, or admission was predicted after it.
    Deadline,
    /// The server asked for a wait longer than the time the call has left.
    RetryAfterExceedsDeadline,
    /// The shared store is unreachable and the gate is set to fail closed.
    StoreUnavailable,
}

impl Reason {
    /// Every reason, for figures keyed by reason.
    pub const ALL: [Reason; 6] = [
        Reason::Attempts,
        Reason::TimeBudget,
        Reason::RetryBudget,
        Reason::Deadline,
        Reason::RetryAfterExceedsDeadline,
        Reason::StoreUnavailable,
    ];

    /// The name JavaScript sees in `GateAbandonedError.reason`.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Attempts => "attempts",
            Reason::TimeBudget => "time-budget",
            Reason::RetryBudget => "retry-budget",
            Reason::Deadline => "deadline",
            Reason::RetryAfterExceedsDeadline => "retry-after-exceeds-deadline",
            Reason::StoreUnavailable => "store-unavailable",
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A call given up, with what a caller needs to decide what to do next.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Abandoned {
    /// Why.
    pub reason: Reason,
    /// Attempts actually sent.
    pub attempts: u32,
    /// The last response's status, if any arrived.
    pub status: Option<u16>,
    /// The last `Retry-After`, if any.
    pub retry_after_ms: Option<Millis>,
}

/// What to do after an attempt.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Verdict {
    /// Hand the outcome to the caller as it is (a success, a final error, or a request that
    /// may not be replayed).
    Deliver,
    /// Try again: wait until `not_before`, then queue for the gate again.
    Retry {
        /// Earliest time of the next admission request.
        not_before: Millis,
        /// How long the wait is (0 when a `Retry-After` cooldown on the gate does the waiting).
        delay_ms: Millis,
        /// What kind of failure is being retried.
        kind: Kind,
        /// True when the wait is the server's `Retry-After`.
        server_delay: bool,
    },
    /// Give up.
    Abandon(Abandoned),
}

/// Per-call limits and the rules they apply.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Which failures are retried and which requests may be replayed.
    pub rules: RetryRules,
    /// Backoff when the server gives no `Retry-After`.
    pub backoff: Backoff,
    /// Attempts per call, the first included.
    pub max_attempts: u32,
    /// Time from the call's start after which nothing more is admitted.
    pub time_budget_ms: Millis,
    /// The longest one attempt may take before it is aborted and counted as a timeout.
    pub attempt_timeout_ms: Millis,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            rules: RetryRules::default(),
            backoff: Backoff::DEFAULT,
            max_attempts: 3,
            time_budget_ms: 60_000.0,
            attempt_timeout_ms: 30_000.0,
        }
    }
}

impl RetryPolicy {
    /// Checks the limits; each error names its option.
    pub fn validate(self) -> Result<Self, ConfigError> {
        at_least(
            "retry.maxAttempts",
            self.max_attempts.into(),
            1.0,
            "an integer >= 1",
        )?;
        at_least(
            "retry.timeBudgetMs",
            self.time_budget_ms,
            1.0,
            "a finite number >= 1",
        )?;
        at_least(
            "retry.attemptTimeoutMs",
            self.attempt_timeout_ms,
            1.0,
            "a finite number >= 1",
        )?;
        Ok(self)
    }

    /// A policy that sends once and never retries (`retry: false`), but still bounds the wait
    /// for admission by the time budget.
    pub fn never() -> Self {
        RetryPolicy {
            max_attempts: 1,
            ..RetryPolicy::default()
        }
    }

    /// Starts a call at `now`. Its deadline is the earlier of its time budget and the batch's.
    pub fn start(&self, now: Millis, batch_deadline: Option<Millis>, replayable: bool) -> Call {
        let own = now + self.time_budget_ms;
        let (deadline, deadline_reason) = match batch_deadline {
            Some(batch) if batch <= own => (batch, Reason::Deadline),
            _ => (own, Reason::TimeBudget),
        };
        Call {
            deadline,
            deadline_reason,
            attempts: 0,
            replayable,
            last_status: None,
            last_retry_after_ms: None,
            last_retry_cost: None,
        }
    }

    /// Decides what follows an attempt's `outcome` at `now`, spending from the budgets only
    /// when the verdict is a retry.
    pub fn after(
        &self,
        call: &mut Call,
        outcome: Outcome,
        now: Millis,
        budgets: Budgets<'_>,
        random: &mut impl Random,
    ) -> Verdict {
        if let Outcome::Response {
            status,
            retry_after_ms,
        } = outcome
        {
            call.last_status = Some(status);
            call.last_retry_after_ms = retry_after_ms;
        }
        let Some(kind) = self.rules.retryable(outcome) else {
            if let (Outcome::Response { status, .. }, Some(gate)) = (outcome, budgets.gate) {
                if status < 400 {
                    gate.on_success(call.last_retry_cost);
                }
            }
            return Verdict::Deliver;
        };
        if !call.replayable {
            return Verdict::Deliver;
        }
        if call.attempts >= self.max_attempts {
            return Verdict::Abandon(call.abandon(Reason::Attempts));
        }
        let server_delay = match outcome {
            Outcome::Response { retry_after_ms, .. } => retry_after_ms,
            _ => None,
        };
        let delay_ms = match server_delay {
            Some(delay) if now + delay > call.deadline => {
                return Verdict::Abandon(call.abandon(Reason::RetryAfterExceedsDeadline));
            }
            Some(delay) => delay,
            None => {
                let delay = self.backoff.delay(call.attempts - 1, random);
                if now + delay >= call.deadline {
                    return Verdict::Abandon(call.abandon(call.deadline_reason));
                }
                delay
            }
        };
        let gate_ok = budgets.gate.as_ref().is_none_or(|g| g.can_withdraw(kind));
        let batch_ok = budgets.batch.as_ref().is_none_or(|b| b.can_withdraw());
        if !(gate_ok && batch_ok) {
            return Verdict::Abandon(call.abandon(Reason::RetryBudget));
        }
        if let Some(gate) = budgets.gate {
            call.last_retry_cost = Some(gate.withdraw(kind));
        }
        if let Some(batch) = budgets.batch {
            batch.withdraw();
        }
        Verdict::Retry {
            not_before: now + delay_ms,
            delay_ms,
            kind,
            server_delay: server_delay.is_some(),
        }
    }
}

/// The shared budgets a retry draws from: the gate's long-running one and the batch's.
#[derive(Default)]
pub struct Budgets<'a> {
    /// The gate's refilling budget, when it has one.
    pub gate: Option<&'a mut RefillingBudget>,
    /// The batch's allowance, when the call belongs to a batch.
    pub batch: Option<&'a mut BatchBudget>,
}

/// One call's progress through its attempts.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    deadline: Millis,
    deadline_reason: Reason,
    attempts: u32,
    replayable: bool,
    last_status: Option<u16>,
    last_retry_after_ms: Option<Millis>,
    last_retry_cost: Option<f64>,
}

impl Call {
    /// Nothing may be admitted for this call after this time.
    pub fn deadline(&self) -> Millis {
        self.deadline
    }

    /// The reason to give when the deadline is what stops the call.
    pub fn deadline_reason(&self) -> Reason {
        self.deadline_reason
    }

    /// Attempts sent so far.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// Records that an attempt is being sent.
    pub fn sent(&mut self) {
        self.attempts += 1;
    }

    /// Records a retry's cost charged to a budget outside the core (a shared store), for the
    /// refund on success.
    pub fn charged(&mut self, cost: f64) {
        self.last_retry_cost = Some(cost);
    }

    /// What a success returns to a refilling budget: the last retry's cost, or the first-time
    /// bonus.
    pub fn success_refund(&self, config: &RefillingConfig) -> f64 {
        self.last_retry_cost.unwrap_or(config.success_refill)
    }

    /// Gives up for `reason`, carrying the last response's details.
    pub fn abandon(&self, reason: Reason) -> Abandoned {
        Abandoned {
            reason,
            attempts: self.attempts,
            status: self.last_status,
            retry_after_ms: self.last_retry_after_ms,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::random::Seeded;

    fn status(status: u16, retry_after_ms: Option<Millis>) -> Outcome {
        Outcome::Response {
            status,
            retry_after_ms,
        }
    }

    fn sent(policy: &RetryPolicy, now: Millis) -> Call {
        let mut call = policy.start(now, None, true);
        call.sent();
        call
    }

    fn decide(policy: &RetryPolicy, call: &mut Call, outcome: Outcome, now: Millis) -> Verdict {
        policy.after(call, outcome, now, Budgets::default(), &mut Seeded::new(9))
    }

    #[test]
    fn delivers_success_and_final_errors_untouched() {
        let p = RetryPolicy::default();
        for s in [200, 400, 401, 403, 404, 422, 500] {
            let mut call = sent(&p, 0.0);
            assert_eq!(
                decide(&p, &mut call, status(s, None), 0.0),
                Verdict::Deliver,
                "{s}"
            );
        }
    }

    #[test]
    fn the_servers_delay_is_used_exactly() {
        let p = RetryPolicy::default();
        let mut call = sent(&p, 0.0);
        match decide(&p, &mut call, status(429, Some(30_000.0)), 100.0) {
            Verdict::Retry {
                not_before,
                delay_ms,
                server_delay,
                kind,
            } => {
                assert_eq!((not_before, delay_ms), (30_100.0, 30_000.0));
                assert!(server_delay);
                assert_eq!(kind, Kind::Throttle);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_server_delay_longer_than_the_time_left_gives_up_at_once() {
        let p = RetryPolicy {
            time_budget_ms: 10_000.0,
            ..RetryPolicy::default()
        };
        let mut call = sent(&p, 0.0);
        let verdict = decide(&p, &mut call, status(429, Some(30_000.0)), 50.0);
        assert_eq!(
            verdict,
            Verdict::Abandon(Abandoned {
                reason: Reason::RetryAfterExceedsDeadline,
                attempts: 1,
                status: Some(429),
                retry_after_ms: Some(30_000.0),
            })
        );
    }

    #[test]
    fn without_retry_after_the_backoff_is_jittered_under_the_ceiling() {
        let p = RetryPolicy::default();
        let mut delays = Vec::new();
        for seed in 0..200 {
            let mut call = sent(&p, 0.0);
            let v = p.after(
                &mut call,
                status(503, None),
                0.0,
                Budgets::default(),
                &mut Seeded::new(seed),
            );
            let Verdict::Retry {
                delay_ms,
                server_delay,
                ..
            } = v
            else {
                panic!("{v:?}")
            };
            assert!(!server_delay);
            delays.push(delay_ms);
        }
        assert!(delays.iter().all(|&d| (0.0..2000.0).contains(&d)));
        let distinct: std::collections::BTreeSet<u64> = delays.iter().map(|d| *d as u64).collect();
        assert!(
            distinct.len() > 150,
            "jittered, not fixed: {} distinct",
            distinct.len()
        );
    }

    #[test]
    fn attempts_are_capped_per_call() {
        let p = RetryPolicy::default();
        let mut call = sent(&p, 0.0);
        for _ in 1..3 {
            assert!(matches!(
                decide(&p, &mut call, Outcome::Network, 0.0),
                Verdict::Retry { .. }
            ));
            call.sent();
        }
        let v = decide(&p, &mut call, status(503, None), 0.0);
        assert!(matches!(
            v,
            Verdict::Abandon(Abandoned {
                reason: Reason::Attempts,
                attempts: 3,
                ..
            })
        ));
    }

    #[test]
    fn a_bare_post_is_delivered_not_retried() {
        let p = RetryPolicy::default();
        let mut call = p.start(0.0, None, false);
        call.sent();
        assert_eq!(
            decide(&p, &mut call, status(503, None), 0.0),
            Verdict::Deliver
        );
        assert_eq!(
            decide(&p, &mut call, Outcome::Timeout, 0.0),
            Verdict::Deliver
        );
    }

    #[test]
    fn the_batch_deadline_wins_when_it_is_earlier() {
        let p = RetryPolicy::default();
        let call = p.start(0.0, Some(5_000.0), true);
        assert_eq!(
            (call.deadline(), call.deadline_reason()),
            (5_000.0, Reason::Deadline)
        );
        let call = p.start(0.0, Some(90_000.0), true);
        assert_eq!(
            (call.deadline(), call.deadline_reason()),
            (60_000.0, Reason::TimeBudget)
        );
    }

    #[test]
    fn a_backoff_past_the_deadline_gives_up_with_the_deadlines_reason() {
        let p = RetryPolicy::default();
        let mut call = p.start(0.0, Some(1.0), true);
        call.sent();
        let v = decide(&p, &mut call, status(503, None), 0.9);
        assert!(
            matches!(
                v,
                Verdict::Abandon(Abandoned {
                    reason: Reason::Deadline,
                    ..
                })
            ),
            "{v:?}"
        );
    }

    #[test]
    fn budgets_bound_retries_across_calls_and_refill_on_success() {
        let p = RetryPolicy::default();
        let mut batch = BatchBudget::new(1);
        let mut gate = RefillingBudget::new(RefillingConfig::DEFAULT);
        let mut random = Seeded::new(1);
        let mut a = sent(&p, 0.0);
        let mut b = sent(&p, 0.0);
        fn budgets<'a>(g: &'a mut RefillingBudget, b: &'a mut BatchBudget) -> Budgets<'a> {
            Budgets {
                gate: Some(g),
                batch: Some(b),
            }
        }
        let v = p.after(
            &mut a,
            status(429, None),
            0.0,
            budgets(&mut gate, &mut batch),
            &mut random,
        );
        assert!(matches!(v, Verdict::Retry { .. }));
        assert_eq!(gate.available(), 495.0);
        let v = p.after(
            &mut b,
            status(429, None),
            0.0,
            budgets(&mut gate, &mut batch),
            &mut random,
        );
        assert!(matches!(
            v,
            Verdict::Abandon(Abandoned {
                reason: Reason::RetryBudget,
                ..
            })
        ));
        assert_eq!(gate.available(), 495.0, "a refused retry spends nothing");
        a.sent();
        let v = p.after(
            &mut a,
            status(200, None),
            0.0,
            budgets(&mut gate, &mut batch),
            &mut random,
        );
        assert_eq!(v, Verdict::Deliver);
        assert_eq!(
            gate.available(),
            500.0,
            "the retry's cost is refunded on success"
        );
    }
}

//! The per-call retry decision. After each attempt the policy answers: deliver what happened,
//! retry not before `t`, or give up with a reason. Every retry is bounded three ways: the
//! call's attempts, the call's time (its deadline), and the shared budgets, which the gate
//! charges once the policy says "retry" (`Gate` in `gate/`: the one place a budget is spent).
//!
//! The server's word wins: with `Retry-After` the wait is exactly the server's (it also
//! becomes the gate's shared cooldown), never jittered and never cut by a local cap; when that
//! wait outlasts the time the call has left, the call gives up at once rather than waiting to
//! fail. Without it, full-jitter backoff.

use std::fmt;

use crate::core::base::random::Random;
use crate::core::rules::allowance::{at_least, ConfigError};
use crate::core::rules::backoff::Backoff;
use crate::core::rules::budget::RefillingConfig;
use crate::core::rules::classify::{Kind, Outcome, RetryRules};
use crate::core::rules::ranges::ATTEMPTS;
use crate::core::rules::toggle::Toggle;
use crate::core::Millis;

/// Why a call was abandoned. Abandoning is never success.
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
    /// Admission was predicted later than `maxWaitMs` from the call.
    QueueWait,
    /// The queue already held `maxWaiting` calls.
    QueueFull,
    /// The spread's credit for the call comes later than `maxWaitMs` from the call (the
    /// error's `retryAfterMs` says when, when that is known).
    CreditWait,
}

impl Reason {
    /// Every reason, for figures keyed by reason.
    pub(crate) const ALL: [Reason; 9] = [
        Reason::Attempts,
        Reason::TimeBudget,
        Reason::RetryBudget,
        Reason::Deadline,
        Reason::RetryAfterExceedsDeadline,
        Reason::StoreUnavailable,
        Reason::QueueWait,
        Reason::QueueFull,
        Reason::CreditWait,
    ];

    /// The reason's place in `Reason::ALL`, for figures kept by reason.
    pub fn index(self) -> usize {
        self as usize
    }

    /// The reason called `name` (its [`as_str`](Self::as_str)), if one is.
    pub fn named(name: &str) -> Option<Reason> {
        Reason::ALL.into_iter().find(|r| r.as_str() == name)
    }

    /// The name JavaScript sees in `GateAbandonedError.reason`.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Attempts => "attempts",
            Reason::TimeBudget => "time-budget",
            Reason::RetryBudget => "retry-budget",
            Reason::Deadline => "deadline",
            Reason::RetryAfterExceedsDeadline => "retry-after-exceeds-deadline",
            Reason::StoreUnavailable => "store-unavailable",
            Reason::QueueWait => "queue-wait",
            Reason::QueueFull => "queue-full",
            Reason::CreditWait => "credit-wait",
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A call abandoned, with what a caller needs to decide what to do next.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Abandoned {
    /// Why.
    pub reason: Reason,
    /// Attempts actually sent.
    pub attempts: u32,
    /// The last response's status, if any arrived.
    pub status: Option<u16>,
    /// The last `Retry-After`, if any; for [`Reason::CreditWait`], when the spread's credit
    /// comes (at the earliest, where it is shared), if known.
    pub retry_after_ms: Option<Millis>,
}

impl Abandoned {
    /// The `GateAbandonedError`'s message: why, and how far the call got.
    pub fn message(&self) -> String {
        let status = self
            .status
            .map_or(String::new(), |s| format!(", last status {s}"));
        let credit = match (self.reason, self.retry_after_ms) {
            (Reason::CreditWait, Some(ms)) => {
                format!(
                    "; quota.spread has its credit in {} s",
                    (ms / 1000.0).ceil()
                )
            }
            (Reason::CreditWait, None) => {
                "; quota.spread has no credit for it before its next /usage reading".to_string()
            }
            _ => String::new(),
        };
        format!(
            "odds-gate gave up on the request ({}) after {} attempt(s){status}{credit}",
            self.reason, self.attempts
        )
    }
}

/// What to do after an attempt.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Verdict {
    /// Hand the outcome to the caller as it is (a success, a final error, or a request that
    /// may not be replayed).
    Deliver,
    /// Try again, budgets permitting: wait until `not_before`, then queue for the gate again.
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
    Abandon(Reason),
}

/// What the policy needs to know of a call that just made an attempt.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Progress {
    /// Attempts sent, this one included.
    pub attempts: u32,
    /// Nothing may be admitted for the call after this time.
    pub deadline: Millis,
    /// The reason to give when that deadline stops the call.
    pub deadline_reason: Reason,
    /// Whether the request may be sent again.
    pub replayable: bool,
}

/// Per-call limits and the rules they apply.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize),
    serde(rename_all = "camelCase")
)]
pub struct RetryPolicy {
    /// Which failures are retried and which requests may be replayed.
    pub rules: RetryRules,
    /// Backoff when the server gives no `Retry-After`.
    pub backoff: Backoff,
    /// Attempts per call, the first included.
    pub max_attempts: u32,
    /// Time from the call's first send after which nothing more is admitted.
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

/// `retry: { ... }`'s fields as given (`None`: left out), the lists' items already of their
/// kind (status codes, method names).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RetryGiven {
    /// [`RetryPolicy::max_attempts`].
    pub max_attempts: Option<f64>,
    /// [`RetryPolicy::time_budget_ms`].
    pub time_budget_ms: Option<f64>,
    /// [`RetryPolicy::attempt_timeout_ms`].
    pub attempt_timeout_ms: Option<f64>,
    /// The backoff's base.
    pub base_ms: Option<f64>,
    /// The backoff's cap.
    pub cap_ms: Option<f64>,
    /// The statuses retried.
    pub statuses: Option<Vec<u16>>,
    /// The methods replayed.
    pub methods: Option<Vec<String>>,
    /// The retry budget: `Some(None)` for `false` (none).
    pub budget: Option<Option<RefillingConfig>>,
}

impl RetryGiven {
    /// `retry` as given: `false` (no retries and no budget: the gate observes and admits
    /// only), `true` or left out (the defaults), or its fields (the budget's default where
    /// left out). Each field checked, the policy's before the budget's.
    pub fn toggled(
        given: Option<Toggle<RetryGiven>>,
    ) -> Result<(Option<RetryPolicy>, Option<RefillingConfig>), ConfigError> {
        let mut given = match given {
            Some(Toggle::Flag(false)) => return Ok((None, None)),
            Some(Toggle::Flag(true)) | None => RetryGiven::default(),
            Some(Toggle::Given(given)) => given,
        };
        let budget = given.budget.take();
        let policy = given.policy()?;
        let budget = match budget {
            None => Some(RefillingConfig::DEFAULT),
            Some(budget) => budget.map(RefillingConfig::validate).transpose()?,
        };
        Ok((Some(policy), budget))
    }

    /// The policy asked for: [`RetryPolicy::default`]'s where left out, each field checked.
    pub fn policy(self) -> Result<RetryPolicy, ConfigError> {
        let d = RetryPolicy::default();
        let backoff = Backoff::new(
            self.base_ms.unwrap_or(d.backoff.base_ms()),
            self.cap_ms.unwrap_or(d.backoff.cap_ms()),
        )?;
        let rules = RetryRules::new(
            (self.statuses).unwrap_or_else(|| d.rules.statuses().to_vec()),
            (self.methods).unwrap_or_else(|| d.rules.methods().to_vec()),
        )?;
        let max_attempts = ATTEMPTS.given("retry.maxAttempts", self.max_attempts)?;
        RetryPolicy {
            rules,
            backoff,
            max_attempts: max_attempts.unwrap_or(d.max_attempts),
            time_budget_ms: self.time_budget_ms.unwrap_or(d.time_budget_ms),
            attempt_timeout_ms: self.attempt_timeout_ms.unwrap_or(d.attempt_timeout_ms),
        }
        .validate()
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

    /// Decides what follows an attempt's `outcome` at `now`. Spends nothing: a retry is
    /// still subject to the budgets, which the gate charges.
    pub(crate) fn decide(
        &self,
        call: &Progress,
        outcome: Outcome,
        now: Millis,
        random: &mut dyn Random,
    ) -> Verdict {
        let Some(kind) = self.rules.retryable(outcome) else {
            return Verdict::Deliver;
        };
        if !call.replayable {
            return Verdict::Deliver;
        }
        if call.attempts >= self.max_attempts {
            return Verdict::Abandon(Reason::Attempts);
        }
        let server_delay = match outcome {
            Outcome::Response { retry_after_ms, .. } => retry_after_ms,
            _ => None,
        };
        let delay_ms = match server_delay {
            Some(delay) if now + delay > call.deadline => {
                return Verdict::Abandon(Reason::RetryAfterExceedsDeadline);
            }
            Some(delay) => delay,
            None => {
                let delay = self.backoff.delay(call.attempts - 1, random);
                if now + delay >= call.deadline {
                    return Verdict::Abandon(call.deadline_reason);
                }
                delay
            }
        };
        Verdict::Retry {
            not_before: now + delay_ms,
            delay_ms,
            kind,
            server_delay: server_delay.is_some(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_false_is_no_retries_and_no_budget_true_the_defaults() {
        let defaults = (Some(RetryPolicy::default()), Some(RefillingConfig::DEFAULT));
        assert_eq!(RetryGiven::toggled(None), Ok(defaults.clone()));
        assert_eq!(RetryGiven::toggled(Some(Toggle::Flag(true))), Ok(defaults));
        assert_eq!(
            RetryGiven::toggled(Some(Toggle::Flag(false))),
            Ok((None, None))
        );
        let no_budget = RetryGiven {
            budget: Some(None),
            ..RetryGiven::default()
        };
        let (policy, budget) = RetryGiven::toggled(Some(Toggle::Given(no_budget))).unwrap();
        assert_eq!((policy, budget), (Some(RetryPolicy::default()), None));
        let bad = RetryGiven {
            budget: Some(Some(RefillingConfig {
                capacity: 0.0,
                ..RefillingConfig::DEFAULT
            })),
            ..RetryGiven::default()
        };
        let refused = RetryGiven::toggled(Some(Toggle::Given(bad))).unwrap_err();
        let expected = "`retry.budget.capacity` must be a finite number >= 1, got 0";
        assert_eq!(refused.to_string(), expected);
    }

    #[test]
    fn a_retry_given_fills_in_the_defaults_and_checks_each_field() {
        assert_eq!(RetryGiven::default().policy(), Ok(RetryPolicy::default()));
        let given = RetryGiven {
            max_attempts: Some(5.0),
            statuses: Some(vec![503]),
            ..RetryGiven::default()
        };
        let policy = given.policy().unwrap();
        assert_eq!(
            (policy.max_attempts, policy.rules.statuses()),
            (5, &[503][..])
        );
        let refused = |given: RetryGiven| given.policy().unwrap_err().to_string();
        let half = RetryGiven {
            max_attempts: Some(1.5),
            ..RetryGiven::default()
        };
        let expected = "Expected `retry.maxAttempts` to be an integer from 1 to 100, got 1.5";
        assert_eq!(refused(half), expected);
        let budget = RetryGiven {
            time_budget_ms: Some(0.0),
            ..RetryGiven::default()
        };
        let expected = "`retry.timeBudgetMs` must be a finite number >= 1, got 0";
        assert_eq!(refused(budget), expected);
    }
    use crate::core::base::random::Seeded;

    fn status(status: u16, retry_after_ms: Option<Millis>) -> Outcome {
        Outcome::Response {
            status,
            retry_after_ms,
        }
    }

    /// A call's first attempt, sent at 0 with the default 60 s budget.
    fn first() -> Progress {
        Progress {
            attempts: 1,
            deadline: 60_000.0,
            deadline_reason: Reason::TimeBudget,
            replayable: true,
        }
    }

    fn decide(policy: &RetryPolicy, call: &Progress, outcome: Outcome, now: Millis) -> Verdict {
        policy.decide(call, outcome, now, &mut Seeded::new(9))
    }

    #[test]
    fn delivers_success_and_final_errors_untouched() {
        let p = RetryPolicy::default();
        for s in [200, 400, 401, 403, 404, 422, 500] {
            assert_eq!(
                decide(&p, &first(), status(s, None), 0.0),
                Verdict::Deliver,
                "{s}"
            );
        }
    }

    #[test]
    fn the_servers_delay_is_used_exactly() {
        let p = RetryPolicy::default();
        assert_eq!(
            decide(&p, &first(), status(429, Some(30_000.0)), 100.0),
            Verdict::Retry {
                not_before: 30_100.0,
                delay_ms: 30_000.0,
                kind: Kind::Throttle,
                server_delay: true,
            }
        );
    }

    #[test]
    fn a_server_delay_longer_than_the_time_left_gives_up_at_once() {
        let p = RetryPolicy::default();
        let call = Progress {
            deadline: 10_000.0,
            ..first()
        };
        assert_eq!(
            decide(&p, &call, status(429, Some(30_000.0)), 50.0),
            Verdict::Abandon(Reason::RetryAfterExceedsDeadline)
        );
        // Exactly at the deadline still fits.
        assert!(matches!(
            decide(&p, &call, status(429, Some(9_950.0)), 50.0),
            Verdict::Retry { .. }
        ));
    }

    #[test]
    fn without_retry_after_the_backoff_is_jittered_under_the_ceiling() {
        let p = RetryPolicy::default();
        let mut delays = Vec::new();
        for seed in 0..200 {
            let v = p.decide(&first(), status(503, None), 0.0, &mut Seeded::new(seed));
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
        for attempts in 1..3 {
            let call = Progress {
                attempts,
                ..first()
            };
            assert!(matches!(
                decide(&p, &call, Outcome::Network, 0.0),
                Verdict::Retry { .. }
            ));
        }
        let call = Progress {
            attempts: 3,
            ..first()
        };
        assert_eq!(
            decide(&p, &call, status(503, None), 0.0),
            Verdict::Abandon(Reason::Attempts)
        );
    }

    #[test]
    fn a_request_that_may_not_be_replayed_is_delivered_not_retried() {
        let p = RetryPolicy::default();
        let call = Progress {
            replayable: false,
            ..first()
        };
        assert_eq!(decide(&p, &call, status(503, None), 0.0), Verdict::Deliver);
        assert_eq!(decide(&p, &call, Outcome::Timeout, 0.0), Verdict::Deliver);
    }

    #[test]
    fn a_backoff_past_the_deadline_gives_up_with_the_deadlines_reason() {
        let p = RetryPolicy::default();
        let call = Progress {
            deadline: 1.0,
            deadline_reason: Reason::Deadline,
            ..first()
        };
        assert_eq!(
            decide(&p, &call, status(503, None), 0.9),
            Verdict::Abandon(Reason::Deadline)
        );
    }

    #[test]
    fn every_reason_has_its_index_and_name() {
        for (i, reason) in Reason::ALL.iter().enumerate() {
            assert_eq!(reason.index(), i);
            assert!(!reason.as_str().is_empty());
        }
    }
}

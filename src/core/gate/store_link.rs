//! A gate's side of a shared store, the authority of a gate whose state other processes share:
//! operations go out as actions, answers come back later, and every operation has a time limit.
//! While the store does not answer, the link admits through a fail-safe of its own (a share of
//! the allowance, in memory) or refuses, as configured, and asks the store again after
//! `retryMs`. The gate asks it what it asks any authority
//! (`Authority`, answered in `answers.rs`); the fail-safe is the
//! link's alone.

use std::collections::VecDeque;

mod answers;
pub mod given;

use super::action::OpId;
use super::ids::CallId;
use crate::core::authority::credits::CreditView;
use crate::core::authority::fair::Shares;
use crate::core::authority::memory::MemoryAuthority;
use crate::core::authority::{AdmissionId, Answer, Op, Seen, Transitions};
use crate::core::rules::allowance::{positive, ConfigError, Rate};
use crate::core::rules::budget::RefillingConfig;
use crate::core::rules::credits::Spread;
use crate::core::Millis;

/// What a gate does while the store cannot answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize),
    serde(rename_all = "lowercase")
)]
pub enum OnFailure {
    /// Admit alone at `localShare` of the allowance (a conservative share per process).
    Local,
    /// Refuse calls with reason `store-unavailable`.
    Closed,
}

/// How a gate uses its store.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize),
    serde(rename_all = "camelCase")
)]
pub struct StoreSettings {
    /// How long an operation may take before the store counts as down.
    pub timeout_ms: Millis,
    /// How long after a failure the store is asked again.
    pub retry_ms: Millis,
    /// The fail-safe.
    pub on_failure: OnFailure,
    /// The share of the allowance one process uses alone while the store is down.
    pub local_share: f64,
}

impl StoreSettings {
    /// The defaults: 500 ms, again after 1 s, admit locally at 25%.
    pub const DEFAULT: StoreSettings = StoreSettings {
        timeout_ms: 500.0,
        retry_ms: 1_000.0,
        on_failure: OnFailure::Local,
        local_share: 0.25,
    };

    /// Checks every number; each error names its option.
    pub fn validate(self) -> Result<Self, ConfigError> {
        positive("timeoutMs", self.timeout_ms)?;
        positive("retryMs", self.retry_ms)?;
        if !(self.local_share > 0.0 && self.local_share <= 1.0) {
            return Err(ConfigError::OutOfRange {
                field: "localShare",
                expected: "a number greater than 0 and at most 1",
                got: self.local_share,
            });
        }
        Ok(self)
    }

    /// The allowance one process may use alone while the store is down: the share of the
    /// refill, and of the burst (at least one request).
    pub fn local_rate(&self, rate: Rate) -> Rate {
        let share = self.local_share;
        Rate::new(
            (rate.burst() * share).floor().max(1.0),
            rate.per_second() * share,
        )
        .unwrap_or(rate)
    }
}

/// What an operation in flight is for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Purpose {
    /// Admitting the head of the queue under this admission number.
    Admit(AdmissionId),
    /// Charging `cost` for `call`'s retry.
    Charge {
        /// The retrying call.
        call: CallId,
        /// What it costs (charged to the fail-safe's budget if the store fails).
        cost: f64,
    },
    /// Nothing waits for the answer.
    Tell,
}

/// The store's answer to an operation, and the allowance it held before it: a learning gate of
/// another process may have changed it since this gate last did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StoreReply {
    /// The answer.
    pub answer: Answer,
    /// The allowance the store followed before the operation (`None` if it said none).
    pub stored: Option<Rate>,
    /// The fair order between the processes' queues after it (`None` if it said none).
    pub shares: Option<Shares>,
    /// What it said of the shared spread (`None` if nothing).
    pub credits: Option<CreditView>,
}

/// The gate's view of its store.
#[derive(Debug)]
pub(crate) struct StoreLink {
    settings: StoreSettings,
    /// The whole allowance, for estimates.
    rate: Rate,
    /// Admissions and budget while the store is down.
    fallback: MemoryAuthority,
    /// Operations sent and not yet answered, with their deadlines, in the order sent (so by
    /// number: no hashed table, which would be another copy of its code in the module).
    in_flight: VecDeque<(OpId, Millis, Purpose)>,
    next_op: OpId,
    /// Operations sent and not yet handed to the driver, oldest first.
    outbox: VecDeque<(OpId, Op)>,
    /// The last operation failed and nothing has answered since.
    down: bool,
    /// When the store is asked again, while it is down.
    retry_at: Millis,
    /// An admission is being asked for.
    admitting: bool,
    /// When the store last said the next token would be there.
    pub(super) ready_at: Millis,
    /// The allowance the latest admission was asked with: a wait the store gave for a slower
    /// one than the gate follows by the time it answers is asked again.
    pub(super) asked_with: Rate,
    /// The cooldown as last heard (or set by us).
    cooldown_until: Millis,
    /// Half-rate refill, as last heard.
    slow: bool,
    /// The budget as last heard.
    budget_left: Option<f64>,
    /// Refunds owed to the shared budget; they ride along with the next charge.
    refunds: f64,
    /// The last count heard and not yet told, and when it was heard; it rides along with the
    /// next admission.
    seen: Option<(Seen, Millis)>,
    /// The allowance the store held before the latest answer, not yet looked at.
    pub(super) stored: Option<Rate>,
    /// The shared spread as the store last told it, and when (this process's clock).
    heard_credits: Option<(CreditView, Millis)>,
    /// The store went down since the fail-safe last took up the spread: it starts from what
    /// was heard, at its share.
    spread_alone: bool,
    /// Credits spent while alone, not yet told to the store, with the spread's settings.
    spent_alone: Option<(f64, Spread)>,
    calls: u64,
    failures: u64,
}

impl StoreLink {
    /// A link for a gate with `rate` and `budget`, up until it fails.
    pub(super) fn new(
        settings: StoreSettings,
        rate: Rate,
        budget: Option<RefillingConfig>,
        now: Millis,
    ) -> StoreLink {
        StoreLink {
            fallback: MemoryAuthority::new(settings.local_rate(rate), budget, now),
            settings,
            rate,
            in_flight: VecDeque::new(),
            next_op: 0,
            outbox: VecDeque::new(),
            down: false,
            retry_at: f64::NEG_INFINITY,
            admitting: false,
            ready_at: f64::NEG_INFINITY,
            asked_with: rate,
            cooldown_until: 0.0,
            slow: false,
            budget_left: budget.map(|b| b.capacity),
            refunds: 0.0,
            seen: None,
            stored: None,
            heard_credits: None,
            spread_alone: false,
            spent_alone: None,
            calls: 0,
            failures: 0,
        }
    }

    /// The settings.
    pub(super) fn settings(&self) -> StoreSettings {
        self.settings
    }

    /// The whole allowance.
    pub(super) fn rate(&self) -> Rate {
        self.rate
    }

    /// Whether the last operation failed and nothing has answered since.
    pub(super) fn is_down(&self) -> bool {
        self.down
    }

    /// Whether the gate admits alone (at its share) because the store is down.
    fn alone(&self) -> bool {
        self.down && self.settings.on_failure == OnFailure::Local
    }

    /// While the store is down: whether to ask it again now (a ping, while admissions go on
    /// alone); then not again for `retryMs`.
    fn ping_due(&mut self, now: Millis) -> bool {
        if !self.down || now < self.retry_at {
            return false;
        }
        self.retry_at = now + self.settings.retry_ms;
        true
    }

    /// Sends `op` at `now` for `purpose`: it waits in the outbox for the gate to hand it to
    /// the driver.
    pub(super) fn send(&mut self, now: Millis, purpose: Purpose, op: Op) {
        let id = self.next_op;
        self.next_op += 1;
        self.calls += 1;
        let deadline = now + self.settings.timeout_ms;
        self.in_flight.push_back((id, deadline, purpose));
        if let Purpose::Admit(_) = purpose {
            self.admitting = true;
        }
        self.outbox.push_back((id, op));
    }

    fn take(&mut self, id: OpId) -> Option<Purpose> {
        let at = self
            .in_flight
            .binary_search_by_key(&id, |&(id, ..)| id)
            .ok()?;
        let (_, _, purpose) = self.in_flight.remove(at)?;
        if let Purpose::Admit(_) = purpose {
            self.admitting = false;
        }
        Some(purpose)
    }

    /// The store answered `id` at `now`: what it was for (`None` if it had been abandoned),
    /// and whether the store is back up after being down.
    pub(super) fn answered(
        &mut self,
        now: Millis,
        id: OpId,
        reply: &StoreReply,
    ) -> (Option<Purpose>, bool) {
        if let Some(view) = reply.credits {
            self.heard_credits = Some((view, now));
        }
        let Some(purpose) = self.take(id) else {
            return (None, false);
        };
        if reply.stored.is_some() {
            self.stored = reply.stored;
        }
        match reply.answer {
            Answer::Cooldown {
                cooldown_ms: _,
                slow,
            } => self.slow = slow,
            Answer::Charged(left) | Answer::Refused(left) => self.budget_left = Some(left),
            _ => {}
        }
        let back = std::mem::replace(&mut self.down, false);
        if let Some((credits, spread)) = self.spent_alone.take() {
            // The shared bucket counts what was spent alone: not spent again, not learned from.
            self.send(now, Purpose::Tell, Op::Spent { spread, credits });
        }
        (Some(purpose), back)
    }

    /// Operation `id` failed at `now` (an error, or no answer in time): the store is down for
    /// `retryMs`. What it was for, and whether the store just went down.
    pub(super) fn failed(&mut self, now: Millis, id: OpId) -> (Option<Purpose>, bool) {
        let Some(purpose) = self.take(id) else {
            return (None, false);
        };
        self.failures += 1;
        self.retry_at = now + self.settings.retry_ms;
        let went = !std::mem::replace(&mut self.down, true);
        self.spread_alone |= went;
        (Some(purpose), went)
    }

    /// The shared spread as the store last told it, its times from `now`: the fleet's figures
    /// (`None` before the store said any).
    pub(super) fn heard_credits(&self, now: Millis) -> Option<CreditView> {
        let (view, at) = self.heard_credits?;
        let ago = now - at;
        Some(CreditView {
            end_ms: view.end_ms - ago,
            next_ms: view.next_ms.map(|ms| (ms - ago).max(0.0)),
            ..view
        })
    }

    /// A charge of `cost` the store failed to answer: whether the fail-safe's budget pays.
    pub(super) fn charge_alone(&mut self, now: Millis, cost: f64) -> bool {
        let answer = self.fallback.apply(now, &Op::Charge { cost, refund: 0.0 });
        matches!(answer, Answer::Charged(_))
    }

    /// Operations whose time is up at `now`, oldest first.
    pub(super) fn overdue(&self, now: Millis) -> Vec<OpId> {
        let late = self
            .in_flight
            .iter()
            .filter(|(_, deadline, _)| *deadline <= now);
        late.map(|&(id, ..)| id).collect()
    }

    /// When the next operation's time is up, if any is in flight.
    // Never inlined: one copy for its callers (smaller gzipped).
    #[inline(never)]
    pub(super) fn next_deadline(&self) -> Option<Millis> {
        self.in_flight.iter().map(|&(_, d, _)| d).reduce(f64::min)
    }

    /// An estimate of when the caller with `ahead` others in front could be admitted: the
    /// store's last word on the next token and the cooldown, then one token interval each.
    fn estimate(&self, now: Millis, ahead: usize) -> Millis {
        let interval = self.rate.ms_per_token() * if self.slow { 2.0 } else { 1.0 };
        self.ready_at.max(now).max(self.cooldown_until) + ahead as f64 * interval
    }
}

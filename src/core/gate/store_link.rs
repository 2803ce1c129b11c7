//! A gate's side of a shared store, the authority of a gate whose state other processes share:
//! operations go out as actions, answers come back later, and every operation has a time limit.
//! While the store does not answer, the link admits through a fail-safe of its own (a share of
//! the allowance, in memory) or refuses, as configured, and asks the store again after
//! `retryMs`. The gate asks it what it asks any authority ([`Authority`]); the fail-safe is
//! the link's alone.

use std::collections::{HashMap, VecDeque};

use super::action::OpId;
use super::{Admission, Authority, CallId, Held};
use crate::core::authority::fair::{Shares, Turn};
use crate::core::authority::memory::MemoryAuthority;
use crate::core::authority::{AdmissionId, Answer, Head, Op, Remaining, Seen, Transitions};
use crate::core::base::map::IdHasher;
use crate::core::rules::allowance::{positive, ConfigError, Rate};
use crate::core::rules::bucket::Count;
use crate::core::rules::budget::RefillingConfig;
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
}

/// The gate's view of its store.
#[derive(Debug)]
pub(crate) struct StoreLink {
    settings: StoreSettings,
    /// The whole allowance, for estimates.
    rate: Rate,
    /// Admissions and budget while the store is down.
    fallback: MemoryAuthority,
    in_flight: HashMap<OpId, (Millis, Purpose), std::hash::BuildHasherDefault<IdHasher>>,
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
            in_flight: HashMap::default(),
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
        self.in_flight.insert(id, (deadline, purpose));
        if let Purpose::Admit(_) = purpose {
            self.admitting = true;
        }
        self.outbox.push_back((id, op));
    }

    fn take(&mut self, id: OpId) -> Option<Purpose> {
        let (_, purpose) = self.in_flight.remove(&id)?;
        if let Purpose::Admit(_) = purpose {
            self.admitting = false;
        }
        Some(purpose)
    }

    /// The store answered `id`: what it was for (`None` if it had been abandoned), and
    /// whether the store is back up after being down.
    pub(super) fn answered(&mut self, id: OpId, reply: &StoreReply) -> (Option<Purpose>, bool) {
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
        (Some(purpose), went)
    }

    /// A charge of `cost` the store failed to answer: whether the fail-safe's budget pays.
    pub(super) fn charge_alone(&mut self, now: Millis, cost: f64) -> bool {
        let answer = self.fallback.apply(now, &Op::Charge { cost, refund: 0.0 });
        matches!(answer, Answer::Charged(_))
    }

    /// Operations whose time is up at `now`, oldest first.
    pub(super) fn overdue(&self, now: Millis) -> Vec<OpId> {
        let mut late: Vec<OpId> = self
            .in_flight
            .iter()
            .filter(|(_, (deadline, _))| *deadline <= now)
            .map(|(&id, _)| id)
            .collect();
        late.sort_unstable();
        late
    }

    /// When the next operation's time is up, if any is in flight.
    pub(super) fn next_deadline(&self) -> Option<Millis> {
        self.in_flight.values().map(|(d, _)| *d).reduce(f64::min)
    }

    /// An estimate of when the caller with `ahead` others in front could be admitted: the
    /// store's last word on the next token and the cooldown, then one token interval each.
    fn estimate(&self, now: Millis, ahead: usize) -> Millis {
        let interval = self.rate.ms_per_token() * if self.slow { 2.0 } else { 1.0 };
        self.ready_at.max(now).max(self.cooldown_until) + ahead as f64 * interval
    }
}

impl Authority for StoreLink {
    /// While the store is down the fail-safe admits, at its share, and now and then the store
    /// is asked again. Otherwise the store is asked for as many of the queue as `want`, not a
    /// moment early: asking before its token is there costs a round trip for a "wait".
    fn admit(
        &mut self,
        now: Millis,
        id: AdmissionId,
        turn: Turn,
        want: u32,
        learning: bool,
        account: bool,
    ) -> Admission {
        if self.alone() {
            if self.ping_due(now) {
                let ping = Op::Feedback {
                    cooldown_ms: None,
                    remaining: None,
                };
                self.send(now, Purpose::Tell, ping);
            }
            let fallback = &mut self.fallback;
            return Authority::admit(fallback, now, id, turn, want, learning, account);
        }
        if self.admitting || now < self.ready_at {
            return Admission::NotYet;
        }
        let seen = self.seen.take().map(|(seen, at)| seen.aged(now - at));
        let op = Op::Admit {
            id,
            want,
            seen,
            account,
            head: Some(Head {
                waited_ms: now - turn.since,
                lane: turn.lane,
                waiting: turn.waiting,
            }),
        };
        self.send(now, Purpose::Admit(id), op);
        self.asked_with = self.rate;
        Admission::Asked
    }

    fn predict(&mut self, now: Millis, ahead: usize) -> Millis {
        match self.alone() {
            true => Authority::predict(&mut self.fallback, now, ahead),
            false => self.estimate(now, ahead),
        }
    }

    fn head_due(&mut self, now: Millis) -> Option<Millis> {
        if self.alone() {
            let fallback = Authority::predict(&mut self.fallback, now, 0);
            return Some(fallback.min(self.retry_at));
        }
        (!self.admitting).then(|| self.estimate(now, 0))
    }

    /// Where others share the state, nobody can say: no, unless the fail-safe admits alone.
    fn ready_by(&mut self, now: Millis, at: Millis) -> bool {
        self.alone() && Authority::ready_by(&mut self.fallback, now, at)
    }

    fn refusing(&self, now: Millis) -> bool {
        self.down && self.settings.on_failure == OnFailure::Closed && now < self.retry_at
    }

    fn cooldown_until(&mut self) -> Millis {
        let fallback = Authority::cooldown_until(&mut self.fallback);
        self.cooldown_until.max(fallback)
    }

    fn held(&mut self) -> Held {
        if self.alone() {
            return self.fallback.held();
        }
        Held {
            cooldown_until: self.cooldown_until,
            slow: self.slow,
            retry_budget: self.budget_left,
        }
    }

    /// The fail-safe hears it too, should the store go down; the store, unless it is down.
    fn tell(&mut self, now: Millis, op: Op) {
        self.fallback.apply(now, &op);
        if let Op::ClearCooldown = op {
            self.cooldown_until = 0.0;
        }
        if !self.down {
            self.send(now, Purpose::Tell, op);
        }
    }

    /// A cooldown is told at once, so every process holds; a remaining count paces
    /// admissions, so it rides along with the next one rather than cost a round trip of its
    /// own.
    fn observe(
        &mut self,
        now: Millis,
        cooldown_ms: Option<Millis>,
        remaining: Option<Remaining>,
        heard: f64,
    ) {
        let op = Op::Feedback {
            cooldown_ms,
            remaining,
        };
        // The fail-safe holds too, should the store go down during the cooldown.
        self.fallback.apply(now, &op);
        if let Some(ms) = cooldown_ms {
            self.cooldown_until = self.cooldown_until.max(now + ms);
        }
        if cooldown_ms.is_none() {
            let heard = Some(heard);
            self.seen = remaining.map(|r| (Seen::Remaining(Remaining { heard, ..r }), now));
        } else if !self.down {
            self.seen = None;
            self.send(now, Purpose::Tell, op);
        }
    }

    /// With the store up, a success's refund rides along with the next charge: it costs no
    /// round trip.
    fn credit(&mut self, now: Millis, refund: f64) {
        match self.alone() {
            true => Authority::credit(&mut self.fallback, now, refund),
            false => self.refunds += refund,
        }
    }

    fn charge(&mut self, now: Millis, call: CallId, cost: f64) -> Option<bool> {
        if self.alone() {
            return Some(self.charge_alone(now, cost));
        }
        let refund = std::mem::take(&mut self.refunds);
        self.send(
            now,
            Purpose::Charge { call, cost },
            Op::Charge { cost, refund },
        );
        None
    }

    /// The store hears the allowance with the next operation of any kind (each carries it;
    /// `gate.lua` refills at the old one up to then, as `TokenBucket::retune` does) and the
    /// count with the next admission; the fail-safe follows the allowance at its share.
    fn tune(&mut self, now: Millis, rate: Rate, count: Option<(Count, f64)>) {
        let faster = rate.per_second() > self.rate.per_second();
        self.rate = rate;
        let share = self.settings.local_rate(rate);
        Authority::tune(&mut self.fallback, now, share, None);
        if let Some((count, at)) = count {
            self.seen = Some((Seen::Count(count, at), now));
        }
        if faster || count.is_some() {
            // The store's last wait was for the old allowance: ask again.
            self.ready_at = f64::NEG_INFINITY;
        }
    }

    fn shared_rate(&mut self) -> Option<Rate> {
        self.stored.take()
    }

    fn install_budget(&mut self, config: RefillingConfig) {
        Authority::install_budget(&mut self.fallback, config);
        self.budget_left.get_or_insert(config.capacity);
    }

    /// The store keeps the budget.
    fn local_budget_left(&mut self) -> Option<f64> {
        None
    }

    fn cap_budget(&mut self, _left: f64) {}

    /// Success refunds not yet carried to the store go with the gate: the shared budget only
    /// ever errs low (fewer retries), and a gate kept for them would never go.
    fn idle(&mut self, now: Millis) -> bool {
        self.next_deadline().is_none() && Authority::idle(&mut self.fallback, now)
    }

    fn outgoing(&mut self) -> Option<(OpId, Op)> {
        self.outbox.pop_front()
    }

    fn store_counts(&self) -> Option<(u64, u64, bool)> {
        Some((self.calls, self.failures, !self.down))
    }

    fn link(&mut self) -> Option<&mut StoreLink> {
        Some(self)
    }
}

//! The monthly quota: one `GET /usage` probe at a time for the whole gate, admitted through the
//! queue like any call (so its own 429 sets the cooldown), spaced after an answer that confirmed
//! nothing, and a terminal state once it confirms the quota is spent.

use std::cell::RefCell;
use std::rc::Rc;

use super::action::{End, Event, GateAction};
use super::call::{CallSpec, Stage};
use super::ids::CallId;
use super::Gate;
use crate::core::authority::Op;
use crate::core::rules::batch::Batch;
use crate::core::rules::quota::{QuotaState, Usage};
use crate::core::Millis;

/// The probe's time limit, from joining the queue to the end of its response.
pub(crate) const PROBE_BUDGET_MS: Millis = 30_000.0;

/// How long a spent quota with no known period end stays closed in a shared store; the
/// caller's `resetQuota()` reopens it sooner.
pub(super) const UNKNOWN_PERIOD_MS: Millis = 86_400_000.0;

impl Gate {
    /// Starts the one probe, suspicion raised by `origin`'s response.
    pub(super) fn start_probe(&mut self, now: Millis, origin: CallId) {
        if self.busy.probe.is_some() {
            return;
        }
        let spec = CallSpec {
            batch: Some(Rc::new(RefCell::new(Batch {
                deadline: now + self.probe_budget(origin),
                budget: None,
            }))),
            ..CallSpec::default()
        };
        let probe = self.make(now, spec, true);
        self.busy.probe = Some(probe);
        self.actions
            .push_back(GateAction::StartProbe { probe, origin });
        self.join(now, probe);
    }

    /// The time limit of a probe or reading `origin`'s call set off: [`PROBE_BUDGET_MS`], or
    /// the call's `attemptTimeoutMs` when shorter (the caller waits no longer for one attempt;
    /// a `/usage` that never answers holds calls no longer than that).
    pub(super) fn probe_budget(&self, origin: CallId) -> Millis {
        let policy = self
            .busy
            .calls
            .get(origin)
            .and_then(|c| c.spec.policy.as_ref());
        policy.map_or(PROBE_BUDGET_MS, |p| {
            p.attempt_timeout_ms.min(PROBE_BUDGET_MS)
        })
    }

    /// The probe's `/usage` answer, as read (`None`: no usable answer).
    pub fn usage(&mut self, now: Millis, probe: CallId, usage: Option<Usage>) {
        let reading = self
            .busy
            .calls
            .get(probe)
            .is_some_and(|c| c.probe && c.stage == Stage::ReadingUsage);
        if !reading {
            return;
        }
        if self.is_reading(probe) {
            self.finish_reading(now, probe, usage);
        } else {
            self.finish_probe(now, usage);
        }
        self.settle(now, probe, End::Deliver);
    }

    /// The probe is over: confirmed exhaustion closes the gate (here and, with a store, for
    /// every process) and fails everyone in queue; the calls that awaited the answer go on.
    pub(super) fn finish_probe(&mut self, now: Millis, usage: Option<Usage>) {
        if self.busy.probe.take().is_none() {
            return;
        }
        let state = self.quota.probed(now, usage);
        let exhausted = matches!(state, QuotaState::Exhausted { .. });
        self.hear_untold(now, !exhausted);
        self.actions.push_back(GateAction::Event(Event::QuotaProbe {
            exhausted,
            answered: usage.is_some(),
        }));
        if let QuotaState::Exhausted { until } = state {
            let ms = until.map_or(UNKNOWN_PERIOD_MS, |u| (u - now).max(1.0));
            self.close_quota(now, ms);
            self.drain(now, &|_| End::Exhausted { until });
        }
        for call in std::mem::take(&mut self.busy.awaiting_probe) {
            let next = match self.busy.calls.get(call).map(|c| &c.stage) {
                Some(Stage::AwaitingProbe { next }) => *next,
                _ => continue,
            };
            self.proceed(now, call, next);
        }
    }

    /// Records the closure where the state lives, so every process sharing it fails fast.
    pub(super) fn close_quota(&mut self, now: Millis, ms: Millis) {
        self.tell(now, Op::Quota { ms });
    }

    /// The authority says the quota is closed for `ms` more (another process confirmed it):
    /// everyone in queue fails fast, and so will newcomers until then.
    pub(super) fn quota_closed(&mut self, now: Millis, ms: Millis) {
        let until = Some(now + ms);
        self.quota.close(until);
        self.hear_untold(now, false);
        self.drain(now, &|_| End::Exhausted { until });
    }
}

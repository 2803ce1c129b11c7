//! The spread in the gate (#37): a `/usage` reading on the key's first call and then every
//! `refreshMs` while calls come, sent as the quota's probe is (a call of the gate's own at the
//! front of the queue); and the credit each call needs before its allowance token. Calls wait
//! for the first reading only; if it has no usable answer they go on unpaced. A lane with
//! `reserve: true` takes from the reserve what the spread has not, and goes before a head that
//! waits for credit.

use std::cell::RefCell;
use std::rc::Rc;

use super::action::GateAction;
use super::call::CallSpec;
use super::ids::CallId;
use super::probe::PROBE_BUDGET_MS;
use super::queue::Place;
use super::Gate;
use crate::core::rules::allowance::ConfigError;
use crate::core::rules::batch::Batch;
use crate::core::rules::credits::{Costs, Spread};
use crate::core::rules::quota::Usage;
use crate::core::rules::spending::{CreditFigures, Spending};
use crate::core::Millis;

/// What the head of the queue may do, as far as credit goes.
pub(super) enum Credit {
    /// Go, when the allowance has its token.
    Go,
    /// A reading was started now: it goes first.
    Reading,
    /// Wait for credit.
    Wait,
}

impl Gate {
    /// Paces the gate's calls to its key's billing period with `spread` (checked here), their
    /// costs in credits as `costs` says. One process's for now: refused for a gate whose
    /// state the process's threads or a store share.
    pub fn spreading(mut self, spread: Spread, costs: Costs) -> Result<Gate, ConfigError> {
        if self.threads || self.authority.link().is_some() {
            return Err(ConfigError::Unsupported {
                field: "quota.spread",
                with: "is for one process for now: not with `threads` or `store`",
            });
        }
        self.spending = Some(Box::new(Spending::new(spread.validate()?, costs)));
        Ok(self)
    }

    /// The spread's figures, when the gate spreads.
    pub(super) fn credit_figures(&mut self, now: Millis) -> Option<CreditFigures> {
        let waiting = match self.credit_wait(now) {
            Some(_) => self.queue.len(),
            None => 0,
        };
        Some(self.spending.as_ref()?.figures(now, waiting))
    }

    /// The settings it spreads with, when it does.
    pub fn spread(&self) -> Option<Spread> {
        self.spending.as_deref().map(Spending::spread)
    }

    /// Whether `head` may go as far as credit goes, starting a reading when one is due (with
    /// `head`'s request beside it). The gate's own calls and account calls spend no credit.
    pub(super) fn credit_for(&mut self, now: Millis, head: CallId) -> Credit {
        let (Some(c), Some(spending)) = (self.calls.get(head), &mut self.spending) else {
            return Credit::Go;
        };
        if c.probe || c.spec.account {
            return Credit::Go;
        }
        if self.reading.is_none() && spending.reading_due(now) {
            self.start_reading(now, head);
            return Credit::Reading;
        }
        match spending.ready(now, c.spec.route.as_deref(), c.spec.lane.reserve) {
            Ok(()) => Credit::Go,
            Err(_) => Credit::Wait,
        }
    }

    /// The call admitted next: the head of the queue; or, when the head waits for credit, the
    /// first of the lanes that draw on the reserve, when the reserve has its credits (live
    /// calls are not held behind background calls the spread has no credit for).
    pub(super) fn next_up(&mut self, now: Millis) -> Option<Place> {
        let calls = &self.calls;
        let head = self.queue.front(|p| Gate::live(calls, p))?;
        if self.spending.is_none() || self.credit_ready(now, head.call) {
            return Some(head);
        }
        let calls = &self.calls;
        match self.queue.reserve_front(|p| Gate::live(calls, p)) {
            Some(other) if self.credit_ready(now, other.call) => Some(other),
            _ => Some(head),
        }
    }

    /// When the call up next that waits for credit should look again (`None`: it does not
    /// wait for credit): when its credits come, or when the next reading is due, whichever is
    /// first; infinite while the reading it waits for is out.
    pub(super) fn credit_wait(&mut self, now: Millis) -> Option<Millis> {
        let head = self.next_up(now)?;
        let c = self.calls.get(head.call)?;
        let spending = self.spending.as_mut()?;
        if c.probe || c.spec.account {
            return None;
        }
        let route = c.spec.route.as_deref();
        let at = spending.ready(now, route, c.spec.lane.reserve).err()?;
        // A reading due now starts at the next admission (this wake-up comes after one that
        // could not start it: something else holds the queue, and its end wakes the gate).
        let next = spending.next_reading();
        match self.reading {
            None if next > now => Some(at.min(next)),
            _ => Some(at),
        }
    }

    /// Whether `call` has its credits at `now` (it spends none, or the gate does not spread).
    pub(super) fn credit_ready(&mut self, now: Millis, call: CallId) -> bool {
        let (Some(c), Some(spending)) = (self.calls.get(call), &mut self.spending) else {
            return true;
        };
        let reserve = c.spec.lane.reserve;
        c.probe
            || c.spec.account
            || spending
                .ready(now, c.spec.route.as_deref(), reserve)
                .is_ok()
    }

    /// When `call`, joining behind `ahead` others, could have its credits (minus infinity
    /// when it spends none: nothing to wait for).
    pub(super) fn predict_credit(&mut self, now: Millis, ahead: usize, call: CallId) -> Millis {
        let (Some(c), Some(spending)) = (self.calls.get(call), &mut self.spending) else {
            return Millis::NEG_INFINITY;
        };
        if c.probe || c.spec.account {
            return Millis::NEG_INFINITY;
        }
        spending.predict(now, ahead, c.spec.route.as_deref(), c.spec.lane.reserve)
    }

    /// `call` is admitted at `now`: a reading goes out, or a call takes its credits.
    pub(super) fn spend_credit(&mut self, now: Millis, call: CallId) {
        let (Some(c), Some(spending)) = (self.calls.get(call), &mut self.spending) else {
            return;
        };
        if self.reading == Some(call) {
            spending.sent();
        } else if !(c.probe || c.spec.account) {
            spending.take(now, c.spec.route.as_deref(), c.spec.lane.reserve);
        }
    }

    /// Starts a reading, beside `origin`'s request: an account call of the gate's own, at the
    /// front of the queue, bounded as the probe is.
    fn start_reading(&mut self, now: Millis, origin: CallId) {
        let spec = CallSpec {
            batch: Some(Rc::new(RefCell::new(Batch {
                deadline: now + PROBE_BUDGET_MS,
                budget: None,
            }))),
            account: true,
            ..CallSpec::default()
        };
        let reading = self.make(now, spec, true);
        self.reading = Some(reading);
        self.actions.push_back(GateAction::StartProbe {
            probe: reading,
            origin,
        });
        self.join(now, reading);
    }

    /// Whether `call` is the reading out.
    pub(super) fn is_reading(&self, call: CallId) -> bool {
        self.reading == Some(call)
    }

    /// The reading `call` is over at `now`, with `usage` (`None`: no usable answer).
    pub(super) fn finish_reading(&mut self, now: Millis, call: CallId, usage: Option<Usage>) {
        if self.reading != Some(call) {
            return;
        }
        self.reading = None;
        if let Some(spending) = &mut self.spending {
            spending.read(now, usage);
        }
    }
}

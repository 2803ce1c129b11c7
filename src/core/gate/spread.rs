//! The spread in the gate (#37): a `/usage` reading on the key's first call and then every
//! `refreshMs` while calls come, sent as the quota's probe is (a call of the gate's own at the
//! front of the queue); and the credit each call needs before its allowance token. Calls wait
//! for the first reading only; if it has no usable answer they go on unpaced. A lane with
//! `reserve: true` takes from the reserve what the spread has not, and goes before a head that
//! waits for credit.
//!
//! With a store or worker threads the spread is the fleet's, or the process's: the credit
//! bucket lives beside the allowance (`authority/credits.rs`, `gate.lua`, the threads' slot),
//! each admission asks for its call's credits with its token (its stated cost, or 1 that the
//! shared state scales by what its readings taught it: `rules/scale.rs`), the admission that
//! finds a reading due claims it (this gate then reads, and tells the answer), and the gate
//! decides nothing of credit itself.

use std::cell::RefCell;
use std::rc::Rc;

use super::action::End;
use super::action::GateAction;
use super::call::CallSpec;
use super::ids::CallId;
use super::probe::UNKNOWN_PERIOD_MS;
use super::queue::Place;
use super::Gate;
use crate::core::authority::credits::{Reading, Spend};
use crate::core::authority::Op;
use crate::core::rules::allowance::ConfigError;
use crate::core::rules::batch::Batch;
use crate::core::rules::credits::{Costs, Spread, CREDIT_WAIT_MS};
use crate::core::rules::policy::Reason;
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
    /// costs in credits as `costs` says: in this gate, or in the state its threads or a store
    /// share.
    pub fn spreading(mut self, spread: Spread, costs: Costs) -> Result<Gate, ConfigError> {
        self.shares_credits = self.threads || self.authority.link().is_some();
        self.spending = Some(Box::new(Spending::new(spread.validate()?, costs)));
        Ok(self)
    }

    /// The credits `call` asks the shared spread for with its token (none: the gate keeps no
    /// shared spread, or the call spends no credit).
    pub(super) fn credits_asked(&self, call: CallId) -> Option<Spend> {
        let (Some(c), Some(spending)) = (self.busy.calls.get(call), &self.spending) else {
            return None;
        };
        if !self.shares_credits || c.probe || c.spec.account {
            return None;
        }
        let route = c.spec.route.as_deref();
        Some(Spend {
            cost: spending.cost(route),
            stated: spending.is_stated(route),
            reserve: c.spec.lane.reserve,
            spread: spending.spread(),
        })
    }

    /// The shared spread answered that `origin`'s admission claimed the reading due.
    pub(super) fn reading_claimed(&mut self, now: Millis, origin: CallId) {
        if self.busy.reading.is_none() {
            self.start_reading(now, origin);
        }
    }

    /// The spread's figures, when the gate spreads.
    pub(super) fn credit_figures(&mut self, now: Millis) -> Option<CreditFigures> {
        let waiting = match self.credit_wait(now) {
            Some(_) => self.busy.queue.len(),
            None => 0,
        };
        let mut figures = self.spending.as_ref()?.figures(now, waiting);
        // Shared (threads, a store), the figures are the shared bucket's: with a store, as it
        // last told them.
        if let Some((used, limit, per_ms)) = self.authority.credits(now) {
            if self.shares_credits && limit > 0.0 {
                figures.used = used;
                figures.limit = limit;
                figures.per_hour = per_ms * 3_600_000.0;
            }
        }
        if let Some(view) = self.authority.link().and_then(|l| l.heard_credits(now)) {
            figures.period_end = Some(now + view.end_ms);
        }
        Some(figures)
    }

    /// Its spread, as a forgotten gate leaves it (the bucket and what costs it learned;
    /// where threads or a store share the bucket, that stays with them).
    pub(crate) fn take_spending(&mut self) -> Option<Box<Spending>> {
        self.spending.take()
    }

    /// Goes on with `spending`, what its credential's forgotten gate left, when it spreads
    /// with the same settings and stated costs (a wrapper that states others starts over).
    pub(crate) fn resume_spending(&mut self, spending: Box<Spending>) {
        if let Some(mine) = &self.spending {
            if mine.spread() == spending.spread() && mine.stated() == spending.stated() {
                self.spending = Some(spending);
            }
        }
    }

    /// The shared spread told the head to wait until `at` for its credits (or its token): it
    /// looks again then, and the calls behind it wait at least as long. Those with no
    /// deadline of their own (no `maxWaitMs`, no batch) that would wait past the spread's own bound
    /// ([`CREDIT_WAIT_MS`] from their start) hear `credit-wait` now, `at` as when to look
    /// again. True when one did.
    pub(super) fn told_to_wait(&mut self, now: Millis, at: Millis) -> bool {
        self.credit_at = at;
        // A cooldown, or a token a minute apart, would explain the wait as well: no bound then.
        let token_ms = 1_000.0 / self.rate.per_second();
        if self.cooldown_until() >= at || token_ms >= CREDIT_WAIT_MS {
            return false;
        }
        let refused = self.refuse_queued(now, |gate, call, _| {
            let c = gate.busy.calls.get(call)?;
            let unbounded = c.first_sent.is_none() && c.admission_deadline().0.is_infinite();
            let hopeless = unbounded && !c.probe && !c.spec.account;
            (hopeless && at > c.started + CREDIT_WAIT_MS).then_some((Reason::CreditWait, Some(at)))
        });
        refused > 0
    }

    /// The settings it spreads with, when it does.
    pub(crate) fn spread(&self) -> Option<Spread> {
        self.spending.as_deref().map(Spending::spread)
    }

    /// Whether `head` may go as far as credit goes, starting a reading when one is due (with
    /// `head`'s request beside it). The gate's own calls and account calls spend no credit.
    pub(super) fn credit_for(&mut self, now: Millis, head: CallId) -> Credit {
        let (Some(c), Some(spending)) = (self.busy.calls.get(head), &mut self.spending) else {
            return Credit::Go;
        };
        if c.probe || c.spec.account || self.shares_credits {
            return Credit::Go;
        }
        if self.busy.reading.is_none() && spending.reading_due(now) {
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
        if self.busy.queue.is_empty() {
            return None;
        }
        let head = self.busy.front()?;
        if self.spending.is_none() || self.shares_credits || self.credit_ready(now, head.call) {
            return Some(head);
        }
        match self.busy.reserve_front() {
            Some(other) if self.credit_ready(now, other.call) => Some(other),
            _ => Some(head),
        }
    }

    /// When the call up next that waits for credit should look again (`None`: it does not
    /// wait for credit): when its credits come, or when the next reading is due, whichever is
    /// first; infinite while the reading it waits for is out.
    pub(super) fn credit_wait(&mut self, now: Millis) -> Option<Millis> {
        if self.shares_credits {
            let head = self.next_up(now)?;
            self.credits_asked(head.call)?;
            return (self.credit_at > now).then_some(self.credit_at);
        }
        let head = self.next_up(now)?;
        let c = self.busy.calls.get(head.call)?;
        let spending = self.spending.as_mut()?;
        if c.probe || c.spec.account {
            return None;
        }
        let route = c.spec.route.as_deref();
        let at = spending.ready(now, route, c.spec.lane.reserve).err()?;
        // A reading due now starts at the next admission (this wake-up comes after one that
        // could not start it: something else holds the queue, and its end wakes the gate).
        let next = spending.next_reading();
        match self.busy.reading {
            None if next > now => Some(at.min(next)),
            _ => Some(at),
        }
    }

    /// Whether `call` has its credits at `now` (it spends none, or the gate does not spread).
    /// Where the spread is shared only the shared state knows: a call that asks it for credits
    /// is not known to have them.
    pub(super) fn credit_ready(&mut self, now: Millis, call: CallId) -> bool {
        if self.shares_credits {
            return self.credits_asked(call).is_none();
        }
        let (Some(c), Some(spending)) = (self.busy.calls.get(call), &mut self.spending) else {
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
    /// when it spends none: nothing to wait for). Where the spread is shared, only what the
    /// shared state last said is known: a head told to wait for credit until then, or a store
    /// that said when a call like the last could next have its credits.
    pub(super) fn predict_credit(&mut self, now: Millis, ahead: usize, call: CallId) -> Millis {
        let (Some(c), Some(spending)) = (self.busy.calls.get(call), &mut self.spending) else {
            return Millis::NEG_INFINITY;
        };
        if c.probe || c.spec.account {
            return Millis::NEG_INFINITY;
        }
        if self.shares_credits {
            return match self.credit_at > now {
                true => self.credit_at,
                false => Millis::NEG_INFINITY,
            };
        }
        spending.predict(now, ahead, c.spec.route.as_deref(), c.spec.lane.reserve)
    }

    /// Whether a new call of `route` at `now` would wait for credit: the spread has not its
    /// credits before those of the calls already in queue. Before the first reading nothing
    /// is known, and nothing is said to wait. Where the threads share the spread, only what
    /// their slot last told the head is known: a head told to wait means a new call would.
    pub(super) fn waits_for_credit(
        &mut self,
        now: Millis,
        route: Option<&str>,
        reserve: bool,
    ) -> bool {
        if self.shares_credits {
            return self.spending.is_some() && self.credit_at > now;
        }
        let ahead = self.busy.queue.len();
        (self.spending.as_mut()).is_some_and(|s| s.predict(now, ahead, route, reserve) > now)
    }

    /// `call` is admitted at `now`: a reading goes out, or a call takes its credits.
    pub(super) fn spend_credit(&mut self, now: Millis, call: CallId) {
        let (Some(c), Some(spending)) = (self.busy.calls.get(call), &mut self.spending) else {
            return;
        };
        if self.shares_credits {
            // The store took the credits with the token.
            return;
        }
        if self.busy.reading == Some(call) {
            spending.sent();
        } else if !(c.probe || c.spec.account) {
            spending.take(now, c.spec.route.as_deref(), c.spec.lane.reserve);
        }
    }

    /// Starts a reading, beside `origin`'s request: an account call of the gate's own, at the
    /// front of the queue, bounded as the probe is (by `origin`'s attempt time limit too).
    fn start_reading(&mut self, now: Millis, origin: CallId) {
        let spec = CallSpec {
            batch: Some(Rc::new(RefCell::new(Batch {
                deadline: now + self.probe_budget(origin),
                budget: None,
            }))),
            account: true,
            ..CallSpec::default()
        };
        let reading = self.make(now, spec, true);
        self.busy.reading = Some(reading);
        self.actions.push_back(GateAction::StartProbe {
            probe: reading,
            origin,
        });
        self.join(now, reading);
    }

    /// Whether `call` is the reading out.
    pub(super) fn is_reading(&self, call: CallId) -> bool {
        self.busy.reading == Some(call)
    }

    /// The reading `call` is over at `now`, with `usage` (`None`: no usable answer).
    pub(super) fn finish_reading(&mut self, now: Millis, call: CallId, usage: Option<Usage>) {
        if self.busy.reading != Some(call) {
            return;
        }
        self.busy.reading = None;
        let Some(spending) = &mut self.spending else {
            return;
        };
        // A reading with no limit above 0 that is not spent (a negative limit) paces nothing:
        // no answer, so calls go on unpaced rather than wait for credit at a pace of 0.
        let usage = usage.filter(|u| u.exhausted() || u.limit > 0.0);
        // This gate's view of the key, for its figures (with a store, as of its own readings).
        spending.read(now, usage);
        if let Some(u) = usage.filter(Usage::exhausted) {
            // A spent quota is terminal, as the quota's probe finds it: nothing waits for
            // credit that cannot come this period.
            self.quota.close(u.period_end);
            let ms = u
                .period_end
                .map_or(UNKNOWN_PERIOD_MS, |e| (e - now).max(1.0));
            self.close_quota(now, ms);
            let until = u.period_end;
            self.drain(now, &|_| End::Exhausted { until });
            return;
        }
        if self.shares_credits {
            let spread = spending.spread();
            let reading = usage.and_then(|u| {
                Some(Reading {
                    used: u.used,
                    limit: u.limit,
                    end_ms: u.period_end? - now,
                })
            });
            self.authority.tell(now, Op::Read { spread, reading });
            self.flush();
        }
    }
}

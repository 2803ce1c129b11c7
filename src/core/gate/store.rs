//! Answers from the shared store, matched to what each operation was for.

use super::action::{Event, GateAction};
use super::admit::OPENING_RECHECK_MS;
use super::call::Stage;
use super::store_link::{Purpose, StoreReply};
use super::Gate;
use crate::core::authority::{Answer, Op};
use crate::core::rules::learn::Learner;
use crate::core::Millis;

impl Gate {
    /// The store answered operation `op` at `now`, or (with `None`) failed or was too late.
    pub(crate) fn store_answered(
        &mut self,
        now: Millis,
        op: super::action::OpId,
        reply: Option<StoreReply>,
    ) {
        let Some(link) = self.authority.link() else {
            return;
        };
        let (purpose, changed) = match &reply {
            Some(reply) => link.answered(now, op, reply),
            None => link.failed(now, op),
        };
        let (answer, shares) = (reply.map(|r| r.answer), reply.and_then(|r| r.shares));
        let credit_next = reply.and_then(|r| r.credits?.next_ms);
        if changed {
            // Back up, the link may have something to tell the store (what it spent alone).
            self.flush();
            let event = if answer.is_some() {
                Event::StoreUp
            } else {
                Event::StoreDown
            };
            self.actions.push_back(GateAction::Event(event));
        }
        let Some(purpose) = purpose else {
            return;
        };
        match (purpose, answer) {
            (Purpose::Admit(id), Some(answer)) => {
                self.store_admission(now, id, answer);
                // When a call like the head's has its credits next: a new call that would wait
                // for them is refused or answered stale at once, as where the spread is local.
                if let Some(ms) = credit_next {
                    self.credit_at = now + ms;
                }
                // The processes' queues follow one fair order (see `authority::order`).
                self.busy.queue.follow(shares.as_ref());
            }
            (Purpose::Charge { call, cost }, answer) => {
                let paid = match answer {
                    Some(answer) => matches!(answer, Answer::Charged(_)),
                    // The store failed: the fail-safe's budget decides.
                    None => self
                        .authority
                        .link()
                        .is_none_or(|link| link.charge_alone(now, cost)),
                };
                let next = match self.busy.calls.get(call).map(|c| &c.stage) {
                    Some(Stage::Charging { next }) => *next,
                    _ => return,
                };
                self.charged(now, call, cost, next, paid);
            }
            (Purpose::Admit(_), None) | (Purpose::Tell, _) => {}
        }
    }

    /// The store's answer to an admission for the head of the queue.
    fn store_admission(&mut self, now: Millis, id: u64, answer: Answer) {
        let Some(link) = self.authority.link() else {
            return;
        };
        match answer {
            Answer::Admitted {
                anchor,
                next_ms,
                admissions,
                seq,
            } => {
                link.ready_at = now + next_ms;
                // Heads may have left while we asked: the tokens go to whoever is at the head
                // now, the first (the one that may anchor the refill) to the first of them. With
                // nobody to take it, a paused refill restarts at once.
                let mut given = 0;
                while given < admissions {
                    let Some(head) = self.busy.front() else {
                        break;
                    };
                    let deadline = self
                        .busy
                        .calls
                        .get(head.call)
                        .map(|c| c.admission_deadline());
                    match deadline {
                        Some((deadline, reason)) if deadline < now => {
                            self.busy.queue.pass(head);
                            self.figures.trouble().abandoned_in_queue += 1;
                            self.give_up(now, head.call, reason);
                        }
                        _ => {
                            let first = given == 0;
                            self.admit(
                                now,
                                head,
                                id + u64::from(given),
                                anchor && first,
                                seq + f64::from(given),
                            );
                            given += 1;
                        }
                    }
                }
                if given == 0 {
                    self.resume_unused(now, id, anchor);
                }
            }
            Answer::Wait(ms) => {
                // Before its first answer a learning gate looks again soon: another process
                // may have heard the allowance's. A wait for an allowance slower than the one
                // the gate has learned (or adopted from the fleet) since it asked is asked again.
                let opening = self.learner.as_deref().is_some_and(Learner::opening);
                let (asked, now_rate) = (link.asked_with, link.rate());
                let outdated =
                    now_rate.per_second() > asked.per_second() || now_rate.burst() > asked.burst();
                link.ready_at = now
                    + match (outdated, opening) {
                        (true, _) => 0.0,
                        (false, true) => ms.min(OPENING_RECHECK_MS),
                        (false, false) => ms,
                    };
                // The credits (or the token) come then: a new call behind waits as long.
                if let Some(head) = self.busy.front() {
                    if self.credits_asked(head.call).is_some() {
                        self.told_to_wait(now, now + ms);
                    }
                }
            }
            Answer::Exhausted(ms) => self.quota_closed(now, ms),
            // This admission claimed the fleet's `/usage` reading: the head's gate reads.
            Answer::Read => {
                if let Some(head) = self.busy.front() {
                    self.reading_claimed(now, head.call);
                }
            }
            _ => {}
        }
    }

    /// An admission nobody could use: restart the refill it paused.
    fn resume_unused(&mut self, now: Millis, id: u64, anchor: bool) {
        let Some(link) = self.authority.link() else {
            return;
        };
        if anchor && !link.is_down() {
            link.send(now, Purpose::Tell, Op::Resume { id });
            self.flush();
        }
    }
}

//! Admission: the head of the queue goes when the authority has a token for it (its own memory,
//! the threads' slot, or the store through its link), one head per poll; and the gate's one
//! wake-up, for the head's token or deadline, a backoff's end, a store operation's time limit.

use super::action::{End, Event, GateAction};
use super::authority::{Admission, Needs};
use super::busy::{live, Due};
use super::call::Stage;
use super::early::EARLY_MS;
use super::ids::CallId;
use super::queue::Place;
use super::spread::Credit;
use super::{Gate, STORE_BATCH};
use crate::core::rules::learn::Learner;

/// How often a learning gate that shares its allowance and has heard no answer yet looks for
/// the one another thread or process heard.
pub(super) const OPENING_RECHECK_MS: Millis = 100.0;

/// A route's scout without an answer this long stops holding its route's calls: as long as a
/// learning gate's opening token takes to come back.
const SCOUT_OVERDUE_MS: Millis = 1_000.0;

/// Whether `call` is a route's scout whose attempt is out.
fn calls_scouting(calls: &crate::core::base::slab::Slab<super::call::Call>, call: CallId) -> bool {
    calls
        .get(call)
        .is_some_and(|c| c.spec.scout && c.stage == Stage::Sending)
}
use crate::core::authority::fair::Turn;
use crate::core::authority::{AdmissionId, Answer};
use crate::core::rules::policy::Reason;
use crate::core::rules::routes::LimiterFeedback;
use crate::core::Millis;

impl Gate {
    /// What the gate already decided and has not handed out, without admitting anyone: the
    /// driver takes it before it makes a call here, whose number may be one an ended call's
    /// settlement still names.
    pub(crate) fn decided(&mut self) -> Option<GateAction> {
        self.actions.pop_front()
    }

    /// The next thing to do, or `None` when there is nothing until the next event or
    /// [`poll_timeout`](Self::poll_timeout). Admissions happen here, one head at a time.
    pub fn poll_action(&mut self, now: Millis) -> Option<GateAction> {
        loop {
            if let Some(action) = self.actions.pop_front() {
                return Some(action);
            }
            if !self.admit_head(now) {
                return None;
            }
        }
    }

    /// Tries to admit the call up next (the head of the queue, or a lane's that draws on the
    /// reserve: see [`next_up`](Self::next_up)). True when that produced an action.
    pub(super) fn admit_head(&mut self, now: Millis) -> bool {
        let Some(head) = self.next_up(now) else {
            return false;
        };
        let Some(call) = self.busy.calls.get(head.call) else {
            return false;
        };
        let (deadline, reason) = call.admission_deadline();
        let account = call.spec.account;
        let turn = Turn {
            since: match call.stage {
                Stage::Queued { since, .. } => since,
                _ => now,
            },
            lane: call.lane_in_queue().map(|id| (id, call.spec.lane.weight)),
            waiting: self.busy.queue.len() as u32,
        };
        // A call let in because its token comes within `maxWaitMs` goes when it comes: a
        // wake-up that comes late (a busy event loop) turns it into no refusal after the wait.
        let in_time = reason == Reason::QueueWait
            && self.ready_by(now, deadline)
            && self.credit_ready(now, head.call);
        if deadline < now && !in_time {
            self.busy.queue.pass(head);
            self.figures.trouble().abandoned_in_queue += 1;
            self.give_up(now, head.call, reason);
            return true;
        }
        if self.fails_closed(now) {
            self.drain(now, &|c| End::abandoned_by(c, Reason::StoreUnavailable));
            return true;
        }
        if self.window_full() || self.held_for_probe(head.call) || self.recalling(now) {
            return false;
        }
        // Credit first: a call waiting for it takes no token.
        match self.credit_for(now, head.call) {
            Credit::Go => {}
            Credit::Reading => return true,
            Credit::Wait => return false,
        }
        self.follow_shared(now);
        if let Some(learner) = &self.learner {
            // The pace grows between 429s by itself.
            let rate = learner.rate(now);
            if rate != self.rate {
                self.rate = rate;
                self.authority.tune(now, rate, None);
            }
        }
        let id = self.next_admission;
        // A learning gate's bucket is an estimate: taken in one go, an estimate too high costs as
        // many 429s as it took. It asks a store for one at a time.
        let want = match (&self.learner, account) {
            (Some(_), _) | (_, true) => 1,
            (None, false) => self.busy.queue.len().clamp(1, STORE_BATCH),
        };
        let learning = self.learner.is_some();
        let needs = Needs {
            account,
            credits: self.credits_asked(head.call),
        };
        let admission = self
            .authority
            .admit(now, id, turn, want as u32, learning, needs);
        self.flush();
        match admission {
            Admission::NotYet => false,
            Admission::Asked => {
                self.next_admission += want as AdmissionId;
                true
            }
            Admission::Answered {
                answer: Answer::Admitted { anchor, seq, .. },
                shares,
            } => {
                self.next_admission += 1;
                self.admit(now, head, id, anchor, seq);
                self.busy.queue.follow(shares.as_ref());
                true
            }
            Admission::Answered {
                answer: Answer::Exhausted(ms),
                ..
            } => {
                self.quota_closed(now, ms);
                true
            }
            Admission::Answered {
                answer: Answer::Read,
                ..
            } => {
                self.reading_claimed(now, head.call);
                true
            }
            Admission::Answered { answer, shares } => {
                self.busy.queue.follow(shares.as_ref());
                if let (Answer::Wait(ms), Some(_)) = (answer, needs.credits) {
                    // The credits (or the token) come then: look again then, not sooner.
                    return self.told_to_wait(now, now + ms);
                }
                false
            }
        }
    }

    /// Whether `head` waits for the quota's probe: from the answer that raised the suspicion
    /// to the probe's end, nothing but account calls is sent (each other would likely be one
    /// more quota 429).
    fn held_for_probe(&self, head: CallId) -> bool {
        let account = self.busy.calls.get(head).is_some_and(|c| c.spec.account);
        self.busy.probe.is_some_and(|probe| probe != head) && !account
    }

    /// Whether the head could have gone by `at` (at most `now`), in this process's memory.
    fn ready_by(&mut self, now: Millis, at: Millis) -> bool {
        self.authority.ready_by(now, at)
    }

    /// Lets the head of the queue go: its attempt is sent now.
    pub(super) fn admit(
        &mut self,
        now: Millis,
        head: Place,
        admission: AdmissionId,
        anchor: bool,
        seq: f64,
    ) {
        self.busy.queue.pop(head);
        self.spend_credit(now, head.call);
        let busy = &mut *self.busy;
        let Some(call) = busy.calls.get_mut(head.call) else {
            return;
        };
        let wait_ms = match call.stage {
            Stage::Queued { since, .. } => Some(now - since),
            _ => None,
        };
        if let Some(wait_ms) = wait_ms {
            self.figures.admission_wait.record(wait_ms);
        }
        self.figures.admitted += 1;
        call.ahead = busy.sending as f64;
        busy.sending += 1;
        let at = busy.out.partition_point(|q| q.0 < seq);
        busy.out.insert(at, (seq, now));
        self.last_seq = self.last_seq.max(seq);
        call.admission = Some((admission, anchor));
        call.seq = Some(seq);
        call.waited = wait_ms.is_some_and(|ms| ms > 1.0);
        let reports_wait = call.spec.reports_wait.then_some(wait_ms).flatten();
        if call.spec.scout {
            busy.scouts.push(Due {
                at: now + SCOUT_OVERDUE_MS,
                call: head.call,
            });
        }
        let timeout_ms = call.send(now);
        if let Some(wait_ms) = reports_wait {
            self.actions.push_back(GateAction::Event(Event::Admitted {
                call: head.call,
                wait_ms,
            }));
        }
        self.actions.push_back(GateAction::Send {
            call: head.call,
            timeout_ms,
            waited_ms: wait_ms.unwrap_or(0.0),
        });
    }

    /// When the gate next needs waking, if ever: the head's admission, or its deadline (the
    /// prediction that let it join may not hold where others share the allowance), the end of
    /// a backoff, a store operation's time limit.
    pub fn poll_timeout(&mut self, now: Millis) -> Option<Millis> {
        let mut due = self.busy.sleepers.peek().map(|(at, _)| at);
        let mut consider = |at: Millis| due = Some(due.map_or(at, |d: Millis| d.min(at)));
        if let Some(busy) = self.busy.made() {
            busy.scouts.retain(|s| calls_scouting(&busy.calls, s.call));
        }
        if let Some(at) = self.busy.scouts.iter().map(|s| s.at).reduce(f64::min) {
            consider(at);
        }
        // Deadlines of calls no longer waiting wake nobody (nor keep an idle gate).
        while let Some((_, &call)) = self.busy.deadlines.peek() {
            let waiting = self
                .busy
                .calls
                .get(call)
                .is_some_and(|c| matches!(c.stage, Stage::Queued { .. }));
            if waiting {
                break;
            }
            self.busy.deadlines.pop();
        }
        if let Some((deadline, _)) = self.busy.deadlines.peek() {
            consider(deadline + EARLY_MS);
        }
        let head = self.next_up(now);
        if let Some(call) = head.and_then(|h| self.busy.calls.get(h.call)) {
            let (deadline, _) = call.admission_deadline();
            if deadline.is_finite() {
                consider(deadline + EARLY_MS);
            }
        }
        let recalling = self.recalling(now);
        if recalling && !self.busy.queue.is_empty() {
            consider(self.recalling_until);
        }
        let credit = self.credit_wait(now);
        if let Some(at) = credit.filter(|at| at.is_finite()) {
            consider(at);
        }
        let held =
            recalling || head.is_some_and(|h| self.held_for_probe(h.call)) || credit.is_some();
        if !self.busy.queue.is_empty() && !self.window_full() && !held {
            if let Some(at) = self.authority.head_due(now) {
                consider(at);
            }
        }
        let link = self.authority.link();
        if let Some(at) = link.as_ref().and_then(|link| link.next_deadline()) {
            consider(at);
        }
        let shared = self.threads || link.is_some();
        let opening = self.learner.as_deref().is_some_and(Learner::opening);
        if shared && opening && !self.busy.queue.is_empty() {
            // Another thread or process may hear the allowance's first answer: look again soon.
            consider(now + OPENING_RECHECK_MS);
        }
        if due.is_none() {
            // Nothing to wake for: an idle gate gives back its calls' room now.
            self.compact();
        }
        due
    }

    /// The gate's timer fired at `now`: backoffs that are over join the queue again, store
    /// operations out of time count as failures. Admissions follow in
    /// [`poll_action`](Self::poll_action).
    pub fn handle_timeout(&mut self, now: Millis) {
        self.figures.wakeups += 1;
        while let Some((at, &call)) = self.busy.sleepers.peek() {
            if at > now + EARLY_MS {
                break;
            }
            self.busy.sleepers.pop();
            let asleep = self
                .busy
                .calls
                .get(call)
                .is_some_and(|c| c.stage == Stage::Sleeping { until: at });
            if asleep {
                self.join(now, call);
            }
        }
        let overdue = self.authority.link().map(|link| link.overdue(now));
        for op in overdue.unwrap_or_default() {
            self.store_answered(now, op, None);
        }
        self.let_go_past_deadlines(now);
        self.scouts_overdue(now);
        if let Some(busy) = self.busy.made() {
            busy.queue.compact(|p| live(&busy.calls, p));
        }
    }

    /// A route's scout that has had no answer for [`SCOUT_OVERDUE_MS`] scouts no more: the
    /// calls behind it go into the queue (as when a scout gets no answer at all), and the next
    /// call of its route scouts again, rather than all of them waiting out its time limit.
    fn scouts_overdue(&mut self, now: Millis) {
        if self.busy.scouts.is_empty() {
            return;
        }
        let (overdue, out): (Vec<Due>, Vec<Due>) = std::mem::take(&mut self.busy.scouts)
            .into_iter()
            .partition(|s| s.at <= now + EARLY_MS);
        self.busy.scouts = out;
        for Due { call, .. } in overdue {
            if !calls_scouting(&self.busy.calls, call) {
                continue;
            }
            if let Some(c) = self.busy.calls.get_mut(call) {
                c.spec.scout = false;
            }
            let (heard, answer) = (LimiterFeedback::Nothing, None);
            self.actions.push_back(GateAction::Route {
                call,
                heard,
                answer,
            });
        }
    }

    /// Lets go of the calls in the queue whose deadline has passed, wherever they wait: a call
    /// behind a head that may wait longer is not kept past its own. The head is left to
    /// [`admit_head`](Self::admit_head), which lets it go when its token came in time.
    fn let_go_past_deadlines(&mut self, now: Millis) {
        let head = self.next_up(now).map(|p| p.call);
        while let Some((at, &call)) = self.busy.deadlines.peek() {
            if at >= now {
                break;
            }
            self.busy.deadlines.pop();
            let Some(c) = self.busy.calls.get(call) else {
                continue;
            };
            let (deadline, reason) = c.admission_deadline();
            if !matches!(c.stage, Stage::Queued { .. }) || deadline >= now || head == Some(call) {
                continue;
            }
            let from = c.lane_in_queue();
            self.busy.queue.left(from);
            self.figures.trouble().abandoned_in_queue += 1;
            self.give_up(now, call, reason);
        }
    }
}

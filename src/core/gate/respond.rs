//! What follows an attempt: the response's headers observed (cooldown, pacing, quota), the
//! policy's verdict, the budgets charged, the unseen body disposed of, and the call settled or
//! sent back to the queue.

use super::action::{End, Event, GateAction};
use super::call::{Next, Stage};
use super::ids::CallId;
use super::Gate;
use crate::core::authority::{Op, Remaining};
use crate::core::parse::feedback::{
    honours_retry_after, parse_feedback, skim_feedback, Feedback, MAX_DELAY_MS,
};
use crate::core::rules::backoff::Backoff;
use crate::core::rules::classify::{not_refused, Failure, Outcome};
use crate::core::rules::learn::{Learner, Sample};
use crate::core::rules::policy::{Reason, Verdict};
use crate::core::rules::quota::{looks_exhausted, QuotaState};
use crate::core::rules::routes::LimiterFeedback;
use crate::core::Millis;

/// Requests that went this close together may reach the server in either order (connections
/// open at their own pace), whatever the round trip.
const REORDER_MS: Millis = 100.0;

/// The attempt a response answers, as learning needs it.
struct Sent {
    call: CallId,
    /// When it went out.
    at: Millis,
    /// Its request's number among every request the allowance admitted.
    seq: f64,
    /// The gate's attempts out when it went (see [`Call::ahead`](super::call::Call::ahead)).
    ahead: f64,
    /// It waited in the queue for its token.
    waited: bool,
    /// It is its route's scout (see [`CallSpec::scout`](super::call::CallSpec::scout)).
    scout: bool,
}

/// Bodies the caller never sees, up to this size, are read to the end (the connection goes
/// back to the pool); larger ones are cancelled (the connection closes now).
const DRAIN_CAP: usize = 64 * 1024;

/// Whether a disposed body `bytes` long (as declared, or read so far) is still drained rather
/// than cancelled.
pub fn drains(bytes: usize) -> bool {
    bytes <= DRAIN_CAP
}

/// What a disposed body read whole said: its JSON `code` and `detail` (none when it was no
/// JSON).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BodyFacts {
    /// The body's `code`.
    pub code: Option<String>,
    /// The body's `detail`.
    pub detail: Option<String>,
}

impl BodyFacts {
    /// Whether the body says the quota is spent (see [`looks_exhausted`]).
    pub(crate) fn names_quota(&self) -> bool {
        looks_exhausted(self.code.as_deref(), self.detail.as_deref())
    }
}

impl Gate {
    /// `call`'s attempt got a response at `now`: its status, and its headers through `header`
    /// (a case-insensitive lookup; the gate reads only the names it needs). `wall_now` gives
    /// Unix time, read only when a header needs it (an HTTP-date, an epoch reset).
    pub fn responded(
        &mut self,
        now: Millis,
        wall_now: &dyn Fn() -> Millis,
        call: CallId,
        status: u16,
        header: &dyn Fn(&str) -> Option<String>,
    ) {
        let Some(c) = self
            .busy
            .calls
            .get(call)
            .filter(|c| c.stage == Stage::Sending)
        else {
            return;
        };
        // Without retries only a 429 is read: the response goes back as it is.
        if !(c.spec.policy.is_some() || c.probe || status == 429 || self.learner.is_some()) {
            return self.responded_with(now, call, status, Feedback::default());
        }
        let wall_now = wall_now();
        let honoured = honours_retry_after(status);
        let lookup = |name: &str| {
            if name == "retry-after" && !honoured {
                None
            } else {
                header(name)
            }
        };
        let parsed = if status == 429 {
            parse_feedback(&lookup, wall_now)
        } else {
            skim_feedback(&lookup, wall_now)
        };
        match parsed {
            Ok(feedback) => self.responded_with(now, call, status, feedback),
            Err(_) => {
                // Too long to represent: hold for the longest we can, and fail the call loudly
                // rather than wait less than the server asked.
                self.failure_cooldown(now, call, status >= 500, true);
                self.resume(now, call);
                let rest = |name: &str| (name != "retry-after").then(|| header(name)).flatten();
                let feedback = parse_feedback(&rest, wall_now).unwrap_or_default();
                self.observe(now, call, status, feedback, Some(MAX_DELAY_MS as Millis));
                if let Some(c) = self.busy.calls.get_mut(call) {
                    c.last_status = Some(status);
                }
                self.settle(now, call, End::RetryAfterTooLarge);
            }
        }
    }

    /// As [`responded`](Self::responded), with the headers already read into `feedback`.
    pub fn responded_with(&mut self, now: Millis, call: CallId, status: u16, feedback: Feedback) {
        let Some(c) = self
            .busy
            .calls
            .get(call)
            .filter(|c| c.stage == Stage::Sending)
        else {
            return;
        };
        let probe = c.probe;
        let spends = !probe && !c.spec.account;
        if self.answer.answered(spends, status) {
            self.actions.push_back(GateAction::DropAnswer);
        }
        let retry_after_ms = feedback.retry_after_ms;
        let (seq, ahead, waited, sent) = (c.seq.unwrap_or(0.0), c.ahead, c.waited, c.last_sent);
        let scout = c.spec.scout;
        let counted = feedback.limit.zip(feedback.remaining);
        let limiter = self.learner.as_ref().and(feedback.limiter.clone());
        let cooldown = self.failure_cooldown(now, call, status >= 500, retry_after_ms.is_some());
        self.resume(now, call);
        self.observe(now, call, status, feedback, cooldown);
        let sent = Sent {
            call,
            at: sent,
            seq,
            ahead,
            waited,
            scout,
        };
        let bare_429 = status == 429 && retry_after_ms.is_none();
        if !bare_429 && spends && self.busy.probe.is_none() {
            // The bare 429s in a row are over: they were the rate's (an account call's answer
            // says nothing of the quota: `/usage` answers when it is spent).
            self.hear_untold(now, true);
        }
        self.learn(now, sent, bare_429, (status, counted), limiter);
        let Some(c) = self.busy.calls.get_mut(call) else {
            return;
        };
        c.last_status = Some(status);
        c.last_retry_after_ms = retry_after_ms;
        c.last_failed = false;
        if probe {
            if status == 200 {
                c.stage = Stage::ReadingUsage;
                self.actions.push_back(GateAction::ReadUsage { call });
            } else {
                self.dispose(now, call, Next::ProbeDone);
            }
            return;
        }
        let outcome = Outcome::Response {
            status,
            retry_after_ms,
        };
        self.conclude(now, call, outcome);
    }

    /// `call`'s attempt ended at `now` without a response: the inner fetch rejected, or the
    /// attempt's time limit aborted it.
    pub fn failed(&mut self, now: Millis, call: CallId, failure: Failure) {
        let Some(c) = self
            .busy
            .calls
            .get_mut(call)
            .filter(|c| c.stage == Stage::Sending)
        else {
            return;
        };
        c.last_failed = true;
        let (probe, seq, scout) = (c.probe, c.seq.unwrap_or(0.0), c.spec.scout);
        // A request that cannot be made says nothing of the server.
        if failure.outcome() != Outcome::Invalid {
            let cooldown = self.failure_cooldown(now, call, true, false);
            self.observed(now, cooldown, None);
        }
        self.unanswered(now, seq);
        if scout {
            let (heard, answer) = (LimiterFeedback::Nothing, None);
            self.actions.push_back(GateAction::Route {
                call,
                heard,
                answer,
            });
        }
        self.resume(now, call);
        if probe {
            return self.settle(now, call, End::Deliver);
        }
        self.conclude(now, call, failure.outcome());
    }

    /// The request numbered `seq` will never be answered (it failed, or its caller gave up on
    /// it): before the first answer, the opening's token is back for the next request (still
    /// one at a time), rather than a long wait for the next.
    pub(super) fn unanswered(&mut self, now: Millis, seq: f64) {
        let opening = self.learner.as_deref().filter(|l| l.opening());
        if let Some(token) = opening.and_then(Learner::opening_token) {
            let rate = self.rate;
            self.authority.tune(now, rate, Some((token, seq)));
        }
    }

    /// The gate's requests numbered before `sent`'s still out at `now` that may reach the
    /// server after it: those that went shortly before it, within four of its round trips or
    /// [`REORDER_MS`] (one out longer than that reached the server long before it, or never
    /// will, as a request that hangs).
    fn behind(&self, now: Millis, sent: &Sent) -> f64 {
        let since = sent.at - (4.0 * (now - sent.at)).max(REORDER_MS);
        let before = &self.busy.out[..self.busy.out.partition_point(|q| q.0 < sent.seq)];
        before.iter().filter(|q| q.1 >= since).count() as f64
    }

    /// Restarts the refill if `call`'s admission paused it, wherever the pause was made.
    pub(super) fn resume(&mut self, now: Millis, call: CallId) {
        let busy = &mut *self.busy;
        let Some(c) = busy.calls.get_mut(call) else {
            return;
        };
        let Some((id, anchor)) = c.admission.take() else {
            return;
        };
        busy.sending = busy.sending.saturating_sub(1);
        if let Some(seq) = c.seq {
            if let Ok(at) = busy.out.binary_search_by(|q| q.0.total_cmp(&seq)) {
                busy.out.remove(at);
            }
        }
        if !anchor {
            return;
        }
        self.tell(now, Op::Resume { id });
    }

    /// Learns from a response's headers: a `Retry-After` on a 429 or 503 becomes the shared
    /// cooldown (with `at_least`, no shorter than that), nothing remaining with a reset time
    /// holds until the reset, and the remaining count paces the bucket. A run of bare 429s
    /// raises the quota suspicion.
    fn observe(
        &mut self,
        now: Millis,
        call: CallId,
        status: u16,
        feedback: Feedback,
        at_least: Option<Millis>,
    ) {
        let mut cooldown_ms = feedback
            .retry_after_ms
            .filter(|_| honours_retry_after(status));
        let longer = |a: Option<Millis>, b: Millis| Some(a.map_or(b, |a| a.max(b)));
        if let Some(ms) = at_least {
            cooldown_ms = longer(cooldown_ms, ms);
        }
        let age_ms = self.busy.calls.get(call).map_or(0.0, |c| now - c.last_sent);
        let mut remaining = match (feedback.limit, feedback.remaining) {
            (Some(limit), Some(remaining)) => Some(Remaining {
                limit,
                remaining,
                heard: None,
                age_ms,
            }),
            _ => None,
        };
        if let (Some(Remaining { remaining: 0, .. }), Some(reset)) = (remaining, feedback.reset_ms)
        {
            cooldown_ms = longer(cooldown_ms, reset);
        }
        if self.learner.is_some() {
            // A learning gate takes the count as it is (see `learn`), not as a sign of others.
            remaining = None;
        }
        self.observed(now, cooldown_ms, remaining);
        let has_retry_after = feedback.retry_after_ms.is_some();
        if status == 429 {
            self.figures.trouble().throttled += 1;
            self.actions.push_back(GateAction::Event(Event::Throttled {
                call,
                retry_after_ms: feedback.retry_after_ms,
            }));
            self.figures.trouble().last_feedback = Some(Box::new(feedback));
        }
        if self.quota.observe(now, status, has_retry_after) {
            self.start_probe(now, call);
        }
    }

    /// Holds every admission for `cooldown_ms` from `now` (extended, never shortened) and
    /// paces the bucket by the server's `remaining` count, wherever the state lives: what
    /// an answer said of the allowance ([`Op::Feedback`]), or a run of failures' cooldown.
    fn observed(&mut self, now: Millis, cooldown_ms: Option<Millis>, remaining: Option<Remaining>) {
        if cooldown_ms.is_none() && remaining.is_none() {
            return;
        }
        let heard = self.last_seq;
        self.authority.observe(now, cooldown_ms, remaining, heard);
        self.flush();
        if cooldown_ms.is_some() {
            self.expire_hopeless(now);
        }
    }

    /// Counts `call`'s attempt in the gate's run of failures ([`Streak`]): a `failure`
    /// lengthens it, anything else ends it. The cooldown the failure calls for: full jitter under
    /// the call's backoff (the default one for a call with no retry policy: a `retry: false`
    /// wrapper's, the quota's probe), or none when the server gave its own delay, which holds
    /// the gate as it is. It is the cooldown: the allowance's one shared cooldown already
    /// reaches every thread and process (memory, the threads' slot, the store), is never
    /// shortened, and keeps calls in the queue, where waiting spends no attempt. Each thread or
    /// process counts the failures its own requests meet.
    ///
    /// [`Streak`]: crate::core::rules::streak::Streak
    fn failure_cooldown(
        &mut self,
        now: Millis,
        call: CallId,
        failure: bool,
        server_delay: bool,
    ) -> Option<Millis> {
        if !failure {
            self.streak.answered();
            return None;
        }
        if self.learner.as_ref().is_some_and(|l| !l.opening()) {
            // The allowance has answered, in some thread or process.
            self.streak.answered_elsewhere();
        }
        let c = self.busy.calls.get(call)?;
        let backoff = c
            .spec
            .policy
            .as_ref()
            .map_or(Backoff::DEFAULT, |p| p.backoff);
        let n = self.streak.failed(now, c.last_sent)?;
        (!server_delay).then(|| backoff.delay(n - 1, &mut *self.random))
    }

    /// A learning gate learns from a response at `now` to the attempt `sent` (its status and
    /// counts): the allowance it follows from now, and the server's count of tokens. An answer
    /// from another limiter than the gate's teaches it nothing: the driver hears that the
    /// call's route draws from that limiter (as it hears a scout's answer, whichever limiter).
    /// A `bare_429` (no `Retry-After`) may be the monthly quota's, which says nothing of the
    /// rate: the learner hears it once its body, or the end of the bare 429s in a row, says it
    /// is not (see [`tell_learner`](Self::tell_learner)). A 429 with a `Retry-After` is the
    /// rate's (the quota's carries none) and teaches at once, as every other answer does.
    fn learn(
        &mut self,
        now: Millis,
        sent: Sent,
        bare_429: bool,
        (status, counted): (u16, Option<(u64, u64)>),
        limiter: Option<String>,
    ) {
        self.follow_shared(now);
        let Some(learner) = &mut self.learner else {
            return;
        };
        let own = learner.owns(limiter.as_deref());
        let sample = Sample {
            sent: sent.at,
            status,
            counts: counted,
            seq: sent.seq,
            ahead: sent.ahead,
            heard: self.last_seq,
            behind: self.behind(now, &sent),
            backlogged: sent.waited || !self.busy.queue.is_empty() || self.busy.behind_scout > 0,
        };
        if sent.scout || !own {
            let call = sent.call;
            let heard = limiter.map_or(LimiterFeedback::Unnamed, LimiterFeedback::Limiter);
            let answer = (!own).then_some(sample);
            self.actions.push_back(GateAction::Route {
                call,
                heard,
                answer,
            });
        }
        if !own {
            return;
        }
        let c = self.busy.calls.get_mut(sent.call);
        match c.filter(|c| bare_429 && !c.probe) {
            Some(c) => c.untold = Some(sample),
            None => self.teach(now, sample),
        }
    }

    /// A learning gate learns at `now` from `sample`, an answer of its own limiter: the
    /// allowance it follows from now, and the server's count of tokens.
    pub(super) fn teach(&mut self, now: Millis, sample: Sample) {
        let Some(learner) = &mut self.learner else {
            return;
        };
        let lesson = learner.observe(now, &sample);
        let news = learner.news(now);
        self.rate = lesson.rate;
        let tokens = lesson.tokens.map(|count| (count, sample.seq));
        self.authority.tune(now, lesson.rate, tokens);
        if let Some(estimate) = news {
            self.actions
                .push_back(GateAction::Event(Event::Learned(estimate)));
            if !self.busy.deadlines.is_empty() {
                // What the gate can promise changed: calls it can no longer admit in time go
                // now, not at their deadline.
                self.expire_hopeless(now);
            }
        }
    }

    /// The verdict on `call`'s bare 429 the learner has not heard, at `now`: its body named
    /// the quota (`Some(true)`), which teaches nothing; named something else (`Some(false)`:
    /// the rate's), which the learner hears now; or said nothing (`None`: not read, not JSON),
    /// which waits for the bare 429s in a row to end: the quota's probe finds the quota spent
    /// or not, or an answer that is no bare 429 comes (see [`hear_untold`](Self::hear_untold)).
    pub(super) fn tell_learner(&mut self, now: Millis, call: CallId, quota: Option<bool>) {
        let Some(sample) = self.busy.calls.get_mut(call).and_then(|c| c.untold.take()) else {
            return;
        };
        match quota {
            Some(true) => {}
            Some(false) => self.teach_late(now, sample),
            None => self.untold.push(sample),
        }
    }

    /// The bare 429s whose bodies said nothing were the rate's (`rate`: the probe found room,
    /// or a spending call's answer that is no bare 429 came with no probe out) or the spent
    /// quota's: the learner hears them now, or never.
    pub(super) fn hear_untold(&mut self, now: Millis, rate: bool) {
        for sample in std::mem::take(&mut self.untold) {
            if rate {
                self.teach_late(now, sample);
            }
        }
    }

    /// [`teach`](Self::teach), for a 429 the learner hears after its answer: a store's answers
    /// that came meanwhile carried the fleet's estimate from before this lesson, and taken as
    /// news they would undo it (the next answer brings any news again).
    pub(super) fn teach_late(&mut self, now: Millis, sample: Sample) {
        if let Some(link) = self.authority.link() {
            link.stored = None;
        }
        self.teach(now, sample);
    }

    /// Asks the policy what follows `outcome`, and charges the budgets for a retry.
    fn conclude(&mut self, now: Millis, call: CallId, outcome: Outcome) {
        let Some(c) = self.busy.calls.get(call) else {
            return;
        };
        let Some(policy) = c.spec.policy.clone() else {
            return self.settle(now, call, End::Deliver);
        };
        match policy.decide(&c.progress(), outcome, now, &mut *self.random) {
            Verdict::Deliver => {
                if matches!(outcome, Outcome::Response { status, .. } if not_refused(status)) {
                    let refund = c.last_retry_cost.or(self.budget.map(|b| b.success_refill));
                    if let Some(amount) = refund {
                        self.credit(now, amount);
                    }
                }
                self.settle(now, call, End::Deliver);
            }
            Verdict::Abandon(reason) => self.dispose(now, call, Next::Abandon(reason)),
            Verdict::Retry {
                not_before,
                delay_ms,
                kind,
                server_delay,
            } => {
                let next = Next::Retry {
                    not_before,
                    delay_ms,
                    server_delay,
                    cause: outcome,
                    kind,
                };
                let batch_paid = match &c.spec.batch {
                    Some(batch) => match &mut batch.borrow_mut().budget {
                        Some(left) if !left.can_withdraw() => false,
                        Some(left) => {
                            left.withdraw();
                            true
                        }
                        None => true,
                    },
                    None => true,
                };
                if !batch_paid {
                    return self.dispose(now, call, Next::Abandon(Reason::RetryBudget));
                }
                match self.budget {
                    Some(config) => self.charge(now, call, config.cost(kind), next),
                    None => self.dispose(now, call, next),
                }
            }
        }
    }

    /// Credits a success's refund to the shared budget (with a store, it rides along with the
    /// next charge: a success costs no round trip).
    fn credit(&mut self, now: Millis, amount: f64) {
        self.authority.credit(now, amount);
    }

    /// Charges a retry's `cost` to the shared budget, then carries on with `next`.
    fn charge(&mut self, now: Millis, call: CallId, cost: f64, next: Next) {
        match self.authority.charge(now, call, cost) {
            Some(paid) => self.charged(now, call, cost, next, paid),
            None => {
                self.flush();
                if let Some(c) = self.busy.calls.get_mut(call) {
                    c.stage = Stage::Charging { next };
                }
            }
        }
    }

    /// The budget's answer for `call`'s retry costing `cost`: on with `next`, or give up.
    pub(super) fn charged(&mut self, now: Millis, call: CallId, cost: f64, next: Next, paid: bool) {
        let Some(c) = self.busy.calls.get_mut(call) else {
            return;
        };
        if paid {
            c.last_retry_cost = Some(cost);
            return self.dispose(now, call, next);
        }
        if let Some(batch) = &c.spec.batch {
            if let Some(left) = &mut batch.borrow_mut().budget {
                left.refund();
            }
        }
        self.dispose(now, call, Next::Abandon(Reason::RetryBudget));
    }

    /// Has the body of a response nobody will see disposed of (reading a 429's for signs of a
    /// spent quota), or goes straight on when the attempt had no response.
    fn dispose(&mut self, now: Millis, call: CallId, next: Next) {
        let Some(c) = self.busy.calls.get_mut(call) else {
            return;
        };
        if c.last_failed {
            return self.proceed(now, call, next);
        }
        if let (Next::Abandon(reason), true) = (next, c.gives_up_as_is()) {
            // The caller gets this response, body unread, as fetch would have given it.
            let abandoned = c.abandoned(reason);
            let end = End::Abandoned {
                abandoned,
                cause: false,
                as_is: true,
            };
            return self.settle(now, call, end);
        }
        let read = c.last_status == Some(429) && !c.probe;
        c.stage = Stage::Disposing { next };
        self.actions.push_back(GateAction::Dispose { call, read });
    }

    /// A 429 of this gate's, read whole, said `body`: whether the driver keeps it to give again
    /// to the calls the spent quota refuses (see `rules::quota::QuotaAnswer`). Asked whether
    /// or not its call is still there.
    pub fn keeps_answer(&mut self, body: &BodyFacts) -> bool {
        self.answer.offer(body.names_quota())
    }

    /// The body of `call`'s last response is disposed of; `body` is what it said, when read
    /// whole (its fields empty when it was no JSON).
    pub fn disposed(&mut self, now: Millis, call: CallId, body: Option<BodyFacts>) {
        let Some(c) = self.busy.calls.get(call) else {
            return;
        };
        let Stage::Disposing { next } = c.stage else {
            return;
        };
        if next == Next::ProbeDone {
            return self.settle(now, call, End::Deliver);
        }
        let said = body.filter(|b| b.code.is_some() || b.detail.is_some());
        let says_quota = said.as_ref().map(BodyFacts::names_quota);
        self.tell_learner(now, call, says_quota);
        if says_quota == Some(true) && self.quota.suspect(now) {
            self.start_probe(now, call);
        }
        self.proceed(now, call, next);
    }

    /// Carries a call on after its attempt: it waits for a running probe if it was throttled,
    /// fails fast if the quota is spent, or gives up, or backs off and joins the queue again.
    pub(super) fn proceed(&mut self, now: Millis, call: CallId, next: Next) {
        let busy = &mut *self.busy;
        let Some(c) = busy.calls.get_mut(call) else {
            return;
        };
        if busy.probe.is_some() && c.last_status == Some(429) {
            c.stage = Stage::AwaitingProbe { next };
            busy.awaiting_probe.push(call);
            return;
        }
        if let (QuotaState::Exhausted { until }, false) = (self.quota.state(now), c.spec.account) {
            self.figures.trouble().quota_rejected += 1;
            return self.settle(now, call, End::Exhausted { until });
        }
        let attempts = c.attempts;
        match next {
            Next::Abandon(reason) => {
                let end = End::abandoned_by(c, reason);
                self.settle(now, call, end);
            }
            Next::Retry {
                not_before,
                delay_ms,
                server_delay,
                cause,
                ..
            } => {
                self.figures.trouble().retries.count(cause);
                if !server_delay {
                    self.figures.trouble().backoff.record(delay_ms);
                }
                self.actions.push_back(GateAction::Event(Event::Retry {
                    call,
                    attempt: attempts + 1,
                    delay_ms,
                    server_delay,
                }));
                // A Retry-After already holds the whole gate; only our own backoff sleeps.
                if not_before > self.cooldown_until() {
                    if let Some(c) = self.busy.calls.get_mut(call) {
                        c.stage = Stage::Sleeping { until: not_before };
                    }
                    self.busy.sleepers.push(not_before, call, call);
                } else {
                    self.join(now, call);
                }
            }
            Next::ProbeDone => self.settle(now, call, End::Deliver),
        }
    }
}

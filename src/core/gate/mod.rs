//! The gate: one credential's queue of calls, and the machine that moves each call through it.
//! Sans-IO, in the manner of quinn-proto: the driver hands in `now` and what happened (a call
//! made, a response's status and headers, a failure, a body read, a store's answer, a timer),
//! and asks what to do next ([`Gate::poll_action`]) and when to wake the gate
//! ([`Gate::poll_timeout`]). Every rule lives here or below: admission, pacing, cooldowns,
//! classification, retries and their three bounds, budgets, quota, deadlines. The bindings, the
//! simulator and the tests drive this same code.
//!
//! A call's path: it joins the queue ([`Gate::start`]); at its turn the authority admits it and
//! the gate says [`GateAction::Send`]; the driver reports the response ([`Gate::responded`]) or the
//! failure ([`Gate::failed`]); the gate observes the headers (cooldown, pacing, quota), asks the
//! policy, and either settles the call ([`GateAction::Settle`]) or has the unseen body disposed of,
//! charges the budgets, and sends the call back to the queue, after its backoff if it has one.

pub mod action;
mod busy;
pub mod call;
pub mod early;
pub mod figures;
pub mod ids;
pub mod queue;
pub mod respond;
pub mod store_link;

mod admit;
mod authority;
mod learning;
mod probe;
mod spread;
mod store;

use std::collections::VecDeque;

use self::action::{End, Event, GateAction};
use self::authority::{Authority, Standing};
use self::busy::{live, Busy};
use self::call::{Call, CallSpec, Stage};
use self::figures::{Counts, Figures, State};
use self::ids::CallId;
use self::queue::{Place, Rank};
use self::store_link::{StoreLink, StoreSettings};
use crate::core::authority::memory::MemoryAuthority;
use crate::core::authority::threads::{Settings, ThreadAuthority};
use crate::core::authority::{AdmissionId, Op};
use crate::core::base::random::Random;
use crate::core::rules::allowance::Rate;
use crate::core::rules::budget::RefillingConfig;
use crate::core::rules::credits::CREDIT_WAIT_MS;
use crate::core::rules::fair::LaneId;
use crate::core::rules::learn::{Learner, Sample};
use crate::core::rules::policy::Reason;
use crate::core::rules::quota::{QuotaAnswer, QuotaState, QuotaWatch};
use crate::core::rules::routes::LimiterFeedback;
use crate::core::rules::spending::Spending;
use crate::core::rules::streak::Streak;
use crate::core::Millis;

/// At most this many calls of a queue waiting on a shared store are admitted by one round trip:
/// a process with many calls in flight asks once for what they need, not once each. A call
/// that leaves while its token is on the way loses that token, so the asks stay modest. (A
/// learning gate asks for one at a time.)
pub(crate) const STORE_BATCH: usize = 64;

/// One credential's gate.
pub struct Gate {
    authority: Box<dyn Authority>,
    rate: Rate,
    budget: Option<RefillingConfig>,
    /// The queue, the calls and what they wait for, while it has calls.
    busy: Busy,
    actions: VecDeque<GateAction>,
    next_admission: AdmissionId,
    quota: QuotaWatch,
    /// Whether the driver keeps a 429 to give again to the calls the spent quota refuses.
    answer: QuotaAnswer,
    /// The spread, when the gate paces its key's credits (see `spread.rs`).
    spending: Option<Box<Spending>>,
    /// The spread is the shared state's (the store's or the threads' slot: its credit bucket
    /// beside the allowance, one reader at a time): the gate asks for credits with each
    /// admission and decides nothing.
    shares_credits: bool,
    /// When the shared spread last said credit comes: the threads' slot to a head told to wait
    /// (its wake-up), or a store, for a call like its last admission's.
    credit_at: Millis,
    /// Bare 429s whose bodies said nothing: the learner hears them once the bare 429s in a
    /// row turn out to be the rate's (a spent quota's say nothing of the rate).
    untold: Vec<Sample>,
    /// A learning gate made anew in a store asks for nothing before this (see
    /// [`recall`](Gate::recall)).
    recalling_until: Millis,
    figures: Counts,
    random: Box<dyn Random>,
    /// Made for wrappers that share it with the process's threads.
    threads: bool,
    /// Learns the allowance from the responses, when nobody configured it.
    learner: Option<Box<Learner>>,
    /// The highest request number the gate admitted.
    last_seq: f64,
    /// The next call's place in the call order, above every rank seen.
    arrivals: Rank,
    /// The most calls ever waiting at once.
    peak_waiting: usize,
    /// The run of failures the server answered with, which holds the gate.
    streak: Streak,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gate")
            .field("waiting", &self.busy.queue.len())
            .field("calls", &self.busy.calls.len())
            .finish_non_exhaustive()
    }
}

impl Gate {
    /// A gate whose state lives in this process, with a full bucket whose clock starts at `now`.
    // Never inlined: made once per gate, not worth a copy in each maker (1 KB of wasm).
    #[inline(never)]
    pub fn new(
        rate: Rate,
        budget: Option<RefillingConfig>,
        now: Millis,
        random: Box<dyn Random>,
    ) -> Gate {
        let authority = MemoryAuthority::new(rate, budget, now);
        Gate::with(Box::new(authority), rate, budget, random)
    }

    /// A gate whose state lives in memory the process's threads share.
    pub fn threaded(authority: ThreadAuthority, random: Box<dyn Random>) -> Gate {
        let Settings { rate, budget, .. } = authority.settings();
        Gate::with(Box::new(authority), rate, budget, random).for_threads()
    }

    /// Marks a gate as made for wrappers that share it with the process's threads.
    pub(crate) fn for_threads(self) -> Gate {
        Gate {
            threads: true,
            ..self
        }
    }

    /// A gate in this thread's memory, made for wrappers that share it with the process's
    /// threads when the memory they share had no room for its key: it says so, once.
    pub(crate) fn no_room(mut self) -> Gate {
        self.actions.push_back(GateAction::Event(Event::NoRoom));
        self
    }

    /// Whether the process's threads share the gate's state.
    pub(crate) fn shared_by_threads(&self) -> bool {
        self.threads
    }

    /// A gate whose state lives in a shared store, reached with [`GateAction::Store`].
    pub fn shared(
        rate: Rate,
        budget: Option<RefillingConfig>,
        settings: StoreSettings,
        now: Millis,
        random: Box<dyn Random>,
    ) -> Gate {
        let link = StoreLink::new(settings, rate, budget, now);
        Gate::with(Box::new(link), rate, budget, random)
    }

    fn with(
        authority: Box<dyn Authority>,
        rate: Rate,
        budget: Option<RefillingConfig>,
        random: Box<dyn Random>,
    ) -> Gate {
        Gate {
            authority,
            rate,
            budget,
            busy: Busy::default(),
            actions: VecDeque::new(),
            next_admission: 0,
            quota: QuotaWatch::default(),
            answer: QuotaAnswer::default(),
            spending: None,
            shares_credits: false,
            credit_at: f64::NEG_INFINITY,
            untold: Vec::new(),
            recalling_until: f64::NEG_INFINITY,
            figures: Counts::default(),
            random,
            threads: false,
            learner: None,
            last_seq: 0.0,
            arrivals: 0,
            peak_waiting: 0,
            streak: Streak::default(),
        }
    }

    /// The allowance (the whole key's, with a store; a learning gate's latest estimate).
    pub fn rate(&self) -> Rate {
        self.rate
    }

    /// The shared retry budget's settings, if the gate has one.
    pub(crate) fn budget_config(&self) -> Option<RefillingConfig> {
        self.budget
    }

    /// Gives a gate made without a retry budget (by a wrapper that does not retry) the budget
    /// a retrying wrapper brings. A gate never changes a budget it has.
    pub(crate) fn install_budget(&mut self, config: RefillingConfig) {
        if self.budget.is_some() {
            return;
        }
        self.budget = Some(config);
        self.authority.install_budget(config);
    }

    /// Operations sent to the store, failures seen, and whether it answers now.
    pub fn store_counts(&self) -> Option<(u64, u64, bool)> {
        self.authority.store_counts()
    }

    /// Makes a call at `now`, `rank` in the call order (see [`Queue`](queue::Queue)). It joins
    /// the queue at once, behind everyone already there who came before it, or is refused at
    /// once (spending no token): the quota is spent, the store is down and the gate fails
    /// closed, the queue is full, or its admission is predicted after its deadline.
    pub fn start(&mut self, now: Millis, spec: CallSpec, rank: Rank) -> CallId {
        self.arrivals = self.arrivals.max(rank + 1);
        let full = spec.max_waiting.is_some_and(|max| self.waiting() >= max);
        let behind_scout = spec.behind_scout;
        let id = self.busy.calls.insert(Call::new(spec, false, now, rank));
        if full {
            self.figures.requests += 1;
            self.give_up(now, id, Reason::QueueFull);
        } else if behind_scout {
            if let Some(c) = self.busy.calls.get_mut(id) {
                c.stage = Stage::BehindScout;
            }
            self.busy.behind_scout += 1;
            self.peak_waiting = self.peak_waiting.max(self.waiting());
        } else {
            self.join(now, id);
        }
        id
    }

    /// Lets a call waiting for its route's scout (see [`CallSpec::behind_scout`]) join the queue
    /// at `now`.
    pub fn release(&mut self, now: Millis, call: CallId) {
        if self
            .busy
            .calls
            .get(call)
            .is_some_and(|c| c.stage == Stage::BehindScout)
        {
            self.busy.behind_scout -= 1;
            self.join(now, call);
        }
    }

    /// Takes in a call another gate gave up with [`withdraw`](Self::withdraw) (its route draws
    /// from this gate's limiter): the same call, made when it was made, in the call order
    /// where its rank puts it. `maxWaiting` judged it where it came from; its deadlines count
    /// from when it was made.
    pub(crate) fn take_in(&mut self, now: Millis, call: Call) -> CallId {
        self.arrivals = self.arrivals.max(call.rank + 1);
        let id = self.busy.calls.insert(call);
        self.join(now, id);
        id
    }

    /// Calls waiting: in queue, and beside it for their routes' scouts.
    pub fn waiting(&self) -> usize {
        self.busy.queue.len() + self.busy.behind_scout
    }

    /// Calls waiting in the queue in `lane`.
    pub(crate) fn waiting_in(&self, lane: LaneId) -> usize {
        self.busy.queue.waiting_in(lane)
    }

    fn make(&mut self, now: Millis, spec: CallSpec, probe: bool) -> CallId {
        let rank = self.arrivals;
        self.arrivals += 1;
        self.busy.calls.insert(Call::new(spec, probe, now, rank))
    }

    /// Puts a call (new, or back from an attempt) in queue, or settles it if it cannot be
    /// admitted.
    fn join(&mut self, now: Millis, id: CallId) {
        let account = self.busy.calls.get(id).is_some_and(|c| c.spec.account);
        if let (QuotaState::Exhausted { until }, false) = (self.quota.state(now), account) {
            self.figures.trouble().quota_rejected += 1;
            return self.settle(now, id, End::Exhausted { until });
        }
        if self.fails_closed(now) {
            self.figures.requests += 1;
            return self.give_up(now, id, Reason::StoreUnavailable);
        }
        self.figures.requests += 1;
        let Some(call) = self.busy.calls.get(id) else {
            return;
        };
        let (deadline, reason) = call.admission_deadline();
        // Only a deadline needs the prediction (most calls have none before their first send).
        // A call back from an attempt goes ahead of those who came after it, which the count
        // of calls ahead of a newcomer would not know: it waits, and goes at its deadline.
        let newcomer = call.first_sent.is_none();
        let ahead = self.busy.queue.ahead(call.spec.lane);
        if deadline.is_finite() && newcomer {
            let (at, credit) = self.predict_call(now, ahead, id);
            if at > deadline {
                self.figures.trouble().abandoned_in_queue += 1;
                return self.refuse(now, id, reason, (credit > deadline).then_some(credit));
            }
        }
        // The spread's own bound, for a call with no deadline of its own (no `maxWaitMs`,
        // no batch).
        if newcomer && deadline.is_infinite() {
            let credit = self.predict_credit(now, ahead, id);
            if credit > now + CREDIT_WAIT_MS {
                self.figures.trouble().abandoned_in_queue += 1;
                return self.refuse(now, id, Reason::CreditWait, Some(credit));
            }
        }
        let busy = &mut *self.busy;
        let Some(call) = busy.calls.get_mut(id) else {
            return;
        };
        call.visits += 1;
        let visit = call.visits;
        call.stage = Stage::Queued { visit, since: now };
        if deadline.is_finite() {
            busy.deadlines.push(deadline, id, id);
        }
        let place = Place {
            rank: call.rank,
            call: id,
            visit,
        };
        // The quota's probe goes ahead of everyone (they wait for it); a route's scout goes to
        // the front.
        match (call.probe, call.lane_in_queue()) {
            (true, _) => busy.queue.push_first(place),
            (false, None) => busy.queue.push_front(place),
            (false, Some(_)) => busy.queue.push(place, call.spec.lane),
        }
        self.peak_waiting = self.peak_waiting.max(self.waiting());
    }

    /// Whether the store is down and the gate refuses rather than admit alone.
    fn fails_closed(&self, now: Millis) -> bool {
        self.authority.refusing(now)
    }

    /// When the caller with `ahead` others in front of it could be admitted, as far as this
    /// process knows. A learning gate's pace is an estimate that may grow: it predicts as fast as
    /// learning could go (see [`Learner::soonest`]), and before it has a pace (one at a time,
    /// or a window) only its cooldown makes a call hopeless.
    fn predict(&mut self, now: Millis, ahead: usize) -> Millis {
        let at = self.authority.predict(now, ahead);
        let Some(soonest) = self.learner.as_ref().map(|l| l.soonest(at - now)) else {
            return at;
        };
        let cooldown = self.cooldown_until();
        match (at > cooldown, soonest) {
            (true, Some(wait)) => cooldown.max(now + wait),
            (true, None) => cooldown,
            (false, _) => at,
        }
    }

    /// When `call`, with `ahead` others in front of it, could be admitted: when the allowance
    /// has its token (see [`predict`](Self::predict)) and the spread its credits; and when the
    /// credits come.
    fn predict_call(&mut self, now: Millis, ahead: usize, call: CallId) -> (Millis, Millis) {
        let token = self.predict(now, ahead);
        let credit = self.predict_credit(now, ahead, call);
        (token.max(credit), credit)
    }

    /// Refuses `call` for `reason` (its deadline's) before its admission. When the spread's
    /// credit comes too late (at `credit`), a `maxWaitMs` refusal says so, and the error says
    /// when it comes, when that is known.
    fn refuse(&mut self, now: Millis, call: CallId, reason: Reason, credit: Option<Millis>) {
        let Some(c) = self.busy.calls.get(call) else {
            return;
        };
        let reason = match (credit, reason) {
            (Some(_), Reason::QueueWait) => Reason::CreditWait,
            _ => reason,
        };
        let mut end = End::abandoned_by(c, reason);
        if let (Some(at), End::Abandoned { abandoned, .. }) = (credit, &mut end) {
            abandoned.retry_after_ms = at.is_finite().then(|| (at - now).ceil());
        }
        self.settle(now, call, end);
    }

    /// The caller gave up on `call` (its signal aborted): it leaves the queue, its backoff or
    /// whatever it waits for, spending nothing more. The driver settles it with the abort
    /// reason; the gate forgets it.
    pub(crate) fn cancel(&mut self, now: Millis, call: CallId) {
        let Some(c) = self.busy.calls.get(call) else {
            return;
        };
        let (scout, seq, from) = (c.spec.scout, c.seq.unwrap_or(0.0), c.lane_in_queue());
        self.tell_learner(now, call, None);
        let Some(c) = self.busy.calls.get(call) else {
            return;
        };
        match c.stage {
            Stage::Queued { .. } => self.busy.queue.left(from),
            Stage::BehindScout => self.busy.behind_scout -= 1,
            Stage::Sending => {
                self.resume(now, call);
                self.unanswered(now, seq);
            }
            Stage::AwaitingProbe { .. } => self.busy.awaiting_probe.retain(|&c| c != call),
            _ => {}
        }
        if scout {
            // The calls behind it wait no more.
            let (heard, answer) = (LimiterFeedback::Nothing, None);
            self.actions.push_back(GateAction::Route {
                call,
                heard,
                answer,
            });
        }
        self.figures.trouble().cancelled += 1;
        self.busy.calls.remove(call);
    }

    /// Takes `call` out of the gate when it waits for its route's scout, or in queue, and was
    /// never sent: its route turned out to draw from another limiter, whose gate takes
    /// it in (`take_in`) as it is, neither a scout nor behind one any more.
    pub fn withdraw(&mut self, call: CallId) -> Option<Call> {
        let c = self.busy.calls.get(call)?;
        if c.probe || c.first_sent.is_some() {
            return None;
        }
        let from = c.lane_in_queue();
        match c.stage {
            Stage::Queued { .. } => {
                self.busy.queue.left(from);
                self.figures.requests = self.figures.requests.saturating_sub(1);
            }
            Stage::BehindScout => self.busy.behind_scout -= 1,
            _ => return None,
        }
        let mut c = self.busy.calls.remove(call)?;
        c.spec.behind_scout = false;
        c.spec.scout = false;
        Some(c)
    }

    /// Whether `call` is being sent (its attempt is in the driver's hands).
    pub fn in_flight(&self, call: CallId) -> bool {
        self.busy
            .calls
            .get(call)
            .is_some_and(|c| c.stage == Stage::Sending)
    }

    /// Whether another attempt of `call` may follow the one out (see [`Call::may_retry`]).
    pub(crate) fn may_retry(&self, call: CallId) -> bool {
        self.busy.calls.get(call).is_some_and(Call::may_retry)
    }

    /// Whether `call` went ahead of its route's other calls to learn the route's limiter.
    pub(crate) fn scouts(&self, call: CallId) -> bool {
        self.busy.calls.get(call).is_some_and(|c| c.spec.scout)
    }

    /// Gives `call` up for `reason`, with what it got to.
    fn give_up(&mut self, now: Millis, call: CallId, reason: Reason) {
        if let Some(c) = self.busy.calls.get(call) {
            let end = End::abandoned_by(c, reason);
            self.settle(now, call, end);
        }
    }

    /// Ends the call: the driver settles the caller's promise. Counts it and tells the hook.
    fn settle(&mut self, now: Millis, call: CallId, end: End) {
        // A bare 429 whose body nobody read (the caller gets it) says nothing yet.
        self.tell_learner(now, call, None);
        if self.busy.calls.get(call).is_some_and(|c| c.spec.scout) {
            // Whatever became of it, the calls behind it wait no more.
            let (heard, answer) = (LimiterFeedback::Nothing, None);
            self.actions.push_back(GateAction::Route {
                call,
                heard,
                answer,
            });
        }
        let Some(c) = self.busy.calls.remove(call) else {
            return;
        };
        if c.probe {
            if self.busy.probe == Some(call) {
                self.finish_probe(now, None);
            }
            self.finish_reading(now, call, None);
        } else if let End::Abandoned { abandoned, .. } = end {
            self.figures.trouble().abandoned[abandoned.reason.index()] += 1;
            self.actions.push_back(GateAction::Event(Event::Abandoned {
                call,
                reason: abandoned.reason,
                attempts: abandoned.attempts,
            }));
        }
        let again =
            matches!(end, End::Exhausted { .. }) && !c.spec.typed_errors && self.answer.kept();
        self.actions
            .push_back(GateAction::Settle { call, end, again });
    }

    /// Settles everyone in queue, each as `end` says (the store failed closed, the quota is
    /// spent).
    fn drain(&mut self, now: Millis, end: &dyn Fn(&Call) -> End) {
        let calls = &self.busy.calls;
        let waiting: Vec<CallId> = self
            .busy
            .queue
            .ordered(|p| live(calls, p))
            .into_iter()
            .map(|p| p.call)
            .collect();
        for call in waiting {
            let Some(c) = self.busy.calls.get(call) else {
                continue;
            };
            let (end, from) = (end(c), c.lane_in_queue());
            if let End::Exhausted { .. } = end {
                if c.spec.account {
                    // An account call is how one checks the quota: it stays.
                    continue;
                }
                self.figures.trouble().quota_rejected += 1;
            }
            self.busy.queue.left(from);
            self.settle(now, call, end);
        }
        if let Some(busy) = self.busy.made() {
            busy.queue.compact(|p| live(&busy.calls, p));
        }
    }

    /// Lets go of waiters that a new cooldown has made hopeless: their admission is now
    /// predicted after their deadline.
    fn expire_hopeless(&mut self, now: Millis) {
        self.refuse_queued(now, |gate, call, kept| {
            let (deadline, reason) = gate.busy.calls.get(call)?.admission_deadline();
            let (at, credit) = gate.predict_call(now, kept, call);
            (at > deadline).then_some((reason, (credit > deadline).then_some(credit)))
        });
    }

    /// Walks the queue in its order and refuses each call `verdict` gives a reason (with when
    /// credit comes, where that is why): it leaves the queue, counted as abandoned there.
    /// `verdict` is told how many calls ahead were kept. How many it refused.
    pub(super) fn refuse_queued(
        &mut self,
        now: Millis,
        mut verdict: impl FnMut(&mut Self, CallId, usize) -> Option<(Reason, Option<Millis>)>,
    ) -> usize {
        let calls = &self.busy.calls;
        let waiting: Vec<CallId> = (self.busy.queue.ordered(|p| live(calls, p)).into_iter())
            .map(|p| p.call)
            .collect();
        let (mut kept, mut refused) = (0, 0);
        for call in waiting {
            let Some(from) = self.busy.calls.get(call).map(|c| c.lane_in_queue()) else {
                continue;
            };
            match verdict(self, call, kept) {
                Some((reason, credit)) => {
                    self.busy.queue.left(from);
                    self.figures.trouble().abandoned_in_queue += 1;
                    self.refuse(now, call, reason, credit);
                    refused += 1;
                }
                None => kept += 1,
            }
        }
        refused
    }

    /// Whether a new call at `now` would be held past a cooldown, refused for a spent quota or
    /// held for credit the spread has not (never an `account` call, `GET /usage` or
    /// `/limits`): what lets a cache answer it from a stale entry without waiting. `route`
    /// and `reserve` say what it costs and whether its lane draws on the reserve.
    pub(crate) fn holds(
        &mut self,
        now: Millis,
        account: bool,
        route: Option<&str>,
        reserve: bool,
    ) -> bool {
        let spent = matches!(self.quota.state(now), QuotaState::Exhausted { .. });
        let dry = !account && self.waits_for_credit(now, route, reserve);
        (spent && !account) || dry || self.cooldown_until() > now
    }

    /// The cooldown's end as this process knows it.
    pub fn cooldown_until(&mut self) -> Millis {
        self.authority.cooldown_until()
    }

    /// Ends the cooldown now, for every process sharing the gate: the way out of a cooldown nobody
    /// wants any more (say, a `Retry-After` of years).
    pub fn clear_cooldown(&mut self, now: Millis) {
        self.tell(now, Op::ClearCooldown);
    }

    /// The caller says the quota is back: calls are admitted again, in every process sharing
    /// the gate.
    pub fn reset_quota(&mut self, now: Millis) {
        self.quota.reset();
        if self.answer.reset() {
            self.actions.push_back(GateAction::DropAnswer);
        }
        self.tell(now, Op::Quota { ms: 0.0 });
    }

    /// Applies an operation nobody waits on, wherever the state lives.
    fn tell(&mut self, now: Millis, op: Op) {
        self.authority.tell(now, op);
        self.flush();
    }

    /// Hands the driver the operations the authority queued for the store, in order.
    // Never inlined: one copy, not one in each of its ten callers (smaller gzipped).
    #[inline(never)]
    fn flush(&mut self) {
        while let Some((id, op)) = self.authority.outgoing() {
            self.actions.push_back(GateAction::Store { id, op });
        }
    }

    /// Tokens left in a budget kept in this process (none for a store's gate: the store keeps
    /// it).
    pub(crate) fn local_budget_left(&mut self) -> Option<f64> {
        self.authority.local_budget_left()
    }

    /// Leaves at most `left` tokens in a budget kept in this process: what this scope's
    /// forgotten gate had left.
    pub(crate) fn cap_budget(&mut self, left: f64) {
        self.authority.cap_budget(left);
    }

    /// Its counts so far, as kept (a wrapper's totals need no more than these).
    pub(crate) fn counts(&self) -> &Counts {
        &self.figures
    }

    /// A snapshot of the figures at `now`.
    pub fn figures(&mut self, now: Millis) -> Figures {
        let Standing {
            cooldown_until,
            slow,
            retry_budget,
        } = self.authority.standing();
        let state = State {
            waiting: self.waiting(),
            peak_waiting: self.peak_waiting,
            cooldown_until,
            slow,
            retry_budget,
            quota: Some(self.quota.state(now)),
            credits: self.credit_figures(now),
        };
        Figures::new(&self.figures, state)
    }

    /// Whether the gate holds nothing worth keeping: no calls, no operation in flight, a full
    /// bucket, no cooldown, no quota state. Forgetting it then changes nothing but what a
    /// learning gate learned, which its `memo` keeps, and what is left of a
    /// retry budget kept in this process, which the gates keep beside it. A store's gate
    /// leaves the budget to the store (a fallback's, spent while the store was down, goes).
    /// A gate that spreads its quota leaves its spread in its memo too
    /// (`take_spending`): made anew, it goes on at the same pace.
    pub fn idle(&mut self, now: Millis) -> bool {
        if !self.busy.calls.is_empty() || !self.quota.idle(now) {
            return false;
        }
        self.authority.idle(now)
    }

    /// Gives back the room its calls used, once it has none (a gate kept idle holds its
    /// state, not space for calls: memory grows with calls waiting, not with keys).
    pub(crate) fn compact(&mut self) {
        self.busy.release();
        self.actions.shrink_to_fit();
        self.untold.shrink_to_fit();
    }
}

impl End {
    /// `call` abandoned for `reason`, with what it got to: as it is when its last attempt
    /// failed and the policy gives up as fetch does (a response's body is disposed of by now).
    fn abandoned_by(call: &Call, reason: Reason) -> End {
        End::Abandoned {
            abandoned: call.abandoned(reason),
            cause: call.last_failed,
            as_is: call.last_failed && call.gives_up_as_is(),
        }
    }
}

//! The authority a gate holds, and what it answers the head of the queue: the questions the
//! gate asks whichever it holds, and how every [`Immediate`] one answers them. The link to a
//! store answers them in `store_link/answers.rs`.

use super::action::OpId;
use super::early::EARLY_MS;
use super::ids::CallId;
use super::store_link::StoreLink;
use crate::core::authority::credits::Spend;
use crate::core::authority::fair::{Shares, Turn};
use crate::core::authority::{AdmissionId, Answer, Immediate, Op, Remaining};
use crate::core::rules::allowance::Rate;
use crate::core::rules::bucket::Count;
use crate::core::rules::budget::RefillingConfig;
use crate::core::Millis;

/// What the gate's authority says to the head of the queue. Returned, never kept: boxing the
/// queues' order would cost an allocation an admission.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub(crate) enum Admission {
    /// It answered at once; `shares` is the fair order of the queues sharing the state as
    /// the admission left it (none where no other queue shares it).
    Answered {
        /// The answer.
        answer: Answer,
        /// The queues' order.
        shares: Option<Shares>,
    },
    /// It asked the store: the answer comes back with
    /// [`Gate::store_answered`](super::Gate::store_answered).
    Asked,
    /// Not now: an admission is on its way, or the store's next token is not there yet.
    NotYet,
}

/// What the head of the queue asks for besides a token: whether it is an account call (which a
/// spent quota does not hold), and its credits where the spread is shared.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Needs {
    /// An account call.
    pub(crate) account: bool,
    /// The call's credits.
    pub(crate) credits: Option<Spend>,
}

/// Where the gate stands: the cooldown, the refill and the retry budget, as the figures show them.
pub(crate) struct Standing {
    /// No admission before this time (0 when never cooled down).
    pub(super) cooldown_until: Millis,
    /// Whether the refill runs at half rate.
    pub(super) slow: bool,
    /// Tokens in the retry budget, if there is one.
    pub(super) retry_budget: Option<f64>,
}

/// The authority a gate holds: where its shared state lives and changes. Every
/// [`Immediate`] authority (this process's memory, the slot its threads share) answers at
/// once; a store other processes reach answers later, through the gate's [`StoreLink`],
/// which keeps the fail-safe for when the store is down. The gate asks each the same
/// questions and never which one it holds; what only a store has (answers coming back,
/// operations' time limits) it reaches through [`link`](Authority::link).
pub(crate) trait Authority {
    /// May the head of the queue go now (its `turn`, what it `needs`: an account call past a
    /// spent quota, its credits where the spread is shared)?
    /// `id` numbers the admission; `want` is how many of the queue one round trip to a store
    /// may admit. A `learning` gate restarts a refill its admission paused at once: a
    /// learned pace already runs behind the server's refill.
    fn admit(
        &mut self,
        now: Millis,
        id: AdmissionId,
        turn: Turn,
        want: u32,
        learning: bool,
        needs: Needs,
    ) -> Admission;
    /// When the caller with `ahead` others in front of it could be admitted, as far as this
    /// process knows.
    fn predict(&mut self, now: Millis, ahead: usize) -> Millis;
    /// When the head of the queue is next worth asking for (none while an admission is on
    /// its way).
    fn head_due(&mut self, now: Millis) -> Option<Millis>;
    /// Whether the head of the queue could have gone by `at` (at most `now`), had its wake-up
    /// come on time.
    fn ready_by(&mut self, now: Millis, at: Millis) -> bool;
    /// Whether every admission is refused now (a store down, and the gate fails closed).
    fn refusing(&self, _now: Millis) -> bool {
        false
    }
    /// The cooldown's end as this process knows it.
    fn cooldown_until(&mut self) -> Millis;
    /// What the figures show of the shared state.
    fn standing(&mut self) -> Standing;
    /// Applies an operation nobody waits on.
    fn tell(&mut self, now: Millis, op: Op);
    /// Records what a response said of the allowance ([`Op::Feedback`]); `heard` is the
    /// highest request number the gate had heard of by then.
    fn observe(
        &mut self,
        now: Millis,
        cooldown_ms: Option<Millis>,
        remaining: Option<Remaining>,
        heard: f64,
    );
    /// Credits a success's `refund` to the retry budget.
    fn credit(&mut self, now: Millis, refund: f64);
    /// Charges `call`'s retry `cost` to the retry budget: whether it paid, or `None` when the
    /// store answers later.
    fn charge(&mut self, now: Millis, call: CallId, cost: f64) -> Option<bool>;
    /// Follows a learned allowance from `now`, with the server's count of tokens when it gave
    /// one (as of the request numbered `at`, see
    /// [`Seen::Count`](crate::core::authority::Seen::Count)).
    fn tune(&mut self, now: Millis, rate: Rate, count: Option<(Count, f64)>);
    /// The allowance others sharing the state follow, when they may have set it since the
    /// gate last looked (none where nobody else shares it).
    fn shared_rate(&mut self) -> Option<Rate>;
    /// Gives a budget-less gate this budget.
    fn install_budget(&mut self, config: RefillingConfig);
    /// Tokens left in a retry budget kept in this process (none with a store: it keeps it).
    fn local_budget_left(&mut self) -> Option<f64>;
    /// Leaves at most `left` tokens in a retry budget kept in this process.
    fn cap_budget(&mut self, left: f64);
    /// Whether nothing here is worth keeping (made anew, the state would be the same).
    fn idle(&mut self, now: Millis) -> bool;
    /// The oldest operation queued for the store, taken out (none without a store).
    fn outgoing(&mut self) -> Option<(OpId, Op)> {
        None
    }
    /// Operations sent to the store, failures seen, and whether it answers now.
    fn store_counts(&self) -> Option<(u64, u64, bool)> {
        None
    }
    /// The shared spread's credits used, limit and refill per millisecond, where the state is
    /// in this process (a store's are known from this process's readings only).
    fn credits(&mut self, _now: Millis) -> Option<(f64, f64, f64)> {
        None
    }
    /// The link to a store, for what only a store has.
    fn link(&mut self) -> Option<&mut StoreLink> {
        None
    }
}

impl<T: Immediate> Authority for T {
    fn admit(
        &mut self,
        now: Millis,
        id: AdmissionId,
        turn: Turn,
        _want: u32,
        learning: bool,
        Needs { account, credits }: Needs,
    ) -> Admission {
        let (mut answer, mut shares) = self.admit_in_order(now, id, turn, account, credits);
        // A token due within a timer's tolerance is taken now.
        if let Answer::Wait(ms) = answer {
            if ms <= EARLY_MS {
                let again = self.admit_in_order(now + ms, id, turn, account, credits);
                (answer, shares) = (again.0, again.1.or(shares));
            }
        }
        if let Answer::Admitted { anchor, .. } = &mut answer {
            // A learned pace already runs behind the server's refill: pausing it for each
            // response too would hold a learning gate to one request in flight.
            if *anchor && learning {
                self.apply(now, &Op::Resume { id });
                *anchor = false;
            }
        }
        Admission::Answered { answer, shares }
    }
    fn predict(&mut self, now: Millis, ahead: usize) -> Millis {
        Immediate::predict(self, now, ahead)
    }
    fn head_due(&mut self, now: Millis) -> Option<Millis> {
        Some(Immediate::predict(self, now, 0))
    }
    fn ready_by(&mut self, now: Millis, at: Millis) -> bool {
        Immediate::ready_by(self, now, at)
    }
    fn cooldown_until(&mut self) -> Millis {
        Immediate::cooldown_until(self)
    }
    fn standing(&mut self) -> Standing {
        let (cooldown_until, slow, retry_budget) = Immediate::standing(self);
        Standing {
            cooldown_until,
            slow,
            retry_budget,
        }
    }
    fn tell(&mut self, now: Millis, op: Op) {
        self.apply(now, &op);
    }
    fn observe(
        &mut self,
        now: Millis,
        cooldown_ms: Option<Millis>,
        remaining: Option<Remaining>,
        _heard: f64,
    ) {
        let op = Op::Feedback {
            cooldown_ms,
            remaining,
        };
        self.apply(now, &op);
    }
    fn credit(&mut self, now: Millis, refund: f64) {
        Immediate::credit(self, now, refund);
    }
    fn charge(&mut self, now: Millis, _call: CallId, cost: f64) -> Option<bool> {
        let answer = self.apply(now, &Op::Charge { cost, refund: 0.0 });
        Some(matches!(answer, Answer::Charged(_)))
    }
    fn tune(&mut self, now: Millis, rate: Rate, count: Option<(Count, f64)>) {
        Immediate::tune(self, now, rate, count);
    }
    fn shared_rate(&mut self) -> Option<Rate> {
        self.followed()
    }
    fn install_budget(&mut self, config: RefillingConfig) {
        Immediate::install_budget(self, config);
    }
    fn local_budget_left(&mut self) -> Option<f64> {
        self.budget_left()
    }
    fn cap_budget(&mut self, left: f64) {
        Immediate::cap_budget(self, left);
    }
    fn idle(&mut self, now: Millis) -> bool {
        Immediate::idle(self, now)
    }
    fn credits(&mut self, now: Millis) -> Option<(f64, f64, f64)> {
        Some(Immediate::credits(self, now))
    }
}

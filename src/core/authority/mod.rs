//! The admission authority: where a gate's shared state lives (token bucket, cooldown, pacing,
//! retry budget, quota closure) and the only place it changes. A gate's queue, its calls and its
//! timer stay local to the process; whatever processes share goes through these operations.
//!
//! Every place the state lives applies the same operations ([`Transitions`]).
//! [`MemoryAuthority`] answers at once, in this process; [`ThreadAuthority`] runs its very
//! transitions on a state kept in memory the process's threads share; both are [`Immediate`].
//! `src/store/gate.lua` is the Redis encoding of the same transitions (a parity test runs
//! random operations through both and requires identical answers). A gate holds any of them
//! as one authority (`gate::Authority`), the store through its link (`gate/store_link.rs`),
//! which sends operations out, takes the answers back and keeps the fail-safe.
//!
//! [`MemoryAuthority`]: crate::core::authority::memory::MemoryAuthority
//! [`ThreadAuthority`]: crate::core::authority::threads::ThreadAuthority

pub mod cache_cells;
pub mod credits;
pub mod fair;
pub mod memory;
pub(crate) mod order;
pub mod settle;
pub mod slot;
pub mod store;
pub mod table;
pub mod threads;

use crate::core::authority::credits::{Reading, Spend};
use crate::core::authority::fair::{Shares, Turn};
use crate::core::rules::allowance::Rate;
use crate::core::rules::bucket::Count;
use crate::core::rules::budget::RefillingConfig;
use crate::core::rules::fair::LaneId;
use crate::core::Millis;

/// An admission's number, unique within a gate: it names the admission that may have paused the
/// refill, so its response can restart it.
pub(crate) type AdmissionId = u64;

/// One transition of the shared state.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// May the request numbered `id` go now, and up to `want - 1` more behind it (numbered
    /// `id + 1`, ...)? Quota closure first, then the cooldown, then as many tokens as are there,
    /// up to `want`: a queue waiting on a store takes what it can use in one round trip. An admission
    /// from a full bucket pauses the refill until that request's response ([`Op::Resume`] of
    /// `id`), because the server's refill starts when the burst arrives.
    Admit {
        /// The (first) admission's number.
        id: AdmissionId,
        /// How many requests wait to go, at least 1.
        want: u32,
        /// What a recent response said of the tokens, not yet told (applied first): it rides
        /// along rather than cost a round trip.
        seen: Option<Seen>,
        /// An account call (`GET /usage`, `/limits`): the quota's closure does not hold it,
        /// since it is how one checks the quota.
        account: bool,
        /// The head of the queue, for the order between the queues of several processes (see
        /// `order`); `None` asks out of order (the memory authority always does).
        head: Option<Head>,
        /// The call's credits, where the gate spreads its quota (see [`credits`]): asked
        /// after the cooldown and before the token, taken with it (one admission at a time).
        /// A reading due is claimed instead ([`Answer::Read`]).
        credits: Option<Spend>,
    },
    /// The `/usage` reading claimed by an admission answered at `now` (`None`: no usable
    /// answer): the shared credit bucket follows it.
    Read {
        /// The spread's settings.
        spread: crate::core::rules::credits::Spread,
        /// The answer.
        reading: Option<Reading>,
    },
    /// Credits a process spent on its own while the shared state was out of reach (its store
    /// down): the shared bucket counts them as taken, at a known cost, so it neither spends
    /// them again nor learns from them that calls cost more than they do.
    Spent {
        /// The spread's settings.
        spread: crate::core::rules::credits::Spread,
        /// The credits.
        credits: f64,
    },
    /// The response to admission `id` came back: if it paused the refill, the refill restarts.
    Resume {
        /// The admission's number.
        id: AdmissionId,
    },
    /// What a response said of the allowance: a cooldown to hold (extended, never shortened),
    /// and the server's count of what is left, which lowers ours when someone else is draining
    /// the key (see [`Remaining`]) and halves the refill below 10% of the limit.
    Feedback {
        /// Hold every admission this long from now.
        cooldown_ms: Option<Millis>,
        /// `X-RateLimit-Limit` and `-Remaining`, when both came.
        remaining: Option<Remaining>,
    },
    /// End the cooldown now: the documented way out of a cooldown nobody wants any more.
    ClearCooldown,
    /// Spend a retry's cost from the shared retry budget, after crediting `refund` (successes
    /// seen since the last charge).
    Charge {
        /// The retry's cost (0 only credits).
        cost: f64,
        /// Credited first, up to the capacity.
        refund: f64,
    },
    /// Close admissions for `ms` because the monthly quota is spent; 0 reopens.
    Quota {
        /// How long admissions stay closed.
        ms: Millis,
    },
}

/// The head of a queue asking a store for a token: how long it has waited (the store puts its
/// arrival on its own clock) and its lane.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Head {
    /// Milliseconds since it came.
    pub waited_ms: Millis,
    /// Its lane and the lane's weight (`None` at the front of its queue).
    pub lane: Option<(LaneId, f64)>,
    /// Calls waiting in its queue, itself included (see [`Turn`]).
    pub waiting: u32,
}

/// What a recent response said of the tokens, riding along with the next admission.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Seen {
    /// The remaining count, which paces the bucket as [`Op::Feedback`] does.
    Remaining(Remaining),
    /// A learning gate's count of the tokens the key held when the server answered the request
    /// numbered `at` (see [`Answer::Admitted`]'s `seq`): the authority takes the requests
    /// admitted after it off, whoever admitted them.
    Count(Count, f64),
}

impl Seen {
    /// The same, told `ms` later: a remaining count's request is that much older.
    pub(crate) fn aged(self, ms: Millis) -> Seen {
        match self {
            Seen::Remaining(r) => Seen::Remaining(Remaining {
                age_ms: r.age_ms + ms,
                ..r
            }),
            count => count,
        }
    }
}

/// `X-RateLimit-Limit` and `X-RateLimit-Remaining` as one response reported them, and where
/// its request stands. The key is drained by someone else only when we believe in more tokens
/// than the server can hold now: its count as of that request (whole tokens: up to one more),
/// plus the refill since the request went, less the requests that went after the answer came.
/// An answer that says 0 a moment after a token came, or after others were admitted, is no
/// sign of anyone else.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Remaining {
    /// The bucket's capacity.
    pub limit: u64,
    /// Requests left, approximately.
    pub remaining: u64,
    /// Where the count is told later than the answer came (riding along with a store
    /// admission): the highest number (see [`Answer::Admitted`]'s `seq`) the gate had heard of
    /// when it came. Those numbered above it are taken to have gone after the answer, so they
    /// are not in its count (another process's admitted a moment before the answer came may
    /// be: the token of slack covers one). `None` where it is told as the answer comes:
    /// nothing went after it yet, and those admitted before it may be in its count.
    pub heard: Option<f64>,
    /// Milliseconds since the request went: the server's refill since then is there too. An
    /// age, not a time, so no process compares its clock with another's.
    pub age_ms: Millis,
}

/// Below this share of the limit left, a key drained by someone else refills at half rate.
pub(crate) const LOW_REMAINING: f64 = 0.1;

/// The authority's answer. Times are milliseconds from the authority's own now, so callers
/// never compare their clock with another process's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Answer {
    /// Admitted, `admissions` of them (at least 1, at most the `want` asked). `anchor`: the first
    /// admission paused the refill (report its response with [`Op::Resume`]); `next_ms`: when
    /// the next token will be there (0: now); `seq`: the first one's number among every request
    /// this state ever admitted (the others follow it), whoever asked.
    Admitted {
        /// The refill waits for the first admission's response.
        anchor: bool,
        /// Milliseconds until the next token.
        next_ms: Millis,
        /// How many requests may go.
        admissions: u32,
        /// The first one's number.
        seq: f64,
    },
    /// Not yet: come back in this many milliseconds (at least 1).
    Wait(Millis),
    /// The quota is closed for this many more milliseconds.
    Exhausted(Millis),
    /// Feedback was recorded: the cooldown now ends this many milliseconds from now (0:
    /// none), and whether the refill runs at half rate.
    Cooldown {
        /// Milliseconds of cooldown left.
        cooldown_ms: Millis,
        /// Half-rate refill.
        slow: bool,
    },
    /// A resume was recorded: milliseconds until the next token.
    Resumed(Millis),
    /// The budget paid; this many tokens are left (0 without a budget).
    Charged(f64),
    /// The budget could not pay; this many tokens are left.
    Refused(f64),
    /// The quota closure was recorded: closed this many more milliseconds (0: open).
    QuotaSet(Millis),
    /// The admission found a `/usage` reading due and claimed it: the asker reads now (an
    /// account call), nobody else until its answer or its lease's end.
    Read,
    /// A reading was recorded: the key's credits used, its limit, and the shared bucket's
    /// refill per millisecond.
    Credits {
        /// Credits used, as the bucket counts them.
        used: f64,
        /// The period's limit.
        limit: f64,
        /// The refill.
        per_ms: f64,
    },
}

/// The transitions every authority keeps: apply one operation at `now`, answer at once. The
/// memory authority is this process's; `gate.lua` is the Redis one (run synchronously by the
/// parity test, and asynchronously by a gate through its store link).
pub trait Transitions {
    /// Applies `op` at `now` (milliseconds on the authority's clock).
    fn apply(&mut self, now: Millis, op: &Op) -> Answer;
}

/// An authority that answers at once, in this process: the gate's own memory, or a slot the
/// threads of the process share. Each is an authority a gate can hold (`gate::Authority`),
/// asked directly, not through a store link.
pub trait Immediate: Transitions {
    /// May the head of the queue (its `turn`: its arrival and lane) go now (an `account` call
    /// past a spent quota; with its `credits`, where the spread is shared)? [`Op::Admit`],
    /// plus whatever keeps the order fair between the queues that share the state.
    fn admit(
        &mut self,
        now: Millis,
        id: AdmissionId,
        turn: Turn,
        account: bool,
        credits: Option<Spend>,
    ) -> Answer;
    /// [`admit`](Self::admit), with the fair order the queues sharing the state keep as this
    /// admission found it (none where no other queue shares it, or when it was not asked).
    /// Returned, not kept: an idle gate holds no copy of it.
    fn admit_in_order(
        &mut self,
        now: Millis,
        id: AdmissionId,
        turn: Turn,
        account: bool,
        credits: Option<Spend>,
    ) -> (Answer, Option<Shares>) {
        (self.admit(now, id, turn, account, credits), None)
    }
    /// The allowance the queues sharing the state follow, where another of them may have set
    /// it (none where no other queue shares it).
    fn followed(&mut self) -> Option<Rate> {
        None
    }
    /// When the caller with `ahead` others in front of it could be admitted.
    fn predict(&mut self, now: Millis, ahead: usize) -> Millis;
    /// Whether the head of the queue could have gone by `at` (at most `now`), had its wake-up
    /// come on time. Where others share the state, nobody can say: no.
    fn ready_by(&mut self, _now: Millis, _at: Millis) -> bool {
        false
    }
    /// No admission before this time (0 when never held).
    fn cooldown_until(&mut self) -> Millis;
    /// Whether the refill runs at half rate.
    fn slow(&mut self) -> bool;
    /// Tokens in the retry budget, if there is one.
    fn budget_left(&mut self) -> Option<f64>;
    /// [`cooldown_until`](Self::cooldown_until), [`slow`](Self::slow) and
    /// [`budget_left`](Self::budget_left) at one look (`stats()` asks them of every gate).
    fn standing(&mut self) -> (Millis, bool, Option<f64>) {
        (self.cooldown_until(), self.slow(), self.budget_left())
    }
    /// Whether nothing here is worth keeping (made anew, the state would be the same).
    fn idle(&mut self, now: Millis) -> bool;
    /// Gives a budget-less gate this budget.
    fn install_budget(&mut self, config: RefillingConfig);
    /// Leaves at most `left` tokens in the retry budget.
    fn cap_budget(&mut self, left: f64);
    /// The allowance the state follows now (where threads share it, the one the last of them
    /// to learn something set).
    fn rate(&mut self) -> Rate;
    /// Follows a learned allowance from `now`, with the server's count of tokens when it gave
    /// one (as of the request numbered `at`, see [`Seen::Count`]).
    fn tune(&mut self, now: Millis, rate: Rate, count: Option<(Count, f64)>);
    /// The shared spread's credits used, limit and refill per millisecond as the state holds
    /// them at `now` (zeros before a reading).
    fn credits(&mut self, now: Millis) -> (f64, f64, f64);
    /// Credits a success's `refund` to the retry budget ([`Op::Charge`] at no cost). Where the
    /// state is shared it may ride along with the next transaction instead of costing one.
    fn credit(&mut self, now: Millis, refund: f64) {
        self.apply(now, &Op::Charge { cost: 0.0, refund });
    }
}

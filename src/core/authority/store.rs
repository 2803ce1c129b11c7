//! What `gate.lua` keeps for a gate, in Rust: the memory authority's state and the order between
//! the queues of the processes that share it. The simulator's store runs it, and the parity test
//! holds the script to it.

use super::credits::CreditView;
use super::fair::{Shares, Turn};
use super::memory::MemoryAuthority;
use super::order::{self, Ask, Order};
use super::{Answer, Op, Transitions};
use crate::core::rules::allowance::Rate;
use crate::core::rules::budget::RefillingConfig;
use crate::core::Millis;

/// One gate's state in a store.
#[derive(Debug, Clone)]
pub struct StoreAuthority {
    /// The state every process draws from.
    pub memory: MemoryAuthority,
    order: [f64; order::WORDS],
}

impl StoreAuthority {
    /// A full bucket from `now`, with nobody in queue.
    pub fn new(rate: Rate, budget: Option<RefillingConfig>, now: Millis) -> Self {
        StoreAuthority {
            memory: MemoryAuthority::new(rate, budget, now),
            order: [0.0; order::WORDS],
        }
    }

    /// Follows the allowance an operation carries, from `now`, as the script does when the
    /// rate it is called with is not the one it holds: a faster one brings every claim's next
    /// ask forward to one token interval from now at most.
    pub fn follow(&mut self, now: Millis, rate: Rate) {
        if rate.ms_per_token() < self.memory.rate().ms_per_token() {
            Order(&mut self.order).hasten(now + rate.ms_per_token());
        }
        self.memory.tune(now, rate, None);
    }

    /// Applies `op` for the process numbered `who` (see [`claimant`](crate::store::claimant)):
    /// an admission that names its queue's head is judged in order (the gate's rate gives the
    /// claims' timing, as the script's arguments do).
    pub fn apply_for(&mut self, now: Millis, who: f64, rate: Rate, op: &Op) -> Answer {
        match *op {
            Op::Admit {
                id,
                want,
                seen,
                account,
                head: Some(head),
                credits,
            } => {
                let ask = Ask {
                    who,
                    turn: Turn {
                        since: now - head.waited_ms,
                        lane: head.lane,
                        waiting: head.waiting,
                    },
                    id,
                    want,
                    seen,
                    account,
                    credits,
                };
                let timing = order::timing(rate);
                Order(&mut self.order)
                    .admit(&mut self.memory, now, &ask, timing)
                    .0
            }
            ref op => self.memory.apply(now, op),
        }
    }

    /// What the answer to `op`, just applied at `now`, tells of the shared spread (as the
    /// script's ninth field): after an admission that asked for credits, or a reading.
    pub fn credit_view(&mut self, now: Millis, op: &Op) -> Option<CreditView> {
        let spend = match *op {
            Op::Admit { credits, .. } => Some(credits?),
            Op::Read { .. } | Op::Spent { .. } => None,
            _ => return None,
        };
        self.memory.shared_credits_mut().view(now, spend)
    }

    /// The fair order's clock and lanes, as the script's answer gives them.
    pub fn shares(&mut self) -> Shares {
        Order(&mut self.order).shares()
    }

    /// The order's numbers, in the script's layout.
    pub fn order(&self) -> &[f64; order::WORDS] {
        &self.order
    }
}

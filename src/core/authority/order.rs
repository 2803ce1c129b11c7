//! The order between queues that share one gate's state: the threads of a process (in their
//! slot) or the processes of a fleet (in `gate.lua`'s `order` field, the same numbers in the
//! same layout). The head of each waiting queue leaves a claim, and a token goes to the head the
//! fair order puts first ([`fair`]: the smallest start tag, then the earliest arrival),
//! whichever queue holds it; a head behind it waits until it has asked.
//!
//! The words: the fair order's, then `CLAIMS` claims of four (who, lane + 1 or 0 for the
//! front, arrival, when it asks next), who 0 for none. More queues than that wait unordered.

use super::credits::Spend;
use super::fair::{self, Fair, Shares, Turn};
use super::memory::MemoryAuthority;
use super::{AdmissionId, Answer, Op, Seen, Transitions};
use crate::core::rules::allowance::Rate;
use crate::core::rules::fair::{LaneId, Tag};
use crate::core::Millis;

/// Heads of queues that can hold a claim at once.
pub(crate) const CLAIMS: usize = 8;
const CLAIM: usize = 4;
/// Numbers the order takes.
pub(crate) const WORDS: usize = fair::WORDS + CLAIM * CLAIMS;

/// The longest a claim outlives its time: a queue that emptied, or whose thread or process died,
/// holds the others back at most this long (and at most one token interval).
pub(crate) const GRACE_MS: Millis = 250.0;

/// Where a head goes among the queues: its start tag, its arrival, its queue's number.
type Place = (Tag, f64, f64);

/// How long a claim outlives its time at `rate`, and how soon a head behind another looks
/// again once that one is due: one token interval (at most [`GRACE_MS`]), and an eighth of one
/// (1 to 20 ms).
pub(crate) fn timing(rate: Rate) -> (Millis, Millis) {
    let interval = rate.ms_per_token();
    (interval.min(GRACE_MS), (interval / 8.0).clamp(1.0, 20.0))
}

/// An admission asked for in order: what [`Op::Admit`] carries, and who asks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Ask {
    /// The queue's number (a thread's, a process's), not 0.
    pub who: f64,
    /// Its head's arrival (on the authority's clock) and lane.
    pub turn: Turn,
    /// The (first) admission's number.
    pub id: AdmissionId,
    /// How many wait to go (a queue waiting on a store takes what it can use in one trip).
    pub want: u32,
    /// What a recent response said, applied first.
    pub seen: Option<Seen>,
    /// An account call.
    pub account: bool,
    /// The call's credits, where the gate spreads its quota.
    pub credits: Option<Spend>,
}

/// The order's words.
pub(crate) struct Order<'a>(pub &'a mut [f64]);

impl Order<'_> {
    fn parts(&mut self) -> (Fair<'_>, &mut [f64]) {
        let (fair, claims) = self.0.split_at_mut(fair::WORDS);
        (Fair(fair), claims)
    }

    fn claims(&self) -> std::slice::ChunksExact<'_, f64> {
        self.0[fair::WORDS..].chunks_exact(CLAIM)
    }

    /// What the queues follow of the order.
    pub(crate) fn shares(&mut self) -> Shares {
        self.parts().0.shares()
    }

    /// Whether any queue holds a claim.
    pub(crate) fn claimed(&self) -> bool {
        self.claims().any(|c| c[0] != 0.0)
    }

    /// A faster allowance: no head asks again later than `by`.
    pub(crate) fn hasten(&mut self, by: Millis) {
        for c in self.parts().1.chunks_exact_mut(CLAIM) {
            if c[0] != 0.0 {
                c[3] = c[3].min(by);
            }
        }
    }

    /// May `ask`'s head go at `now`? The first head in the order among the claims (lapsed ones
    /// forgotten) gets the token: a head behind another waits until that one asks (`again`
    /// at least), and leaves its claim. While other queues have claims, one token at a time.
    /// The answer, and whether it is a wait for another queue's head.
    pub(crate) fn admit(
        &mut self,
        authority: &mut MemoryAuthority,
        now: Millis,
        ask: &Ask,
        (grace, again): (Millis, Millis),
    ) -> (Answer, bool) {
        authority.see(now, ask.seen);
        self.expire(now, grace);
        let shares = self.shares();
        let start = shares.start(ask.turn.lane.map(|(lane, _)| lane));
        let mut others = false;
        let mut first: Option<(Place, Millis)> = None;
        for c in self.claims().filter(|c| c[0] != 0.0 && c[0] != ask.who) {
            others = true;
            let lane = (c[1] != 0.0).then(|| c[1] as LaneId - 1);
            let place = (shares.start(lane), c[2], c[0]);
            let ahead = place.0 < start || (place.0 == start && place.1 < ask.turn.since);
            if ahead && first.is_none_or(|(f, _)| (place.0, place.1) < (f.0, f.1)) {
                first = Some((place, c[3]));
            }
        }
        if let Some((_, due)) = first {
            let wait = (due - now).max(again);
            self.put(ask, now + wait);
            return (Answer::Wait(wait), true);
        }
        let op = Op::Admit {
            id: ask.id,
            want: if others { 1 } else { ask.want },
            seen: None,
            account: ask.account,
            head: None,
            credits: ask.credits,
        };
        let answer = authority.apply(now, &op);
        match answer {
            Answer::Wait(ms) => self.put(ask, now + ms),
            Answer::Admitted {
                admissions,
                next_ms,
                ..
            } => {
                let mut fair = self.parts().0;
                for _ in 0..admissions {
                    fair.admitted(&ask.turn);
                }
                // A queue with more waiting keeps its place for its next head, which asks when
                // the next token comes: another queue asking first must not take that turn.
                match ask.turn.waiting > admissions {
                    true => self.put(ask, now + next_ms),
                    false => self.remove(ask.who),
                }
            }
            _ => self.remove(ask.who),
        }
        (answer, false)
    }

    /// Forgets claims whose queue has not asked again within `grace` of when it said it would.
    fn expire(&mut self, now: Millis, grace: Millis) {
        for c in self.parts().1.chunks_exact_mut(CLAIM) {
            if c[0] != 0.0 && c[3] + grace < now {
                c.fill(0.0);
            }
        }
    }

    /// Records (or updates) the asking queue's claim, if there is room.
    fn put(&mut self, ask: &Ask, due: Millis) {
        let find = |who: f64| self.claims().position(|c| c[0] == who);
        let spot = find(ask.who).or_else(|| find(0.0));
        let lane = ask.turn.lane.map_or(0.0, |(id, _)| f64::from(id) + 1.0);
        if let Some(i) = spot {
            let at = fair::WORDS + CLAIM * i;
            self.0[at..at + CLAIM].copy_from_slice(&[ask.who, lane, ask.turn.since, due]);
        }
    }

    fn remove(&mut self, who: f64) {
        for c in self.parts().1.chunks_exact_mut(CLAIM) {
            if c[0] == who {
                c.fill(0.0);
            }
        }
    }
}

//! The fair order between queues that share one gate's state (the threads of a process, or the
//! processes of a fleet through their store: see `order`): the virtual clock of
//! `fair` queuing and each lane's next start, kept beside the state, so that the heads of
//! every queue are ordered by the one schedule a single queue of all their calls would follow. A
//! lane is the same lane in every queue (lane 0, a wrapper's own calls; a named lane by its name;
//! an unnamed one by the order its queue made it); within a lane, heads go by arrival, whichever
//! queue holds them.
//!
//! The words: the clock, then `LANES` lanes of (lane + 1, next start), 0 for none. A tag is
//! kept in two words (its whole admissions and its fraction, in units of 2^-32), each exact in
//! an `f64` for the first 2^53 admissions of a gate. A lane whose next start the clock has
//! passed banks nothing, so its place is free; when every place holds a lane that is ahead, a
//! further lane starts at the clock (it is not held back by what it had before).

use crate::core::rules::fair::{self, LaneId, Tag};

/// Lanes whose next start the threads share.
pub(crate) const LANES: usize = 4;
/// Numbers the fair order takes in a slot.
pub(crate) const WORDS: usize = 2 + 3 * LANES;

const LOW: Tag = 1 << 32;

/// Which head asks for a token, for the order between the queues.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Turn {
    /// When it came (the authority's clock).
    pub since: f64,
    /// Its lane and the lane's weight; `None` at the front of its queue (the quota's probe, a
    /// route's scout), which goes at the clock and spends no lane's turn.
    pub lane: Option<(LaneId, f64)>,
    /// Calls waiting in its queue, itself included: while more wait than go, the queue keeps a
    /// claim for its next head (in this lane, from this arrival, until it asks).
    pub waiting: u32,
}

/// What the threads share of the order, as a queue follows it: the clock and the lanes' next
/// starts.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Shares {
    /// The start tag of the last head admitted, in any thread.
    pub clock: Tag,
    /// (lane, next start), for the lanes held.
    pub lanes: [Option<(LaneId, Tag)>; LANES],
}

impl Shares {
    /// The start tag of a head of `lane` (the front's: the clock).
    pub(crate) fn start(&self, lane: Option<LaneId>) -> Tag {
        let next = lane.and_then(|id| self.finish(id)).unwrap_or(0);
        fair::start(next, self.clock)
    }

    /// Where `lane` may start next, as far as the threads say.
    pub(crate) fn finish(&self, lane: LaneId) -> Option<Tag> {
        self.lanes
            .iter()
            .flatten()
            .find(|(id, _)| *id == lane)
            .map(|&(_, finish)| finish)
    }
}

fn read(w: &[f64]) -> Tag {
    (w[0] as Tag) * LOW + w[1] as Tag
}

fn write(w: &mut [f64], tag: Tag) {
    w[0] = (tag / LOW) as f64;
    w[1] = (tag % LOW) as f64;
}

/// The fair order's words in a slot.
pub(crate) struct Fair<'a>(pub &'a mut [f64]);

impl Fair<'_> {
    /// What a queue follows.
    // Never inlined: one copy for the six places that ask (3 KB of wasm).
    #[inline(never)]
    pub(crate) fn shares(&self) -> Shares {
        let mut shares = Shares {
            clock: read(&self.0[..2]),
            ..Shares::default()
        };
        for (held, w) in shares.lanes.iter_mut().zip(self.0[2..].chunks_exact(3)) {
            *held = (w[0] != 0.0).then(|| (w[0] as LaneId - 1, read(&w[1..])));
        }
        shares
    }

    /// The start tag of a head of `lane` (the front's: the clock).
    pub(crate) fn start(&self, lane: Option<LaneId>) -> Tag {
        self.shares().start(lane)
    }

    /// A head of `turn`'s lane was admitted: the clock moves to its start, and the lane's next
    /// start one turn (`1 / weight`) later. The front (at the clock) spends no lane's turn.
    pub(crate) fn admitted(&mut self, turn: &Turn) {
        let start = self.start(turn.lane.map(|(id, _)| id));
        let Some((lane, weight)) = turn.lane else {
            return;
        };
        let (clock, next) = fair::serve(start, weight);
        write(&mut self.0[..2], clock);
        let places = self.0[2..].chunks_exact_mut(3);
        let mut free = None;
        for w in places {
            if w[0] == f64::from(lane) + 1.0 {
                free = Some(w);
                break;
            }
            if free.is_none() && (w[0] == 0.0 || read(&w[1..]) <= start) {
                free = Some(w);
            }
        }
        if let Some(w) = free {
            w[0] = f64::from(lane) + 1.0;
            write(&mut w[1..], next);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(lane: LaneId, weight: f64) -> Turn {
        Turn {
            since: 0.0,
            lane: Some((lane, weight)),
            waiting: 1,
        }
    }

    #[test]
    fn a_lane_starts_one_turn_after_its_last_and_the_clock_follows_the_admitted() {
        let mut words = [0.0; WORDS];
        let mut fair = Fair(&mut words);
        fair.admitted(&turn(0, 1.0));
        fair.admitted(&turn(3, 4.0));
        assert_eq!(fair.start(Some(0)), LOW);
        assert_eq!(fair.start(Some(3)), LOW / 4);
        fair.admitted(&turn(3, 4.0));
        fair.admitted(&turn(3, 4.0));
        assert_eq!(fair.shares().clock, LOW / 2);
        assert_eq!(fair.start(None), LOW / 2, "the front goes at the clock");
        let shares = fair.shares();
        assert_eq!(shares.finish(3), Some(3 * LOW / 4));
        assert_eq!(shares.finish(9), None);
    }

    #[test]
    fn tags_past_an_f64_s_precision_stay_exact_and_a_spent_place_is_reused() {
        let mut words = [0.0; WORDS];
        let mut fair = Fair(&mut words);
        write(&mut fair.0[..2], (1 << 50) * LOW + 1);
        fair.admitted(&turn(1, 1.0));
        assert_eq!(fair.start(Some(1)), (1 << 50) * LOW + 1 + LOW);
        for lane in 2..=LANES as LaneId {
            fair.admitted(&turn(lane, 1.0));
        }
        // Every place holds a lane ahead of the clock: a fifth starts at the clock, unrecorded.
        fair.admitted(&turn(9, 1.0));
        assert_eq!(fair.shares().finish(9), None);
        // Lane 1's next start is passed: its place goes to the next lane that needs one.
        write(&mut fair.0[..2], (1 << 51) * LOW);
        fair.admitted(&turn(9, 2.0));
        assert_eq!(fair.shares().finish(9), Some((1 << 51) * LOW + LOW / 2));
    }
}

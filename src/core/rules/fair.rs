//! Fair queuing: the order in which lanes are served, one rule wherever their calls wait. A
//! gate's queue (`gate/queue.rs`) follows it, and so does the order the queues of several threads
//! or processes share (`authority/fair.rs` keeps its clock and the lanes' next starts in their
//! shared words); `src/store/gate.lua` is its Lua twin, held to it by `tests/parity.rs`.
//!
//! Start-time fair queuing: each lane's head is tagged with the virtual time its lane may start
//! at ([`start`]), the smallest tag goes first, and serving it moves the virtual clock to that
//! tag and the lane's next start `1 / weight` later (`serve`), in whole units of 2^-32 so that
//! tags compare exactly and a prediction is the queue's order. Start tags rather than deficit
//! round robin: one comparison per lane decides the head, no quantum to tune, and a lane with
//! nothing waiting banks nothing (it comes back at the clock), so its share is lent to the
//! others while it is away and no token is left unused while anyone waits. Over any window in
//! which two lanes stay busy their admissions divided by their weights differ by at most one
//! token each.

/// A lane's number among the gates' lanes (0: a wrapper's own calls).
pub(crate) type LaneId = u32;

/// Virtual time, in units of 2^-32 of a weight-1 admission.
pub(crate) type Tag = u128;

/// The most an admission costs: weights below 2^-21 are all alike, so that a cost is exact in an
/// `f64` (and in `gate.lua`'s numbers).
const MAX_COST: f64 = 9_007_199_254_740_992.0;

/// What one admission costs a lane of `weight` in virtual time: `2^32 / weight`, at least one
/// unit (weights above 2^32 are all alike) and at most 2^53.
pub(crate) fn cost(weight: f64) -> Tag {
    ((4_294_967_296.0 / weight).round().min(MAX_COST) as u64)
        .max(1)
        .into()
}

/// The start tag of a lane's head at virtual time `clock`: its lane's next start (0 for a lane
/// that kept none), or the clock if that is later.
pub(crate) fn start(next: Tag, clock: Tag) -> Tag {
    next.max(clock)
}

/// A head of a lane of `weight` starting at `start` is served: the new clock (its start) and the
/// lane's next start, one turn later.
pub(crate) fn serve(start: Tag, weight: f64) -> (Tag, Tag) {
    (start, start + cost(weight))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lane_that_was_away_starts_at_the_clock_and_a_heavier_one_sooner_again() {
        assert_eq!(start(0, 7), 7);
        assert_eq!(start(9, 7), 9);
        assert_eq!(serve(7, 1.0), (7, 7 + (1 << 32)));
        assert_eq!(serve(7, 4.0), (7, 7 + (1 << 30)));
    }

    #[test]
    fn a_cost_is_at_least_one_unit_and_at_most_two_to_the_53() {
        assert_eq!(cost(1e12), 1);
        assert_eq!(cost(1e-12), 1 << 53);
        assert_eq!(cost(3.0), 1_431_655_765);
    }
}

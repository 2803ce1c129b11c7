//! The gate's queue: calls waiting for admission. Calls come in lanes (a wrapper's `lane()`, each
//! with a weight), and tokens go to the lanes' heads in the fair order of `fair`: the smallest
//! start tag first, the earlier call on a tie.
//!
//! Within a lane a call keeps the place its arrival gave it: a retry that comes back from its
//! attempt, or a call moved here from another limiter's gate, goes in ahead of every call of its
//! lane that arrived after it. The quota's probe and a route's scout wait before every lane. A
//! call that leaves early (aborted, let go) is only marked gone, and skipped when the queue
//! moves, so leaving costs nothing however long the queue is.

use std::collections::VecDeque;

use super::ids::CallId;
use crate::core::authority::fair::Shares;
use crate::core::base::timeline::Timeline;
use crate::core::rules::fair::{self, cost, LaneId, Tag};

/// A call's place in the call order: lower goes first.
pub(crate) type Rank = u64;

/// The lane a call waits in, and the lane's share of admissions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Lane {
    /// Which lane.
    pub id: LaneId,
    /// Its share, against the other lanes' with calls waiting (positive and finite).
    pub weight: f64,
    /// Its calls draw on the spread's reserve (`lane({ reserve: true })`): when the spread has
    /// no credit for the head of the queue, the head of such a lane may go before it.
    pub reserve: bool,
}

impl Default for Lane {
    fn default() -> Self {
        Lane {
            id: 0,
            weight: 1.0,
            reserve: false,
        }
    }
}

/// A place in queue: the call, and which of its visits to the queue this is (a retry joins again).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    /// Its place in the call order.
    pub rank: Rank,
    /// The waiting call.
    pub call: CallId,
    /// The visit, matched against the call's own count to tell a stale place from a live one.
    pub visit: u32,
}

/// Where the head is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Front,
    /// A lane (its index), from its arrivals or from its returns.
    Lane(usize, bool),
}

/// One lane's places, some of them stale: arrivals (calls joining for the first time, who come
/// in call order by themselves) and returns (everyone else, ordered by rank).
#[derive(Debug)]
struct LaneQueue {
    lane: Lane,
    arrivals: VecDeque<Place>,
    /// By rank, then by call and visit.
    returns: Timeline<Place, Rank, (CallId, u32)>,
    live: usize,
    /// The virtual time its next admission may start at.
    finish: Tag,
}

impl LaneQueue {
    fn new(lane: Lane) -> LaneQueue {
        LaneQueue {
            lane,
            arrivals: VecDeque::new(),
            returns: Timeline::default(),
            live: 0,
            finish: 0,
        }
    }

    /// The start tag of its head at virtual time `clock`.
    fn start(&self, clock: Tag) -> Tag {
        fair::start(self.finish, clock)
    }

    /// Its head (from its returns or not), dropping stale places in front of it.
    fn head(&mut self, is_live: &impl Fn(Place) -> bool) -> Option<(bool, Place)> {
        while self.arrivals.front().is_some_and(|&p| !is_live(p)) {
            self.arrivals.pop_front();
        }
        while self.returns.peek().is_some_and(|(_, &p)| !is_live(p)) {
            self.returns.pop();
        }
        match (self.arrivals.front(), self.returns.peek()) {
            (Some(&a), Some((_, &r))) if r.rank < a.rank => Some((true, r)),
            (Some(&a), _) => Some((false, a)),
            (None, Some((_, &r))) => Some((true, r)),
            (None, None) => None,
        }
    }

    /// Its live places in its own order.
    fn ordered(&self, is_live: &impl Fn(Place) -> bool) -> Vec<Place> {
        // The heap's own sort: rank order, without another sort's code in the module.
        let mut r = self.returns.clone().into_ordered().peekable();
        let mut a = self.arrivals.iter().copied().peekable();
        let mut places = Vec::with_capacity(self.live);
        loop {
            let next = match (a.peek(), r.peek()) {
                (Some(x), Some(y)) if y.rank < x.rank => r.next(),
                (Some(_), _) => a.next(),
                (None, Some(_)) => r.next(),
                (None, None) => break,
            };
            places.extend(next.filter(|&p| is_live(p)));
        }
        places
    }

    fn stored(&self) -> usize {
        self.arrivals.len() + self.returns.len()
    }
}

/// An empty queue's place in the fair order (see [`Queue::turns`]): all an idle gate keeps of
/// its queue.
#[derive(Debug, Default)]
pub(super) struct Turns {
    clock: Tag,
    lanes: Box<[(LaneId, Tag)]>,
}

/// The places: the front (the probe and scouts, first come, first served, before anyone), then
/// the lanes, by start-time fair queuing.
#[derive(Debug, Default)]
pub struct Queue {
    front: VecDeque<Place>,
    front_live: usize,
    lanes: Vec<LaneQueue>,
    /// Virtual time: the start tag of the last lane head admitted.
    clock: Tag,
    live: usize,
}

impl Queue {
    /// Joins `lane` at the place its rank gives it there.
    pub fn push(&mut self, place: Place, lane: Lane) {
        let index = match self.lanes.iter().position(|l| l.lane.id == lane.id) {
            Some(index) => index,
            None => {
                self.lanes.push(LaneQueue::new(lane));
                self.lanes.len() - 1
            }
        };
        let l = &mut self.lanes[index];
        l.lane.weight = lane.weight;
        l.lane.reserve = lane.reserve;
        match l.arrivals.back() {
            Some(last) if last.rank > place.rank => {
                l.returns.push(place.rank, (place.call, place.visit), place)
            }
            _ => l.arrivals.push_back(place),
        }
        l.live += 1;
        self.live += 1;
    }

    /// Joins ahead of everyone, scouts included (the quota's probe, for which the rest wait).
    pub(crate) fn push_first(&mut self, place: Place) {
        self.front.push_front(place);
        self.front_live += 1;
        self.live += 1;
    }

    /// Joins at the front, after the probe and earlier scouts (a route's scout: see
    /// [`CallSpec::scout`]).
    ///
    /// [`CallSpec::scout`]: super::call::CallSpec::scout
    pub(crate) fn push_front(&mut self, place: Place) {
        self.front.push_back(place);
        self.front_live += 1;
        self.live += 1;
    }

    /// The head's part, dropping stale places in front of each part's first live one: the front
    /// first, then the lane whose head has the smallest start tag (the earlier call on a tie);
    /// with `reserve`, of the lanes that draw on the reserve only, the front passed over.
    fn head(&mut self, is_live: &impl Fn(Place) -> bool, reserve: bool) -> Option<(Part, Place)> {
        while self.front.front().is_some_and(|&p| !is_live(p)) {
            self.front.pop_front();
        }
        if let (Some(&place), false) = (self.front.front(), reserve) {
            return Some((Part::Front, place));
        }
        let clock = self.clock;
        let best = self
            .lanes
            .iter_mut()
            .enumerate()
            .filter_map(|(index, lane)| {
                let (returns, place) = lane.head(is_live)?;
                let key = (lane.start(clock), place.rank);
                let counted = !reserve || lane.lane.reserve;
                counted.then_some((key, Part::Lane(index, returns), place))
            })
            .min_by_key(|&(key, ..)| key);
        best.map(|(_, part, place)| (part, place))
    }

    /// The first place for which `is_live` holds, dropping stale ones in front of it.
    pub fn front(&mut self, is_live: impl Fn(Place) -> bool) -> Option<Place> {
        self.head(&is_live, false).map(|(_, place)| place)
    }

    /// The first live place of the lanes that draw on the reserve, in their fair order (the
    /// one that may go when the head waits for credit the reserve has).
    pub(crate) fn reserve_front(&mut self, is_live: impl Fn(Place) -> bool) -> Option<Place> {
        self.head(&is_live, true).map(|(_, place)| place)
    }

    /// `place`, at the front or at its lane's head (the caller found it live with
    /// [`front`](Self::front) or `reserve_front`), is admitted: its
    /// lane's turn is spent.
    pub fn pop(&mut self, place: Place) {
        self.take(place, true);
    }

    /// `place`, as for [`pop`](Self::pop), leaves without a token (its deadline passed): no
    /// lane's turn is spent.
    pub(crate) fn pass(&mut self, place: Place) {
        self.take(place, false);
    }

    fn take(&mut self, place: Place, admitted: bool) {
        let part = match self.front.front() {
            Some(&p) if p == place => Some(Part::Front),
            _ => self.lanes.iter_mut().enumerate().find_map(|(index, lane)| {
                let (returns, head) = lane.head(&|_| true)?;
                (head == place).then_some(Part::Lane(index, returns))
            }),
        };
        let taken = match part {
            Some(Part::Front) => {
                self.front_live -= 1;
                self.front.pop_front().is_some()
            }
            Some(Part::Lane(index, returns)) => {
                let lane = &mut self.lanes[index];
                let taken = match returns {
                    true => lane.returns.pop().is_some(),
                    false => lane.arrivals.pop_front().is_some(),
                };
                lane.live -= 1;
                if admitted {
                    (self.clock, lane.finish) =
                        fair::serve(lane.start(self.clock), lane.lane.weight);
                }
                taken
            }
            None => false,
        };
        if taken {
            self.live -= 1;
        }
        // A lane with nobody waiting whose turn has come round again holds nothing worth keeping.
        let clock = self.clock;
        self.lanes.retain(|l| l.live > 0 || l.finish > clock);
        self.forget_if_idle();
    }

    /// A live place left the queue from anywhere in it (it is skipped later): from the front, or
    /// from its lane.
    pub(crate) fn left(&mut self, from: Option<LaneId>) {
        match from.and_then(|id| self.lanes.iter_mut().find(|l| l.lane.id == id)) {
            Some(lane) => lane.live -= 1,
            None => self.front_live -= 1,
        }
        self.live -= 1;
        self.forget_if_idle();
    }

    /// With nobody waiting, no lane keeps a turn: as in start-time fair queuing, where an idle
    /// server's clock jumps to the last finish, every lane starts at the clock when it comes
    /// back. So a lane made per call (each one ahead of the clock by its one turn) is not kept
    /// for ever, its search growing with every call.
    fn forget_if_idle(&mut self) {
        if self.live == 0 {
            let last = self.lanes.iter().map(|l| l.finish).max();
            self.clock = self.clock.max(last.unwrap_or(0));
            self.lanes.clear();
            self.front.clear();
        }
    }

    /// Follows the order other threads' queues share with this one: the clock moves up to
    /// theirs, and each lane starts no earlier than they say (what this queue has not heard of
    /// yet, they admitted).
    pub(crate) fn follow(&mut self, shares: Option<&Shares>) {
        let Some(shares) = shares else {
            return;
        };
        self.clock = self.clock.max(shares.clock);
        for lane in &mut self.lanes {
            if let Some(finish) = shares.finish(lane.lane.id) {
                lane.finish = lane.finish.max(finish);
            }
        }
    }

    /// Calls waiting in `lane`.
    pub(crate) fn waiting_in(&self, lane: LaneId) -> usize {
        self.lanes
            .iter()
            .find(|l| l.lane.id == lane)
            .map_or(0, |l| l.live)
    }

    /// Calls waiting.
    pub fn len(&self) -> usize {
        self.live
    }

    /// Nobody waits.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// What an empty queue keeps of the order: the clock, and each lane's next start where it
    /// is past the clock (where it is not, a lane starts at the clock, as a new one does).
    pub(super) fn turns(&self) -> Turns {
        let lanes = self.lanes.iter().filter(|l| l.finish > self.clock);
        Turns {
            clock: self.clock,
            lanes: lanes.map(|l| (l.lane.id, l.finish)).collect(),
        }
    }

    /// An empty queue that goes on from `turns`.
    pub(super) fn resume(turns: Turns) -> Queue {
        let lanes = turns.lanes.iter().map(|&(id, finish)| LaneQueue {
            finish,
            ..LaneQueue::new(Lane {
                id,
                ..Lane::default()
            })
        });
        Queue {
            lanes: lanes.collect(),
            clock: turns.clock,
            ..Queue::default()
        }
    }

    /// How many of the calls waiting now go before a call joining `lane` now, if no other call
    /// joins meanwhile: everyone at the front, everyone of its lane, and of each other lane
    /// those whose start tags come no later than its own.
    pub fn ahead(&self, lane: Lane) -> usize {
        let own = self.lanes.iter().find(|l| l.lane.id == lane.id);
        let (start, mine) = match own {
            Some(l) => (l.start(self.clock), l.live),
            None => (self.clock, 0),
        };
        let tag = start + mine as Tag * cost(lane.weight);
        let others: usize = self
            .lanes
            .iter()
            .filter(|l| l.lane.id != lane.id && l.live > 0)
            .map(|l| {
                let from = l.start(self.clock);
                if tag < from {
                    return 0;
                }
                // Its calls starting no later than `tag` (on a tie the earlier call goes first).
                let turns = (tag - from) / cost(l.lane.weight) + 1;
                turns.min(l.live as Tag) as usize
            })
            .sum();
        self.front_live + mine + others
    }

    /// The live places in the order they would be admitted if nobody else joined.
    pub fn ordered(&self, is_live: impl Fn(Place) -> bool) -> Vec<Place> {
        let mut places: Vec<Place> = self.front.iter().copied().filter(|&p| is_live(p)).collect();
        let mut lanes: Vec<(Tag, f64, VecDeque<Place>)> = self
            .lanes
            .iter()
            .map(|l| (l.finish, l.lane.weight, l.ordered(&is_live).into()))
            .collect();
        let mut clock = self.clock;
        loop {
            // As `head` chooses: the smallest start tag, the earlier call on a tie.
            let best = lanes
                .iter()
                .enumerate()
                .filter_map(|(index, (finish, _, waiting))| {
                    Some((fair::start(*finish, clock), waiting.front()?.rank, index))
                })
                .min();
            let Some((start, _, index)) = best else {
                break;
            };
            let (finish, weight, waiting) = &mut lanes[index];
            places.extend(waiting.pop_front());
            (clock, *finish) = fair::serve(start, *weight);
        }
        places
    }

    /// Drops stale places once they outnumber live ones, so marks cannot pile up.
    pub(crate) fn compact(&mut self, is_live: impl Fn(Place) -> bool) {
        let stored = self.front.len() + self.lanes.iter().map(LaneQueue::stored).sum::<usize>();
        if stored > 2 * self.live + 64 {
            self.front.retain(|&p| is_live(p));
            for lane in &mut self.lanes {
                lane.arrivals.retain(|&p| is_live(p));
                lane.returns.retain(|_, &p| is_live(p));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place(rank: Rank) -> Place {
        Place {
            rank,
            call: rank,
            visit: 1,
        }
    }

    fn lane(id: LaneId, weight: f64) -> Lane {
        Lane {
            id,
            weight,
            reserve: false,
        }
    }

    #[test]
    fn goes_in_order_and_skips_those_who_left() {
        let mut queue = Queue::default();
        for rank in 0..4 {
            queue.push(place(rank), Lane::default());
        }
        let gone = [1u64, 2];
        queue.left(Some(0));
        queue.left(Some(0));
        let live = |p: Place| !gone.contains(&p.call);
        assert_eq!(queue.front(live).map(|p| p.call), Some(0));
        queue.pop(place(0));
        assert_eq!(queue.front(live).map(|p| p.call), Some(3));
        queue.pop(place(3));
        assert!(queue.is_empty());
        assert_eq!(queue.front(live), None);
        queue.push(place(7), Lane::default());
        queue.push_front(place(8));
        assert_eq!(queue.front(live).map(|p| p.call), Some(8));
        assert_eq!(queue.len(), 2);
    }

    #[test]
    fn a_call_that_comes_back_goes_ahead_of_those_who_came_after_it() {
        let mut queue = Queue::default();
        for rank in [2, 3, 5] {
            queue.push(place(rank), Lane::default());
        }
        // Back from their attempts: 1 came first of all, 4 between 3 and 5.
        queue.push(place(4), Lane::default());
        queue.push(place(1), Lane::default());
        let order: Vec<Rank> = queue.ordered(|_| true).iter().map(|p| p.rank).collect();
        assert_eq!(order, [1, 2, 3, 4, 5]);
        let mut taken = Vec::new();
        while let Some(p) = queue.front(|_| true) {
            taken.push(p.rank);
            queue.pop(p);
        }
        assert_eq!(taken, [1, 2, 3, 4, 5]);
        assert!(queue.is_empty());
    }

    #[test]
    fn lanes_share_by_weight_and_a_lane_that_comes_back_banks_nothing() {
        let mut queue = Queue::default();
        // 40 background calls (weight 1), then 8 live ones (weight 9).
        for rank in 0..40 {
            queue.push(place(rank), lane(1, 1.0));
        }
        for rank in 40..48 {
            queue.push(place(rank), lane(2, 9.0));
        }
        assert_eq!(
            queue.ahead(lane(2, 9.0)),
            8 + 1,
            "one background call goes first"
        );
        let predicted: Vec<Rank> = queue.ordered(|_| true).iter().map(|p| p.rank).collect();
        let mut taken = Vec::new();
        while let Some(p) = queue.front(|_| true) {
            taken.push(p.rank);
            queue.pop(p);
        }
        assert_eq!(taken, predicted);
        // The background lane's first, then nine live for one background.
        assert_eq!(&taken[..10], &[0, 40, 41, 42, 43, 44, 45, 46, 47, 1]);
        assert_eq!(&taken[10..], (2..40).collect::<Vec<_>>());
        // Away while the other lane went on alone, the live lane comes back at the clock.
        queue.push(place(100), lane(1, 1.0));
        queue.push(place(101), lane(1, 1.0));
        queue.pop(place(100));
        queue.push(place(102), lane(2, 9.0));
        assert_eq!(queue.front(|_| true).map(|p| p.rank), Some(102));
    }

    #[test]
    fn a_lane_made_per_call_is_not_kept_once_nobody_waits() {
        let mut queue = Queue::default();
        for rank in 0..1_000 {
            queue.push(place(rank), lane(rank as LaneId + 1, 1.0));
            queue.pop(place(rank));
        }
        assert_eq!(queue.lanes.len(), 0);
        // While calls wait, the lanes ahead are kept: the turns they had still count.
        queue.push(place(2_000), lane(1, 1.0));
        queue.push(place(2_001), lane(1, 1.0));
        queue.pop(place(2_000));
        queue.push(place(2_002), lane(2, 1.0));
        assert_eq!(queue.front(|_| true).map(|p| p.rank), Some(2_002));
    }

    #[test]
    fn a_head_let_go_without_a_token_spends_no_turn() {
        let mut queue = Queue::default();
        for rank in 0..3 {
            queue.push(place(rank), lane(1, 1.0));
        }
        queue.push(place(3), lane(2, 1.0));
        queue.pop(place(0)); // lane 1 has had its turn
        assert_eq!(queue.front(|_| true).map(|p| p.rank), Some(3));
        queue.pass(place(3)); // let go: lane 2 spent nothing, and its next call has the turn
        queue.push(place(4), lane(2, 1.0));
        assert_eq!(queue.front(|_| true).map(|p| p.rank), Some(4));
        queue.pop(place(4));
        assert_eq!(queue.front(|_| true).map(|p| p.rank), Some(1));
    }

    #[test]
    fn the_reserve_lanes_head_is_found_behind_the_head_and_goes_alone() {
        let mut queue = Queue::default();
        let reserve = |id| Lane {
            reserve: true,
            ..lane(id, 1.0)
        };
        for rank in 0..3 {
            queue.push(place(rank), lane(1, 1.0));
        }
        queue.push(place(3), reserve(2));
        queue.push(place(4), reserve(2));
        queue.push_front(place(9));
        assert_eq!(queue.front(|_| true).map(|p| p.rank), Some(9));
        assert_eq!(
            queue.reserve_front(|_| true).map(|p| p.rank),
            Some(3),
            "past the front and the lanes that draw on none"
        );
        queue.pop(place(3));
        queue.pop(place(9));
        assert_eq!(
            queue.front(|_| true).map(|p| p.rank),
            Some(0),
            "left as it was"
        );
        assert_eq!(queue.len(), 4);
    }
}

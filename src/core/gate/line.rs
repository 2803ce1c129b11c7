//! The gate's line: calls waiting for admission, in call order. A call keeps the place its
//! arrival gave it: a retry that comes back from its attempt, or a call moved here from another
//! limiter's gate, goes in ahead of every call that arrived after it. (A route's scout
//! alone goes to the very front.) A call that leaves early (aborted, let go) is only marked gone,
//! and skipped when the line moves, so leaving costs nothing however long the line is.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use super::CallId;

/// A call's place in the call order: lower goes first.
pub type Rank = u64;

/// A place in line: the call, and which of its visits to the line this is (a retry joins again).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Place {
    /// Its place in the call order (first field: places order by it).
    pub rank: Rank,
    /// The waiting call.
    pub call: CallId,
    /// The visit, matched against the call's own count to tell a stale place from a live one.
    pub visit: u32,
}

/// Which part of the line the head is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Scouts,
    Arrivals,
    Returns,
}

/// The places, some of them stale, in three parts: scouts (first come, first served, before
/// anyone), arrivals (calls joining for the first time, who come in call order by themselves),
/// and returns (everyone else, ordered by rank).
#[derive(Debug, Default)]
pub struct Line {
    scouts: VecDeque<Place>,
    arrivals: VecDeque<Place>,
    returns: BinaryHeap<Reverse<Place>>,
    live: usize,
}

impl Line {
    /// Joins at the place its rank gives it.
    pub fn push(&mut self, place: Place) {
        match self.arrivals.back() {
            Some(last) if last.rank > place.rank => self.returns.push(Reverse(place)),
            _ => self.arrivals.push_back(place),
        }
        self.joined();
    }

    /// Joins ahead of everyone, scouts included (the quota's probe, for which the rest wait).
    pub fn push_first(&mut self, place: Place) {
        self.scouts.push_front(place);
        self.joined();
    }

    /// Joins at the front (a route's scout: see [`CallSpec::scout`]).
    ///
    /// [`CallSpec::scout`]: super::call::CallSpec::scout
    pub fn push_front(&mut self, place: Place) {
        self.scouts.push_back(place);
        self.joined();
    }

    fn joined(&mut self) {
        self.live += 1;
    }

    /// The head's part, dropping stale places in front of each part's first live one.
    fn head(&mut self, is_live: &impl Fn(Place) -> bool) -> Option<(Part, Place)> {
        while self.scouts.front().is_some_and(|&p| !is_live(p)) {
            self.scouts.pop_front();
        }
        if let Some(&place) = self.scouts.front() {
            return Some((Part::Scouts, place));
        }
        while self.arrivals.front().is_some_and(|&p| !is_live(p)) {
            self.arrivals.pop_front();
        }
        while self.returns.peek().is_some_and(|p| !is_live(p.0)) {
            self.returns.pop();
        }
        match (self.arrivals.front(), self.returns.peek()) {
            (Some(&a), Some(r)) if r.0.rank < a.rank => Some((Part::Returns, r.0)),
            (Some(&a), _) => Some((Part::Arrivals, a)),
            (None, Some(r)) => Some((Part::Returns, r.0)),
            (None, None) => None,
        }
    }

    /// The first place for which `is_live` holds, dropping stale ones in front of it.
    pub fn front(&mut self, is_live: impl Fn(Place) -> bool) -> Option<Place> {
        self.head(&is_live).map(|(_, place)| place)
    }

    /// Takes the front place (the caller found it live with [`front`](Self::front)).
    pub fn pop(&mut self) {
        let taken = match self.head(&|_| true) {
            Some((Part::Scouts, _)) => self.scouts.pop_front().is_some(),
            Some((Part::Arrivals, _)) => self.arrivals.pop_front().is_some(),
            Some((Part::Returns, _)) => self.returns.pop().is_some(),
            None => false,
        };
        if taken {
            self.live -= 1;
        }
    }

    /// A live place left the line from anywhere in it (it is skipped later).
    pub fn left(&mut self) {
        self.live -= 1;
    }

    /// Calls waiting.
    pub fn len(&self) -> usize {
        self.live
    }

    /// Nobody waits.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// The places in line order, stale ones included (the caller tells them apart).
    pub fn ordered(&self) -> Vec<Place> {
        // The heap's own sort: rank order, without another sort's code in the module.
        let returns = self.returns.clone().into_sorted_vec();
        let returns = returns.into_iter().rev().map(|p| p.0);
        let mut places =
            Vec::with_capacity(self.scouts.len() + self.arrivals.len() + returns.len());
        places.extend(self.scouts.iter().copied());
        let (mut a, mut r) = (
            self.arrivals.iter().peekable(),
            returns.into_iter().peekable(),
        );
        loop {
            let next = match (a.peek(), r.peek()) {
                (Some(x), Some(y)) if y.rank < x.rank => r.next(),
                (Some(_), _) => a.next().copied(),
                (None, Some(_)) => r.next(),
                (None, None) => break,
            };
            places.extend(next);
        }
        places
    }

    /// Drops stale places once they outnumber live ones, so marks cannot pile up.
    pub fn compact(&mut self, is_live: impl Fn(Place) -> bool) {
        let stored = self.scouts.len() + self.arrivals.len() + self.returns.len();
        if stored > 2 * self.live + 64 {
            self.scouts.retain(|&p| is_live(p));
            self.arrivals.retain(|&p| is_live(p));
            self.returns.retain(|p| is_live(p.0));
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

    #[test]
    fn goes_in_order_and_skips_those_who_left() {
        let mut line = Line::default();
        for rank in 0..4 {
            line.push(place(rank));
        }
        let gone = [1u64, 2];
        line.left();
        line.left();
        let live = |p: Place| !gone.contains(&p.call);
        assert_eq!(line.front(live).map(|p| p.call), Some(0));
        line.pop();
        assert_eq!(line.front(live).map(|p| p.call), Some(3));
        line.pop();
        assert!(line.is_empty());
        assert_eq!(line.front(live), None);
        line.push(place(7));
        line.push_front(place(8));
        assert_eq!(line.front(live).map(|p| p.call), Some(8));
        assert_eq!(line.len(), 2);
    }

    #[test]
    fn a_call_that_comes_back_goes_ahead_of_those_who_came_after_it() {
        let mut line = Line::default();
        for rank in [2, 3, 5] {
            line.push(place(rank));
        }
        // Back from their attempts: 1 came first of all, 4 between 3 and 5.
        line.push(place(4));
        line.push(place(1));
        let order: Vec<Rank> = line.ordered().iter().map(|p| p.rank).collect();
        assert_eq!(order, [1, 2, 3, 4, 5]);
        let mut taken = Vec::new();
        while let Some(p) = line.front(|_| true) {
            taken.push(p.rank);
            line.pop();
        }
        assert_eq!(taken, [1, 2, 3, 4, 5]);
        assert!(line.is_empty());
    }
}

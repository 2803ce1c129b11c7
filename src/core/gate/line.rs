//! The gate's line: calls waiting for admission, first come first served. A call that leaves
//! early (aborted, let go) is only marked gone, and skipped when the line moves, so leaving
//! costs nothing however long the line is.

use std::collections::VecDeque;

use super::CallId;

/// A place in line: the call, and which of its visits to the line this is (a retry joins again).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    /// The waiting call.
    pub call: CallId,
    /// The visit, matched against the call's own count to tell a stale place from a live one.
    pub visit: u32,
}

/// A FIFO of places, some of them stale.
#[derive(Debug, Default)]
pub struct Line {
    places: VecDeque<Place>,
    live: usize,
    peak: usize,
}

impl Line {
    /// Joins at the back.
    pub fn push(&mut self, place: Place) {
        self.places.push_back(place);
        self.live += 1;
        self.peak = self.peak.max(self.live);
    }

    /// Joins at the front (a route's scout: see [`CallSpec::scout`]).
    ///
    /// [`CallSpec::scout`]: super::call::CallSpec::scout
    pub fn push_front(&mut self, place: Place) {
        self.places.push_front(place);
        self.live += 1;
        self.peak = self.peak.max(self.live);
    }

    /// The first place for which `is_live` holds, dropping stale ones in front of it.
    pub fn front(&mut self, is_live: impl Fn(Place) -> bool) -> Option<Place> {
        while let Some(&place) = self.places.front() {
            if is_live(place) {
                return Some(place);
            }
            self.places.pop_front();
        }
        None
    }

    /// Takes the front place (the caller found it live with [`front`](Self::front)).
    pub fn pop(&mut self) {
        if self.places.pop_front().is_some() {
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

    /// The most calls ever waiting at once.
    pub fn peak(&self) -> usize {
        self.peak
    }

    /// The places, front first, stale ones included (the caller tells them apart).
    pub fn iter(&self) -> impl Iterator<Item = Place> + '_ {
        self.places.iter().copied()
    }

    /// Drops stale places once they outnumber live ones, so marks cannot pile up.
    pub fn compact(&mut self, is_live: impl Fn(Place) -> bool) {
        if self.places.len() > 2 * self.live + 64 {
            self.places.retain(|&p| is_live(p));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn goes_in_order_and_skips_those_who_left() {
        let mut line = Line::default();
        for call in 0..4 {
            line.push(Place { call, visit: 0 });
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
        assert_eq!(line.peak(), 4);
        line.push(Place { call: 7, visit: 0 });
        line.push_front(Place { call: 8, visit: 0 });
        assert_eq!(line.front(live).map(|p| p.call), Some(8));
        assert_eq!(line.len(), 2);
    }
}

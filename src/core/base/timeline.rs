//! Items in the order they come due: the gate's backoffs and deadlines, the gates' wake-ups, the
//! simulator's events and a lane's returning calls each wait in one. A binary heap, earliest
//! first; equal times go by the tie-break each item is pushed with (a call's or a gate's number,
//! the order events were scheduled in), so that a run is the same every time.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use crate::core::Millis;

/// What a `Timeline` orders by: virtual milliseconds, or a place in call order.
pub(crate) trait Time: Copy {
    /// The order of two times (a total one: milliseconds by [`f64::total_cmp`]).
    fn order(self, other: Self) -> Ordering;
}

impl Time for Millis {
    fn order(self, other: Self) -> Ordering {
        self.total_cmp(&other)
    }
}

impl Time for u64 {
    fn order(self, other: Self) -> Ordering {
        self.cmp(&other)
    }
}

/// Items by when they are due, and at equal times by their tie-breaks.
#[derive(Debug, Clone)]
pub(crate) struct Timeline<T, At = Millis, Tie = u64> {
    heap: BinaryHeap<Entry<T, At, Tie>>,
}

#[derive(Debug, Clone)]
struct Entry<T, At, Tie> {
    at: At,
    tie: Tie,
    item: T,
}

impl<T, At: Time, Tie: Ord> Ord for Entry<T, At, Tie> {
    /// Reversed: the max-heap gives the earliest first.
    fn cmp(&self, other: &Self) -> Ordering {
        other.at.order(self.at).then(other.tie.cmp(&self.tie))
    }
}
impl<T, At: Time, Tie: Ord> PartialOrd for Entry<T, At, Tie> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<T, At: Time, Tie: Ord> PartialEq for Entry<T, At, Tie> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl<T, At: Time, Tie: Ord> Eq for Entry<T, At, Tie> {}

impl<T, At, Tie> Default for Timeline<T, At, Tie> {
    fn default() -> Self {
        Timeline {
            heap: BinaryHeap::new(),
        }
    }
}

impl<T, At: Time, Tie: Ord> Timeline<T, At, Tie> {
    /// Keeps `item` until `at`; among items of the same time the smaller `tie` comes first
    /// (items of the same time and tie come in no particular order).
    pub(crate) fn push(&mut self, at: At, tie: Tie, item: T) {
        self.heap.push(Entry { at, tie, item });
    }

    /// The first item, and its time.
    pub(crate) fn peek(&self) -> Option<(At, &T)> {
        self.heap.peek().map(|e| (e.at, &e.item))
    }

    /// Takes the first item out, with its time.
    pub(crate) fn pop(&mut self) -> Option<(At, T)> {
        self.heap.pop().map(|e| (e.at, e.item))
    }

    /// How many items wait.
    pub(crate) fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether none waits.
    pub(crate) fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Keeps only the items `keep` says yes to.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(At, &T) -> bool) {
        self.heap.retain(|e| keep(e.at, &e.item));
    }

    /// Every item, with its time, in no particular order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (At, &T)> {
        self.heap.iter().map(|e| (e.at, &e.item))
    }

    /// Every item, the first first.
    pub(crate) fn into_ordered(self) -> impl Iterator<Item = T> {
        self.heap
            .into_sorted_vec()
            .into_iter()
            .rev()
            .map(|e| e.item)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain<T, At: Time, Tie: Ord>(mut timeline: Timeline<T, At, Tie>) -> Vec<(At, T)> {
        std::iter::from_fn(|| timeline.pop()).collect()
    }

    #[test]
    fn earliest_first_then_the_smaller_tie() {
        let mut t = Timeline::default();
        t.push(20.0, 0, "late");
        t.push(10.0, 3, "tie 3");
        t.push(10.0, 1, "tie 1");
        t.push(10.0, 2, "tie 2");
        t.push(-0.0, 0, "minus zero");
        t.push(0.0, 0, "zero");
        assert_eq!(t.peek(), Some((-0.0, &"minus zero")));
        assert_eq!(t.len(), 6);
        let order: Vec<_> = t.clone().into_ordered().collect();
        let popped: Vec<_> = drain(t).into_iter().map(|(_, item)| item).collect();
        assert_eq!(
            popped,
            ["minus zero", "zero", "tie 1", "tie 2", "tie 3", "late"]
        );
        assert_eq!(order, popped, "the same order either way");
    }

    #[test]
    fn places_in_call_order_and_what_is_kept() {
        let mut t: Timeline<char, u64, (u64, u32)> = Timeline::default();
        for (at, tie, item) in [
            (3, 1, 'c'),
            (1, 1, 'a'),
            (2, 1, 'b'),
            (2, 0, 'B'),
            (4, 1, 'd'),
        ] {
            t.push(at, (0, tie), item);
        }
        t.retain(|at, _| at % 2 == 0);
        let mut left: Vec<_> = t.iter().map(|(at, &item)| (at, item)).collect();
        left.sort_unstable();
        assert_eq!(left, [(2, 'B'), (2, 'b'), (4, 'd')]);
        assert_eq!(drain(t), [(2, 'B'), (2, 'b'), (4, 'd')]);
        assert!(Timeline::<()>::default().is_empty());
    }
}

//! Growing a vector that most often holds one item: a first push makes room for four, where
//! a gate's users, a credential's routes and the like stay at one for their whole life.

/// Pushes `item`, making room for it alone when `items` has none yet (after that, as `push`).
pub(crate) fn push_one<T>(items: &mut Vec<T>, item: T) {
    if items.capacity() == 0 {
        items.reserve_exact(1);
    }
    items.push(item);
}

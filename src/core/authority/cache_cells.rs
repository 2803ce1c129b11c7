//! The threads' cache claims (see `rules::shared_cache`) in the memory they share: a cell per
//! request, found by its name's hash, locked by the same transaction protocol as a gate's slot
//! (its words copied in, what changed copied out to a spare buffer made live at the let-go; a
//! lock taken over from a stalled thread makes that thread's late writes count for nothing and
//! its let-go fail). Two requests whose hashes meet share a cell: the one whose claim holds
//! keeps it, the other goes on alone.

use crate::core::authority::table::Key;
use crate::core::base::protocol;
use crate::core::rules::arena::Place;
use crate::core::rules::shared_cache::{self, put, Asked, Cell};
use crate::core::Millis;

/// The cells there are.
pub const CELLS: u32 = protocol::CELLS;

/// A cell's words: its request's key (two halves), then the claim's lease until, fresh until
/// and put at (the shared clock), and where the entry's bytes are in the ring (five words).
pub const CELL_WORDS: usize = protocol::CELL_WORDS;

/// The cells as one thread reaches them. A lock is a number `enter` gives and `leave` takes.
pub trait Cells {
    /// Locks cell `cell` and copies its live words into `words`: the lock (below 0: none).
    fn enter(&self, cell: u32, words: &mut [f64; CELL_WORDS]) -> i32;
    /// Lets go of `lock` on `cell`, making `words` live (`None`: nothing written);
    /// false when the lock was taken over meanwhile and nothing it wrote counts.
    fn leave(&self, cell: u32, lock: i32, words: Option<&[f64; CELL_WORDS]>) -> bool;
}

/// The cell of a request's `key`.
pub fn cell_of(key: Key) -> u32 {
    (key.1 as u32) % CELLS
}

/// The key of a request's shared name: its last 16 hex digits (see `shared_cache::name`).
pub fn key_of_name(name: &str) -> Option<Key> {
    let tail = name.get(name.len().checked_sub(16)?..)?;
    let half = |s: &str| u32::from_str_radix(s, 16).ok().map(|n| n as i32);
    Some((half(&tail[..8])?, half(&tail[8..])?))
}

/// Runs `f` on `key`'s cell (its claim, `ours` when the cell names `key`) while this thread
/// holds it, and writes the claim `f` returns, naming `key`; runs again when the lock was taken
/// over meanwhile. `None` when the cell could not be lock.
fn transact<C: Cells, T>(
    cells: &C,
    key: Key,
    mut f: impl FnMut(Cell) -> (T, Option<Cell>),
) -> Option<T> {
    let cell = cell_of(key);
    let names = [f64::from(key.0), f64::from(key.1)];
    loop {
        let mut words = [0.0; CELL_WORDS];
        let lock = cells.enter(cell, &mut words);
        if lock < 0 {
            return None;
        }
        let ours = words[..2] == names;
        let (out, write) = f(Cell::read(ours, &words[2..]));
        let written = write.map(|c| {
            let mut words = [0.0; CELL_WORDS];
            words[..2].copy_from_slice(&names);
            words[2..].copy_from_slice(&c.words());
            words
        });
        if cells.leave(cell, lock, written.as_ref()) {
            return Some(out);
        }
    }
}

/// A thread asks `key`'s cell at `now`, having found the bytes at `lost` overwritten (see
/// [`shared_cache::claim`]): the answer, and the cell as it was read (for a fresh entry's
/// place and age). [`Asked::Alone`] when the cell could not be lock.
pub fn claim<C: Cells>(cells: &C, key: Key, now: Millis, lost: Option<Place>) -> (Asked, Cell) {
    let asked = transact(cells, key, |cell| {
        let (asked, write) = shared_cache::claim(cell, now, lost);
        ((asked, cell), write)
    });
    asked.unwrap_or((Asked::Alone, Cell::default()))
}

/// This thread's claim on `key`'s cell ends at `now`, with an entry fresh for `fresh_ms` put,
/// its bytes at a place in the ring (`None`: nothing to put). A cell another request holds is
/// left alone.
pub fn settle<C: Cells>(cells: &C, key: Key, now: Millis, kept: Option<(Millis, Place)>) {
    transact(cells, key, |cell| {
        ((), cell.ours.then(|| put(cell, now, kept)))
    });
}

//! The bytes of the threads' shared cache entries: one ring of memory every thread of the
//! process shares, as large as the largest `cache.maxBytes` that shares with the threads, so
//! the entries count against it once for the whole process, and a thread that starts late reads
//! what the others kept. A writer reserves its place by moving the ring's head on (an atomic
//! add, no lock), copies its bytes there and names the place in its request's cell
//! (`cache_cells`). The oldest bytes are overwritten first: a place is intact while the head
//! has not gone a whole ring past its start.
//!
//! A reader copies the bytes out, then checks that the head did not pass them meanwhile and
//! that their digest is the one the cell names. The digest catches what the head cannot: a
//! writer stalled for a whole ring (its place lapped, its late bytes landing in a newer
//! entry's), a ring that grew (every place moved), or a place read in another ring.

use crate::core::base::protocol;

/// The size of the ring for caches whose largest `cache.maxBytes` is `max_bytes`: that, in whole
/// bytes, up to [`protocol::RING_MOST_BYTES`].
pub fn size(max_bytes: f64) -> f64 {
    max_bytes.min(protocol::RING_MOST_BYTES).floor().max(0.0)
}

/// Where an entry's bytes are: their start (bytes ever reserved before them), their length,
/// the ring's size when they were written, and their digest.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Place {
    /// Bytes ever reserved before these (the ring's head when they were reserved).
    pub start: f64,
    /// How many.
    pub len: f64,
    /// The ring's size when they were written: a ring that grew moved them.
    pub capacity: f64,
    /// The digest of the bytes written.
    pub digest: [f64; 2],
}

/// The ring as one thread reaches it, holding the bytes of one entry on their way in or out.
pub trait Ring {
    /// The ring's size in bytes now (0: there is none).
    fn capacity(&self) -> f64;
    /// Moves the head on by `len` bytes at once for every thread: where it was.
    fn reserve(&self, len: f64) -> f64;
    /// The bytes ever reserved.
    fn head(&self) -> f64;
    /// Copies `len` of the entry's bytes, from its byte `from`, into the ring at byte `at`.
    fn write(&self, at: f64, from: f64, len: f64);
    /// Copies `len` of the ring's bytes at byte `at` into the entry's bytes at `to`.
    fn read(&self, at: f64, to: f64, len: f64);
    /// The digest of the entry's bytes as they are now.
    fn digest(&self) -> [f64; 2];
}

/// The ring's pieces of the bytes at `start` (`len` long) in a ring of `capacity`: where in
/// the ring, where in the entry, how many; the second is empty unless they wrap.
fn pieces(start: f64, len: f64, capacity: f64) -> [(f64, f64, f64); 2] {
    let at = start % capacity;
    let first = len.min(capacity - at);
    [(at, 0.0, first), (0.0, first, len - first)]
}

/// Whether no place reserved by `head` overlaps the bytes of `place`.
fn unlapped(head: f64, place: &Place) -> bool {
    head <= place.start + place.capacity
}

/// Writes the entry's `len` bytes into the ring: their place, or `None` when there is no ring,
/// they do not fit in it, or others lapped them while they were written (nothing names them).
pub fn keep<R: Ring>(ring: &R, len: f64) -> Option<Place> {
    let capacity = ring.capacity();
    if !(len > 0.0 && len <= capacity) {
        return None;
    }
    let start = ring.reserve(len);
    for (at, from, n) in pieces(start, len, capacity) {
        if n > 0.0 {
            ring.write(at, from, n);
        }
    }
    let place = Place {
        start,
        len,
        capacity,
        digest: ring.digest(),
    };
    unlapped(ring.head(), &place).then_some(place)
}

/// Reads the bytes at `place` into the entry: true when they are the very bytes written there;
/// false when they were overwritten (or are being), or the ring is not the one they were put
/// in (what was read is then to be thrown away).
pub fn take<R: Ring>(ring: &R, place: &Place) -> bool {
    if ring.capacity() != place.capacity || !unlapped(ring.head(), place) {
        return false;
    }
    for (at, to, n) in pieces(place.start, place.len, place.capacity) {
        if n > 0.0 {
            ring.read(at, to, n);
        }
    }
    unlapped(ring.head(), place) && ring.digest() == place.digest
}

impl Place {
    /// The words a cell keeps of a place: start, length, ring size, digest (two words).
    pub fn words(self) -> [f64; 5] {
        let [d0, d1] = self.digest;
        [self.start, self.len, self.capacity, d0, d1]
    }

    /// A place from a cell's words (see [`words`](Self::words)); `None` when they name none
    /// (a length of 0) or make no sense.
    pub fn read(words: &[f64]) -> Option<Place> {
        let [start, len, capacity, d0, d1] = <[f64; 5]>::try_from(words.get(..5)?).ok()?;
        let sane = start >= 0.0 && len > 0.0 && len <= capacity && capacity.is_finite();
        sane.then_some(Place {
            start,
            len,
            capacity,
            digest: [d0, d1],
        })
    }
}

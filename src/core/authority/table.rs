//! Which slot of the table the process's threads share holds a key, and how the table grows.
//!
//! The table is open addressing in segments: the first of `first` slots, then each new one as
//! large as the table was (the table doubles). A key is looked for in a window of `PROBES`
//! slots in each segment, segment after segment, and a never-used slot ends the search. A key
//! takes a slot only under the table's lock, only when no window before that slot had a
//! never-used one, and a used slot is never unused again: so whoever looks, in any thread,
//! before or after the table grew, finds the key in the one slot it took. Segments are only
//! added at the end, so growing moves no key.

/// A key in the table. Never [`NEVER_USED`].
pub type Key = (i32, i32);

/// The key of a slot no key ever took.
pub const NEVER_USED: Key = (0, 0);

/// Slots looked at for a key in each segment: a window long enough that a table with room
/// gives a key a slot in its first segments, short enough to cost little when it has none.
const PROBES: u32 = 64;

/// The key of the scope called `name` in the table: 64 bits of FNV-1a over the name (itself a
/// hash of the credential), never [`NEVER_USED`].
pub fn key_of(name: &str) -> Key {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    ((h >> 32) as i32, (h as i32) | 1)
}

/// The table, held under its lock by the caller.
pub(crate) trait Table {
    /// The first segment's slots.
    fn first(&self) -> u32;
    /// The slots there are now: `first` times a power of two.
    fn slots(&self) -> u32;
    /// The key that took slot `i` last.
    fn key(&self, i: u32) -> Key;
    /// Whether slot `i` holds nothing worth keeping now, so another key may take it.
    fn vacant(&mut self, i: u32) -> bool;
    /// Gives slot `i` to `key`, fresh.
    fn give(&mut self, i: u32, key: Key);
    /// Adds a segment as large as the table (doubling it); false when it may not grow.
    fn grow(&mut self) -> bool;
}

/// The slot of `key`, taking one if it has none: the first never-used slot of its windows,
/// else the first vacant one, else one in a new segment. `None` when every slot of its windows
/// is busy and the table may not grow.
pub(crate) fn locate(table: &mut dyn Table, key: Key) -> Option<u32> {
    loop {
        let (first, len) = (table.first(), table.slots());
        let mut spare = None;
        for i in windows(first, len, key) {
            match table.key(i) {
                k if k == key => return Some(i),
                NEVER_USED => {
                    spare = Some(i);
                    break;
                }
                _ => {}
            }
        }
        let spare = spare.or_else(|| windows(first, len, key).find(|&i| table.vacant(i)));
        if let Some(i) = spare {
            table.give(i, key);
            return Some(i);
        }
        if !table.grow() {
            return None;
        }
    }
}

/// The slots of `key`'s window in each segment, in the order they are looked at.
fn windows(first: u32, len: u32, key: Key) -> impl Iterator<Item = u32> {
    let segments = std::iter::successors(Some((0, 0, first)), move |&(n, start, size)| {
        let end = start + size;
        (end < len).then_some((n + 1, end, end))
    });
    segments.flat_map(move |(n, start, size)| {
        let from = spot(key, n) % size;
        (0..PROBES.min(size)).map(move |k| start + (from + k) % size)
    })
}

/// Where `key`'s window starts in segment `n` (before the modulo): a different place in each
/// segment, so keys crowded in one window do not crowd together again in the next.
fn spot(key: Key, n: u32) -> u32 {
    let k = (u64::from(key.0 as u32) << 32) | u64::from(key.1 as u32);
    ((k ^ u64::from(n)).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::base::random::{Random, Seeded};

    /// A table in a vector: which slots are busy is the test's to say.
    struct Vecs {
        first: u32,
        most: u32,
        keys: Vec<Key>,
        busy: Vec<bool>,
    }

    impl Vecs {
        fn new(first: u32, most: u32) -> Vecs {
            let n = first as usize;
            Vecs {
                first,
                most,
                keys: vec![NEVER_USED; n],
                busy: vec![false; n],
            }
        }
    }

    impl Table for Vecs {
        fn first(&self) -> u32 {
            self.first
        }
        fn slots(&self) -> u32 {
            self.keys.len() as u32
        }
        fn key(&self, i: u32) -> Key {
            self.keys[i as usize]
        }
        fn vacant(&mut self, i: u32) -> bool {
            !self.busy[i as usize]
        }
        fn give(&mut self, i: u32, key: Key) {
            self.keys[i as usize] = key;
            self.busy[i as usize] = true;
        }
        fn grow(&mut self) -> bool {
            let n = self.keys.len();
            if 2 * n > self.most as usize {
                return false;
            }
            self.keys.resize(2 * n, NEVER_USED);
            self.busy.resize(2 * n, false);
            true
        }
    }

    fn key(n: u32) -> Key {
        (n as i32, (n.wrapping_mul(2_654_435_761) | 1) as i32)
    }

    #[test]
    fn busy_keys_grow_the_table_and_each_is_found_where_it_went() {
        let mut t = Vecs::new(4, 16);
        let slots: Vec<u32> = (1..=16).map(|n| locate(&mut t, key(n)).unwrap()).collect();
        assert_eq!(t.slots(), 16);
        let mut distinct = slots.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), 16, "one slot per key");
        for (n, &slot) in (1..=16).zip(&slots) {
            assert_eq!(locate(&mut t, key(n)), Some(slot));
        }
        assert_eq!(locate(&mut t, key(17)), None, "full at its cap");
    }

    #[test]
    fn a_vacant_slot_is_taken_before_the_table_grows() {
        let mut t = Vecs::new(4, 16);
        let slot = locate(&mut t, key(1)).unwrap();
        for n in 2..=4 {
            locate(&mut t, key(n));
        }
        t.busy[slot as usize] = false;
        assert_eq!(locate(&mut t, key(5)), Some(slot));
        assert_eq!(t.slots(), 4);
        assert_eq!(t.key(slot), key(5), "the idle key lost its slot");
    }

    #[test]
    fn keys_come_and_go_and_each_has_at_most_one_slot() {
        // Random keys take slots and go idle while the table grows to its cap: a key is
        // found where it went until another key takes its vacant slot, and never in two.
        let mut t = Vecs::new(8, 256);
        let mut random = Seeded::new(7);
        let mut home = vec![None; 400];
        for _ in 0..20_000 {
            let n = (random.unit() * 400.0) as u32;
            if random.unit() < 0.3 {
                if let Some(slot) = home[n as usize] {
                    t.busy[slot as usize] = false;
                }
                continue;
            }
            let was = home[n as usize].filter(|&s| t.keys[s as usize] == key(n));
            let now = locate(&mut t, key(n));
            if let (Some(was), Some(now)) = (was, now) {
                assert_eq!(was, now, "key {n} found where it went");
            }
            if let Some(now) = now {
                t.busy[now as usize] = true;
            }
            home[n as usize] = now.or(home[n as usize]);
            let held = t.keys.iter().filter(|&&k| k == key(n)).count();
            assert!(held <= 1, "key {n} in {held} slots");
        }
        assert_eq!(t.slots(), 256);
    }
}

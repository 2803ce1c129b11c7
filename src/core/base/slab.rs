//! Values by number, in a vector: the gate's calls and the driver's view of them. A number is
//! the slot and its generation, so a number of a call long gone never finds the call that reuses
//! its slot. The slots live in segments that double in size and never move: a line of 100,000
//! calls grows without copying, and without holding an old and a new array at once (wasm
//! memory, once grown, is never given back).

/// Slots in segments of 1, 2, 4, ... that stay where they are once made.
#[derive(Debug, Clone)]
struct Segments<T> {
    segments: Vec<Vec<T>>,
    len: usize,
}

/// The first segment's size: one, as most gates have one call at a time (a call's slot is
/// some 350 bytes, and a gate per key waiting with one call each held eight).
const FIRST: usize = 1;

impl<T> Default for Segments<T> {
    fn default() -> Self {
        Segments {
            segments: Vec::new(),
            len: 0,
        }
    }
}

/// The segment holding slot `i`, and its place there.
fn locate(i: usize) -> (usize, usize) {
    let q = i / FIRST + 1;
    let k = (usize::BITS - 1 - q.leading_zeros()) as usize;
    (k, i - FIRST * ((1 << k) - 1))
}

impl<T> Segments<T> {
    fn len(&self) -> usize {
        self.len
    }

    fn push(&mut self, value: T) {
        let (k, _) = locate(self.len);
        if k == self.segments.len() {
            self.segments.push(Vec::with_capacity(FIRST << k));
        }
        self.segments[k].push(value);
        self.len += 1;
    }

    fn get(&self, i: usize) -> Option<&T> {
        let (k, at) = locate(i);
        self.segments.get(k)?.get(at)
    }

    fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        let (k, at) = locate(i);
        self.segments.get_mut(k)?.get_mut(at)
    }

    fn iter(&self) -> impl Iterator<Item = &T> {
        self.segments.iter().flatten()
    }
}

/// A number given out by a [`Slab`]: the slot in the low 32 bits, its generation above.
pub(crate) type Id = u64;

#[derive(Debug, Clone)]
struct Entry<T> {
    generation: u32,
    value: Option<T>,
}

/// Values by `Id`, with slots reused. Emptied, it lets its slots go (an idle gate holds no
/// call's room), and numbers its next slots from above every generation it gave out.
#[derive(Debug, Clone)]
pub struct Slab<T> {
    entries: Segments<Entry<T>>,
    free: Vec<u32>,
    len: usize,
    /// The generation a new slot starts at.
    floor: u32,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Slab {
            entries: Segments::default(),
            free: Vec::new(),
            len: 0,
            floor: 0,
        }
    }
}

fn split(id: Id) -> (usize, u32) {
    ((id & 0xffff_ffff) as usize, (id >> 32) as u32)
}

impl<T> Slab<T> {
    /// Keeps `value`; its number.
    pub(crate) fn insert(&mut self, value: T) -> Id {
        self.len += 1;
        let slot = match self.free.pop() {
            Some(slot) => {
                let entry = self
                    .entries
                    .get_mut(slot as usize)
                    .expect("a freed slot is kept");
                entry.generation = entry.generation.wrapping_add(1);
                entry.value = Some(value);
                return u64::from(entry.generation) << 32 | u64::from(slot);
            }
            None => {
                self.entries.push(Entry {
                    generation: self.floor,
                    value: Some(value),
                });
                (self.entries.len() - 1) as u32
            }
        };
        u64::from(self.floor) << 32 | u64::from(slot)
    }

    /// The value numbered `id`, if it is still here.
    pub(crate) fn get(&self, id: Id) -> Option<&T> {
        let (slot, generation) = split(id);
        let entry = self.entries.get(slot)?;
        (entry.generation == generation)
            .then_some(entry.value.as_ref())
            .flatten()
    }

    /// The value numbered `id`, mutably, if it is still here.
    pub(crate) fn get_mut(&mut self, id: Id) -> Option<&mut T> {
        let (slot, generation) = split(id);
        let entry = self.entries.get_mut(slot)?;
        if entry.generation != generation {
            return None;
        }
        entry.value.as_mut()
    }

    /// Takes the value numbered `id` out, if it is still here.
    pub(crate) fn remove(&mut self, id: Id) -> Option<T> {
        let (slot, generation) = split(id);
        let entry = self.entries.get_mut(slot)?;
        if entry.generation != generation {
            return None;
        }
        let value = entry.value.take()?;
        self.free.push(slot as u32);
        self.len -= 1;
        if self.len == 0 {
            let newest = self.entries.iter().map(|e| e.generation).max();
            self.floor = newest.map_or(self.floor, |g| g.wrapping_add(1));
            self.entries = Segments::default();
            self.free = Vec::new();
        }
        Some(value)
    }

    /// The generation its next new slot starts at: above every generation it gave out once
    /// emptied.
    pub(crate) fn floor(&self) -> u32 {
        self.floor
    }

    /// An empty slab whose slots start at generation `floor` (another's [`floor`](Self::floor)):
    /// numbers that one gave out never find values kept here.
    pub(crate) fn from_floor(floor: u32) -> Slab<T> {
        Slab {
            floor,
            ..Slab::default()
        }
    }

    /// Whether `id` is here.
    pub fn contains(&self, id: Id) -> bool {
        self.get(id).is_some()
    }

    /// Values kept.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Nothing kept.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// Values kept under the numbers another [`Slab`] gave out (the driver's side of the gate's
/// calls): the same slots, so no hashing. Emptied, it lets its slots go, as the slab does.
#[derive(Debug, Clone)]
pub struct Mirror<T> {
    entries: Segments<Option<(Id, T)>>,
    /// Slots holding a value.
    len: usize,
}

impl<T> Default for Mirror<T> {
    fn default() -> Self {
        Mirror {
            entries: Segments::default(),
            len: 0,
        }
    }
}

impl<T> Mirror<T> {
    /// Keeps `value` under `id` (replacing whatever an older number left in its slot).
    pub(crate) fn insert(&mut self, id: Id, value: T) {
        let (slot, _) = split(id);
        while self.entries.len() <= slot {
            self.entries.push(None);
        }
        if let Some(entry) = self.entries.get_mut(slot) {
            self.len += usize::from(entry.is_none());
            *entry = Some((id, value));
        }
    }

    /// The value under `id`.
    pub(crate) fn get(&self, id: Id) -> Option<&T> {
        match self.entries.get(split(id).0)? {
            Some((kept, value)) if *kept == id => Some(value),
            _ => None,
        }
    }

    /// The value under `id`, mutably.
    pub fn get_mut(&mut self, id: Id) -> Option<&mut T> {
        match self.entries.get_mut(split(id).0)? {
            Some((kept, value)) if *kept == id => Some(value),
            _ => None,
        }
    }

    /// Every value with its number.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (Id, &T)> {
        self.entries
            .iter()
            .flatten()
            .map(|(id, value)| (*id, value))
    }

    /// Takes the value under `id` out.
    pub(crate) fn remove(&mut self, id: Id) -> Option<T> {
        let entry = self.entries.get_mut(split(id).0)?;
        let value = match entry {
            Some((kept, _)) if *kept == id => entry.take().map(|(_, value)| value),
            _ => None,
        }?;
        self.len -= 1;
        if self.len == 0 {
            self.entries = Segments::default();
        }
        Some(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_hold_every_slot_where_it_was_put() {
        assert_eq!(locate(0), (0, 0));
        assert_eq!(locate(1), (1, 0));
        assert_eq!(locate(2), (1, 1));
        assert_eq!(locate(3), (2, 0));
        assert_eq!(locate(6), (2, 3));
        assert_eq!(locate(7), (3, 0));
        let mut slab = Slab::default();
        let ids: Vec<Id> = (0..10_000u32).map(|i| slab.insert(i)).collect();
        assert!(ids
            .iter()
            .enumerate()
            .all(|(i, id)| slab.get(*id) == Some(&(i as u32))));
        // Segments of 1, 2, ..., 8,192: 10,000 slots in 14 of them, none copied.
        assert_eq!(slab.entries.segments.len(), 14);
        let sizes: Vec<usize> = slab.entries.segments.iter().map(Vec::capacity).collect();
        assert!(
            sizes.iter().enumerate().all(|(k, c)| *c == FIRST << k),
            "{sizes:?}"
        );
        let mut mirror = Mirror::default();
        mirror.insert(ids[9_999], 'z');
        assert_eq!(mirror.get(ids[9_999]), Some(&'z'));
        assert_eq!(mirror.get(ids[0]), None);
        assert_eq!(mirror.iter().count(), 1);
    }

    #[test]
    fn a_reused_slot_does_not_answer_to_its_old_number() {
        let mut slab = Slab::default();
        let a = slab.insert("a");
        assert_eq!(slab.remove(a), Some("a"));
        let b = slab.insert("b");
        assert_eq!(a & 0xffff_ffff, b & 0xffff_ffff, "the slot is reused");
        assert_eq!(slab.get(a), None);
        assert_eq!(slab.remove(a), None);
        assert_eq!(slab.get(b), Some(&"b"));
        assert_eq!(slab.len(), 1);
        let mut mirror = Mirror::default();
        mirror.insert(b, 2);
        assert_eq!(mirror.get(a), None);
        assert_eq!(mirror.iter().collect::<Vec<_>>(), [(b, &2)]);
        assert_eq!(mirror.remove(a), None);
        assert_eq!(mirror.remove(b), Some(2));
    }

    #[test]
    fn an_emptied_slab_lets_its_slots_go_and_never_gives_an_old_number_again() {
        let mut slab = Slab::default();
        let old: Vec<Id> = (0..3).map(|i| slab.insert(i)).collect();
        slab.remove(old[0]);
        let again = slab.insert(9);
        for id in [old[1], old[2], again] {
            slab.remove(id);
        }
        assert_eq!(slab.entries.segments.len(), 0, "no room kept");
        let new: Vec<Id> = (0..3).map(|i| slab.insert(i)).collect();
        for id in old.iter().chain([&again]) {
            assert!(!new.contains(id), "{id} given again");
            assert_eq!(slab.get(*id), None);
        }
        assert_eq!(
            new.iter().map(|&id| slab.get(id)).collect::<Vec<_>>(),
            [Some(&0), Some(&1), Some(&2)]
        );
    }
}

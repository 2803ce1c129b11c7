//! Values by a small dense number (a call's index in start order): a vector of slots with
//! a map's few methods, and no hashing.

use std::ops::Index;

/// Values kept under small numbers.
#[derive(Debug, Clone)]
pub struct Indexed<T> {
    slots: Vec<Option<T>>,
    len: usize,
}

impl<T> Default for Indexed<T> {
    fn default() -> Self {
        Indexed {
            slots: Vec::new(),
            len: 0,
        }
    }
}

impl<T> Indexed<T> {
    /// Keeps `value` under `i`; what was there before.
    pub(crate) fn insert(&mut self, i: usize, value: T) -> Option<T> {
        if self.slots.len() <= i {
            self.slots.resize_with(i + 1, || None);
        }
        let old = self.slots[i].replace(value);
        self.len += usize::from(old.is_none());
        old
    }

    /// The value under `i`.
    pub fn get(&self, i: &usize) -> Option<&T> {
        self.slots.get(*i)?.as_ref()
    }

    /// The value under `i`, mutably, made with `make` if there is none.
    pub(crate) fn entry(&mut self, i: usize, make: impl FnOnce() -> T) -> &mut T {
        if self.get(&i).is_none() {
            self.insert(i, make());
        }
        self.slots[i].as_mut().expect("just made")
    }

    /// Whether a value is kept under `i`.
    pub fn contains_key(&self, i: &usize) -> bool {
        self.get(i).is_some()
    }

    /// Takes the value under `i` out.
    pub(crate) fn remove(&mut self, i: &usize) -> Option<T> {
        let old = self.slots.get_mut(*i)?.take();
        self.len -= usize::from(old.is_some());
        old
    }

    /// How many values are kept.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Every value with its number, in order.
    pub fn iter(&self) -> impl Iterator<Item = (usize, &T)> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, v)| Some((i, v.as_ref()?)))
    }

    /// Every value, in order.
    pub fn values(&self) -> impl Iterator<Item = &T> {
        self.slots.iter().flatten()
    }
}

impl<T> Index<&usize> for Indexed<T> {
    type Output = T;
    fn index(&self, i: &usize) -> &T {
        self.get(i).expect("no value under this number")
    }
}

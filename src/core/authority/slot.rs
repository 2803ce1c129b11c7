//! A gate's [`Slot`] on the memory a process's threads share. The memory's locks and words live
//! where the threads can reach them (the bindings' `shared_memory.js`); [`Memory`] is how this
//! file reaches them. What is decided here: the slot for a key is found, or claimed, under the
//! table's lock; a transaction locks the slot, copies its live words in, and copies what changed
//! out to a spare buffer that becomes live when the lock is let go; when the memory is replaced
//! by a larger one, or the slot given to another key, the transaction follows the key.

use crate::core::authority::table::{self, Key, Table, NEVER_USED};
use crate::core::authority::threads::{merge, vacant, Slot, READY, WORDS};
use crate::core::Millis;

/// What [`Memory::enter`] says when the memory was replaced by another.
pub const SUPERSEDED: i32 = -1;
/// What [`Memory::enter`] says when the slot was given to another key.
pub const TAKEN: i32 = -2;

/// The memory the threads share, as one thread reaches it: its slots' locks and words, and its
/// table of keys. A lock is a number `enter` gives and `leave` takes back.
pub trait Memory: Sized {
    /// The memory the threads share now, as this thread has heard; `None` where memory cannot
    /// be shared.
    fn current() -> Option<Self>;
    /// Whether this thread may admit: it has had time to hear of the others.
    fn settled() -> bool;
    /// The shared clock: the same in every thread.
    fn now() -> Millis;
    /// Whether `other` is this very memory.
    fn is(&self, other: &Self) -> bool;
    /// Locks slot `i` for `key` (`force`: even on a memory replaced by another) and copies its
    /// live words into `words`: the lock, or [`SUPERSEDED`] or [`TAKEN`].
    fn enter(&self, i: u32, force: bool, key: Key, words: &mut [f64; WORDS]) -> i32;
    /// Lets go of `lock` on slot `i`, making `words` live (`None`: nothing written);
    /// false when the lock was taken over meanwhile and nothing it wrote counts.
    fn leave(&self, i: u32, lock: i32, words: Option<&[f64; WORDS]>) -> bool;
    /// Locks slot `i` for `key`, copies its first live words into `words` and lets go, at
    /// one call: false when the memory was replaced, the slot given to another key or the
    /// lock taken over meanwhile (then a transaction reads it).
    fn peek(&self, i: u32, key: Key, words: &mut [f64]) -> bool {
        let mut all = [0.0; WORDS];
        let lock = self.enter(i, false, key, &mut all);
        words.copy_from_slice(&all[..words.len()]);
        lock >= 0 && self.leave(i, lock, None)
    }
    /// Takes the table's lock, for [`unlock_table`](Self::unlock_table).
    fn lock_table(&self) -> i32;
    /// Lets go of the table's lock.
    fn unlock_table(&self, lock: i32);
    /// The table's first segment's slots (see `Table::first`).
    fn first(&self) -> u32;
    /// The slots there are now.
    fn slots(&self) -> u32;
    /// The key that took slot `i` last.
    fn key(&self, i: u32) -> Key;
    /// Writes slot `i`'s key.
    fn set_key(&self, i: u32, key: Key);
    /// Doubles the table; false when it may not grow.
    fn grow(&self) -> bool;
    /// The slots some key ever used.
    fn used(&self) -> Vec<u32>;
}

/// Moves what every key spent on `old` to its slot on `new`, once (the slots on `old` are left
/// fresh): this thread just heard that the threads share `new` now.
pub fn move_all<M: Memory>(old: &M, new: &M) {
    let now = M::now();
    for i in old.used() {
        let key = old.key(i);
        let from = take_out(old, i, key).filter(|from| from[READY] == 1.0);
        if let (Some(from), Some(j)) = (from, locate(new, key, now)) {
            bring(new, j, key, &from, now);
        }
    }
}

/// Takes the state out of slot `i` (when it is still `key`'s), leaving it fresh, so what it
/// holds moves exactly once.
fn take_out<M: Memory>(memory: &M, i: u32, key: Key) -> Option<[f64; WORDS]> {
    let mut words = [0.0; WORDS];
    let lock = memory.enter(i, true, key, &mut words);
    let fresh = [0.0; WORDS];
    (lock >= 0 && memory.leave(i, lock, Some(&fresh))).then_some(words)
}

/// Merges `from` (a state taken out elsewhere) into slot `j`, `key`'s.
fn bring<M: Memory>(memory: &M, j: u32, key: Key, from: &[f64; WORDS], now: Millis) {
    loop {
        let mut into = [0.0; WORDS];
        let lock = memory.enter(j, true, key, &mut into);
        if lock < 0 {
            return;
        }
        merge(&mut into, from, now);
        if memory.leave(j, lock, Some(&into)) {
            return;
        }
    }
}

/// A gate's slot on the shared memory.
pub struct MemorySlot<M> {
    memory: M,
    index: u32,
    key: Key,
    /// This thread may admit (it has had time to hear of the others).
    settled: bool,
    /// The state kept in this thread alone, when the shared memory had no room for the key.
    alone: Option<Box<[f64; WORDS]>>,
}

impl<M: Memory> MemorySlot<M> {
    /// The slot for the scope called `name` on `memory`, claimed if the key has none: a
    /// never-used slot or one whose state holds nothing worth keeping. `None` when the probed
    /// slots are all busy.
    pub fn find(memory: M, name: &str) -> Option<MemorySlot<M>> {
        let key = table::key_of(name);
        let index = locate(&memory, key, M::now())?;
        Some(MemorySlot {
            memory,
            index,
            key,
            settled: false,
            alone: None,
        })
    }

    /// Moves to the key's slot on the memory the threads share now, bringing this slot's state.
    /// False when this thread has not yet heard which memory replaced this one.
    fn rehome(&mut self) -> bool {
        let Some(memory) = M::current().filter(|m| !m.is(&self.memory)) else {
            return false;
        };
        let from = take_out(&self.memory, self.index, self.key);
        let now = M::now();
        match locate(&memory, self.key, now) {
            Some(index) => {
                if let Some(from) = &from {
                    bring(&memory, index, self.key, from, now);
                }
                (self.memory, self.index) = (memory, index);
            }
            None => self.alone = Some(Box::new(from.unwrap_or([0.0; WORDS]))),
        }
        true
    }

    /// Finds the key's slot again after its idle state was given to another key (nothing of
    /// it was worth keeping).
    fn refind(&mut self) {
        match locate(&self.memory, self.key, M::now()) {
            Some(index) => self.index = index,
            None => self.alone = Some(Box::new([0.0; WORDS])),
        }
    }
}

impl<M: Memory> Slot for MemorySlot<M> {
    fn transact(&mut self, f: &mut dyn FnMut(&mut [f64; WORDS]) -> bool, admission: bool) -> bool {
        if admission && !self.settled {
            // Once this thread may admit, it may for good.
            self.settled = M::settled();
            if !self.settled {
                return false;
            }
        }
        let mut force = false;
        loop {
            if let Some(words) = &mut self.alone {
                f(words);
                return true;
            }
            let mut words = [0.0; WORDS];
            let lock = self.memory.enter(self.index, force, self.key, &mut words);
            match lock {
                // Moved, or (not told where yet) an admission waits and the rest go on here.
                SUPERSEDED if self.rehome() => {}
                SUPERSEDED if admission => return false,
                SUPERSEDED => force = true,
                TAKEN => self.refind(),
                _ => {
                    let wrote = f(&mut words);
                    if self.memory.leave(self.index, lock, wrote.then_some(&words)) {
                        return true;
                    }
                }
            }
        }
    }

    fn read(&mut self, len: usize, f: &mut dyn FnMut(&[f64])) {
        let mut words = [0.0; WORDS];
        let part = &mut words[..len];
        if self.alone.is_none() && self.memory.peek(self.index, self.key, part) {
            return f(part);
        }
        // Kept alone, moved or taken: a transaction that writes nothing finds it.
        let read = &mut |words: &mut [f64; WORDS]| {
            f(&words[..len]);
            false
        };
        self.transact(read, false);
    }
}

/// The slot of `key` on `memory`, claiming one if it has none (see [`table`]). Under the
/// table's lock, so two threads never claim two slots for one key.
fn locate<M: Memory>(memory: &M, key: Key, now: Millis) -> Option<u32> {
    let lock = memory.lock_table();
    let index = table::locate(&mut LockedTable { memory, now }, key);
    memory.unlock_table(lock);
    index
}

/// The memory's table, its lock lock, at `now` on the shared clock.
struct LockedTable<'a, M> {
    memory: &'a M,
    now: Millis,
}

impl<M: Memory> Table for LockedTable<'_, M> {
    fn first(&self) -> u32 {
        self.memory.first()
    }
    fn slots(&self) -> u32 {
        self.memory.slots()
    }
    fn key(&self, i: u32) -> Key {
        self.memory.key(i)
    }
    /// Its state holds nothing worth keeping.
    fn vacant(&mut self, i: u32) -> bool {
        let mut words = [0.0; WORDS];
        let lock = self.memory.enter(i, true, NEVER_USED, &mut words);
        let idle = vacant(&mut words, self.now);
        self.memory.leave(i, lock, None);
        idle
    }
    /// Gives slot `i` to `key`, fresh (lock, so a gate still naming it sees the change at once).
    fn give(&mut self, i: u32, key: Key) {
        let mut words = [0.0; WORDS];
        let lock = self.memory.enter(i, true, NEVER_USED, &mut words);
        self.memory.set_key(i, key);
        let fresh = [0.0; WORDS];
        debug_assert_eq!(fresh[READY], 0.0);
        self.memory.leave(i, lock, Some(&fresh));
    }
    fn grow(&mut self) -> bool {
        self.memory.grow()
    }
}

//! The simulator's homes: seeded randomness, and, for processes that stand for the threads of
//! one process, memory they share (a slot per key, which one thread changes at a time because
//! the virtual clock runs one event at a time).

use std::cell::RefCell;
use std::rc::Rc;

use crate::core::authority::threads::{Slot, WORDS};
use crate::core::base::map::Map;
use crate::core::base::random::{Random, Seeded};
use crate::core::gates::home::Home;
use crate::core::gates::scope::Scope;
use crate::core::Millis;

/// The memory several simulated threads share: each key's slot.
pub type SharedMemory = Rc<RefCell<Map<Scope, Box<[f64; WORDS]>>>>;

/// A simulated thread: seeded randomness, and a shared memory when it shares one with others.
#[derive(Debug, Clone)]
pub struct SimHome {
    seed: u64,
    thread: u32,
    shared_memory: Option<SharedMemory>,
    /// The most keys the shared memory holds.
    room: usize,
}

impl SimHome {
    /// A thread alone: randomness seeded from `seed` (the first gate's is `seed` itself).
    pub fn alone(seed: u64) -> SimHome {
        SimHome {
            seed,
            thread: 1,
            shared_memory: None,
            room: usize::MAX,
        }
    }

    /// Thread `thread` (1 and up) of the threads sharing `shared_memory`.
    pub fn sharing(seed: u64, thread: u32, shared_memory: SharedMemory) -> SimHome {
        SimHome {
            seed,
            thread,
            shared_memory: Some(shared_memory),
            room: usize::MAX,
        }
    }

    /// The same thread, on a shared memory with room for `keys` keys (every thread sharing it must say
    /// the same): a key past them gets no slot.
    pub fn with_room(self, keys: usize) -> SimHome {
        SimHome { room: keys, ..self }
    }
}

/// A key's slot on a simulated shared memory.
struct SimSlot {
    shared_memory: SharedMemory,
    scope: Scope,
}

impl Slot for SimSlot {
    fn transact(&mut self, f: &mut dyn FnMut(&mut [f64; WORDS]) -> bool, _: bool) -> bool {
        let mut shared_memory = self.shared_memory.borrow_mut();
        let words = shared_memory
            .entry(self.scope.clone())
            .or_insert_with(|| Box::new([0.0; WORDS]));
        let mut copy = **words;
        if f(&mut copy) {
            **words = copy;
        }
        true
    }
}

impl Home for SimHome {
    fn random(&mut self) -> Box<dyn Random> {
        let seed = self.seed;
        self.seed += 1;
        Box::new(Seeded::new(seed))
    }
    fn slot(&mut self, scope: &Scope) -> Option<Box<dyn Slot>> {
        let shared_memory = self.shared_memory.clone()?;
        {
            let mut keys = shared_memory.borrow_mut();
            if !keys.contains_key(scope) && keys.len() >= self.room {
                return None;
            }
            keys.entry(scope.clone())
                .or_insert_with(|| Box::new([0.0; WORDS]));
        }
        Some(Box::new(SimSlot {
            shared_memory,
            scope: scope.clone(),
        }))
    }
    fn shares_memory(&self) -> bool {
        self.shared_memory.is_some()
    }
    fn thread(&self) -> u32 {
        self.thread
    }
    fn offset(&self) -> Millis {
        0.0
    }
    fn keys(&mut self) -> (u64, u64) {
        (0x243f_6a88_85a3_08d3, 0x1319_8a2e_0370_7344)
    }
}

//! A gate's [`Slot`] on the shared memory the process's threads share (`shared_memory.js` defines the memory,
//! its locks and how threads find it): the slot for a key is found, or claimed, under the
//! table's lock; a transaction holds the slot, copies its live words in, and copies what changed
//! out to a spare buffer that becomes live when the hold is let go.

use wasm_bindgen::prelude::*;

use super::clock;
use crate::core::authority::table::{self, Key, Table};
use crate::core::authority::threads::{merge, vacant, Slot, READY, WORDS};
use crate::core::gates::scope::Scope;
use crate::core::Millis;

#[wasm_bindgen(module = "/src/js/shared_memory.js")]
extern "C" {
    /// The shared memory object (`{ sab, ints, f64 }`).
    #[derive(Clone)]
    pub type SharedMemory;
    #[wasm_bindgen(js_name = current)]
    fn shared_memory_now() -> Option<SharedMemory>;
    #[wasm_bindgen(js_name = words)]
    fn shared_memory_words() -> u32;
    #[wasm_bindgen(js_name = thread)]
    fn thread_id() -> f64;
    #[wasm_bindgen(js_name = useMemory)]
    fn use_memory(memory: &JsValue);
    #[wasm_bindgen(js_name = onMove)]
    fn on_move(mover: &Closure<dyn FnMut(SharedMemory, SharedMemory)>);
    fn used(s: &SharedMemory) -> Vec<u32>;
    fn settled() -> bool;
    fn first(s: &SharedMemory) -> u32;
    fn slots(s: &SharedMemory) -> u32;
    fn most(s: &SharedMemory) -> u32;
    fn grow(s: &SharedMemory) -> bool;
    fn enter(s: &SharedMemory, i: u32, force: bool, high: i32, low: i32, to: u32) -> i32;
    fn leave(s: &SharedMemory, i: u32, held: i32, from: i32) -> bool;
    #[wasm_bindgen(js_name = holdTable)]
    fn hold_table(s: &SharedMemory) -> i32;
    #[wasm_bindgen(js_name = releaseTable)]
    fn release_table(s: &SharedMemory, held: i32);
    #[wasm_bindgen(js_name = keyHigh)]
    fn key_high(s: &SharedMemory, i: u32) -> i32;
    #[wasm_bindgen(js_name = keyLow)]
    fn key_low(s: &SharedMemory, i: u32) -> i32;
    #[wasm_bindgen(js_name = setKey)]
    fn set_key(s: &SharedMemory, i: u32, high: i32, low: i32);
}

/// `enter` found the shared memory superseded.
const SUPERSEDED: i32 = -1;
/// `enter` found the slot given to another key.
const TAKEN: i32 = -2;

/// The shared memory threads share now, if memory can be shared here (and the JavaScript side agrees on
/// the size of a slot).
pub fn current() -> Option<SharedMemory> {
    thread_local!(static WIRED: () = {
        use_memory(&wasm_bindgen::memory());
        // Lives as long as the module: the shared memory may move at any time.
        let mover = Closure::<dyn FnMut(SharedMemory, SharedMemory)>::new(move_all);
        on_move(&mover);
        mover.forget();
    });
    WIRED.with(|_| ());
    shared_memory_now().filter(|_| shared_memory_words() as usize == WORDS)
}

/// Moves what every key spent on `old` to its slot on `new`, once (the slots on `old` are left
/// fresh): this thread just heard that the threads share `new` now.
fn move_all(old: SharedMemory, new: SharedMemory) {
    let now = clock::now() + clock_offset();
    for i in used(&old) {
        let key = (key_high(&old, i), key_low(&old, i));
        let from = take_out(&old, i, key).filter(|from| from[READY] == 1.0);
        if let (Some(from), Some(j)) = (from, locate(&new, key, now)) {
            bring(&new, j, key, &from, now);
        }
    }
}

/// Takes the state out of slot `i` (when it is still `key`'s), leaving it fresh, so what it
/// holds moves exactly once.
fn take_out(shared_memory: &SharedMemory, i: u32, key: Key) -> Option<[f64; WORDS]> {
    let mut words = [0.0; WORDS];
    let held = enter_into(shared_memory, i, true, key, &mut words);
    let fresh = [0.0; WORDS];
    (held >= 0 && leave(shared_memory, i, held, index_of(&fresh) as i32)).then_some(words)
}

/// Merges `from` (a state taken out elsewhere) into slot `j`, `key`'s.
fn bring(shared_memory: &SharedMemory, j: u32, key: Key, from: &[f64; WORDS], now: Millis) {
    loop {
        let mut into = [0.0; WORDS];
        let held = enter_into(shared_memory, j, true, key, &mut into);
        if held < 0 {
            return;
        }
        merge(&mut into, from, now);
        if leave(shared_memory, j, held, index_of(&into) as i32) {
            return;
        }
    }
}

/// This thread's number for the gates' claims: `worker_threads`' id, unique in the process.
pub fn thread_number() -> u32 {
    (thread_id() as u32 % crate::core::authority::threads::MAX_THREAD) + 1
}

/// The shared clock: Unix milliseconds, the same in every thread. Added to this thread's clock.
pub fn clock_offset() -> Millis {
    js_sys::Reflect::get(&js_sys::global(), &"performance".into())
        .and_then(|p| js_sys::Reflect::get(&p, &"timeOrigin".into()))
        .ok()
        .and_then(|t| t.as_f64())
        .unwrap_or(0.0)
}

/// A scope's key in the table: 64 bits of FNV-1a over its name (itself a hash of the
/// credential), never 0, 0.
fn key(scope: &Scope) -> Key {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in scope.as_str().bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    ((h >> 32) as i32, (h as i32) | 1)
}

/// The f64 index of `words` in the module's memory, where `enter` and `leave` copy.
fn index_of(words: &[f64; WORDS]) -> u32 {
    (words.as_ptr() as usize / 8) as u32
}

/// One transaction's hold on slot `i`, copying its live words into `words`.
fn enter_into(
    shared_memory: &SharedMemory,
    i: u32,
    force: bool,
    key: Key,
    words: &mut [f64; WORDS],
) -> i32 {
    enter(shared_memory, i, force, key.0, key.1, index_of(words))
}

/// A gate's slot on the shared memory.
pub struct SharedMemorySlot {
    shared_memory: SharedMemory,
    index: u32,
    key: Key,
    offset: Millis,
    /// This thread may admit (it has had time to hear of the others).
    settled: bool,
    /// The state kept in this thread alone, when the shared memory had no room for the key.
    alone: Option<Box<[f64; WORDS]>>,
}

impl SharedMemorySlot {
    /// The slot for `scope` on `shared_memory`, claimed if the key has none: a never-used slot or one
    /// whose state holds nothing worth keeping. `None` when the probed slots are all busy.
    pub fn find(
        shared_memory: SharedMemory,
        scope: &Scope,
        offset: Millis,
    ) -> Option<SharedMemorySlot> {
        let key = key(scope);
        let index = locate(&shared_memory, key, clock::now() + offset)?;
        Some(SharedMemorySlot {
            shared_memory,
            index,
            key,
            offset,
            settled: false,
            alone: None,
        })
    }

    /// Moves to the key's slot on the shared memory the threads share now, bringing this slot's state.
    /// False when this thread has not yet heard which shared memory replaced this one.
    fn rehome(&mut self) -> bool {
        let Some(shared_memory) = current().filter(|s| !js_sys::Object::is(s, &self.shared_memory))
        else {
            return false;
        };
        let from = take_out(&self.shared_memory, self.index, self.key);
        let now = clock::now() + self.offset;
        match locate(&shared_memory, self.key, now) {
            Some(index) => {
                if let Some(from) = &from {
                    bring(&shared_memory, index, self.key, from, now);
                }
                (self.shared_memory, self.index) = (shared_memory, index);
            }
            None => self.alone = Some(Box::new(from.unwrap_or([0.0; WORDS]))),
        }
        true
    }

    /// Finds the key's slot again after its idle state was given to another key (nothing of
    /// it was worth keeping).
    fn refind(&mut self) {
        let now = clock::now() + self.offset;
        match locate(&self.shared_memory, self.key, now) {
            Some(index) => self.index = index,
            None => self.alone = Some(Box::new([0.0; WORDS])),
        }
    }
}

/// The slot of `key` on `shared_memory`, claiming one if it has none (see [`table`]). Under the table's
/// lock, so two threads never claim two slots for one key.
fn locate(shared_memory: &SharedMemory, key: Key, now: Millis) -> Option<u32> {
    let held = hold_table(shared_memory);
    let index = table::locate(&mut Held { shared_memory, now }, key);
    release_table(shared_memory, held);
    index
}

/// The shared memory's table, its lock held, at `now` on the shared clock.
struct Held<'a> {
    shared_memory: &'a SharedMemory,
    now: Millis,
}

impl Table for Held<'_> {
    fn first(&self) -> u32 {
        first(self.shared_memory)
    }
    fn slots(&self) -> u32 {
        slots(self.shared_memory)
    }
    fn key(&self, i: u32) -> Key {
        (
            key_high(self.shared_memory, i),
            key_low(self.shared_memory, i),
        )
    }
    /// Its state holds nothing worth keeping.
    fn vacant(&mut self, i: u32) -> bool {
        let mut words = [0.0; WORDS];
        let held = enter_into(self.shared_memory, i, true, (0, 0), &mut words);
        let idle = vacant(&mut words, self.now);
        leave(self.shared_memory, i, held, -1);
        idle
    }
    fn give(&mut self, i: u32, key: Key) {
        give(self.shared_memory, i, key);
    }
    fn grow(&mut self) -> bool {
        grow(self.shared_memory)
    }
}

/// The slots on the shared memory the threads share now, and the most it can grow to: `None` where
/// memory cannot be shared.
pub fn size() -> Option<(u32, u32)> {
    current().map(|s| (slots(&s), most(&s)))
}

/// Gives slot `i` to `key`, fresh (held, so a gate still naming it sees the change at once).
fn give(shared_memory: &SharedMemory, i: u32, key: Key) {
    let mut words = [0.0; WORDS];
    let held = enter_into(shared_memory, i, true, (0, 0), &mut words);
    set_key(shared_memory, i, key.0, key.1);
    let fresh = [0.0; WORDS];
    debug_assert_eq!(fresh[READY], 0.0);
    leave(shared_memory, i, held, index_of(&fresh) as i32);
}

impl Slot for SharedMemorySlot {
    fn transact(&mut self, f: &mut dyn FnMut(&mut [f64; WORDS]) -> bool, admission: bool) -> bool {
        if admission && !self.settled {
            // Once this thread may admit, it may for good.
            self.settled = settled();
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
            let held = enter_into(&self.shared_memory, self.index, force, self.key, &mut words);
            match held {
                // Moved, or (not told where yet) an admission waits and the rest go on here.
                SUPERSEDED if self.rehome() => {}
                SUPERSEDED if admission => return false,
                SUPERSEDED => force = true,
                TAKEN => self.refind(),
                _ => {
                    let wrote = f(&mut words);
                    let from = if wrote { index_of(&words) as i32 } else { -1 };
                    if leave(&self.shared_memory, self.index, held, from) {
                        return true;
                    }
                }
            }
        }
    }
}

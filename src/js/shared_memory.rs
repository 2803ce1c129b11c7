//! The shared memory the process's threads share (`shared_memory.js` defines the memory, its
//! locks and how threads find it), as the core's [`Memory`]: the core's `authority/slot.rs`
//! decides how a gate's slot is found, locked and moved.

use std::cell::RefCell;

use wasm_bindgen::prelude::*;

use super::clock;
use crate::core::authority::cache_cells::{Cells, CELL_WORDS};
use crate::core::authority::settle::{self, Maker, Settling, Start};
use crate::core::authority::slot::{self, Memory};
use crate::core::authority::table::Key;
use crate::core::authority::threads::{self, WORDS};
use crate::core::Millis;

#[wasm_bindgen(module = "/src/js/protocol.js")]
extern "C" {
    /// The fingerprint of the protocol `protocol.js` was generated from (`build.rs`).
    #[wasm_bindgen(thread_local_v2, js_name = PROTOCOL)]
    static PROTOCOL_PRINT: String;
}

/// The fingerprint of the protocol the JavaScript side was generated from.
fn protocol_print() -> String {
    PROTOCOL_PRINT.with(Clone::clone)
}

#[wasm_bindgen(module = "/src/js/shared_memory.js")]
extern "C" {
    /// The shared memory object (`{ sab, ints, f64 }`).
    #[derive(Clone)]
    pub type SharedMemory;
    #[wasm_bindgen(js_name = current)]
    fn shared_memory_now() -> Option<SharedMemory>;
    #[wasm_bindgen(js_name = thread)]
    fn thread_id() -> f64;
    #[wasm_bindgen(js_name = useMemory)]
    fn use_memory(memory: &JsValue);
    fn wire(mover: &Closure<dyn FnMut(SharedMemory, SharedMemory)>, ranker: &Closure<Ranker>);
    #[wasm_bindgen(js_name = startedAs)]
    fn started_as() -> Vec<f64>;
    #[wasm_bindgen(js_name = hasWaited)]
    fn has_waited() -> bool;
    #[wasm_bindgen(js_name = workersStarted)]
    fn workers_started() -> f64;
    fn used(s: &SharedMemory) -> Vec<u32>;
    fn first(s: &SharedMemory) -> u32;
    fn slots(s: &SharedMemory) -> u32;
    fn most(s: &SharedMemory) -> u32;
    fn grow(s: &SharedMemory) -> bool;
    fn enter(s: &SharedMemory, i: u32, force: bool, high: i32, low: i32, to: u32) -> i32;
    fn leave(s: &SharedMemory, i: u32, lock: i32, from: i32) -> bool;
    fn peek(s: &SharedMemory, i: u32, high: i32, low: i32, to: u32, len: u32) -> bool;
    #[wasm_bindgen(js_name = lockTable)]
    fn lock_table(s: &SharedMemory) -> i32;
    #[wasm_bindgen(js_name = unlockTable)]
    fn unlock_table(s: &SharedMemory, lock: i32);
    #[wasm_bindgen(js_name = keyHigh)]
    fn key_high(s: &SharedMemory, i: u32) -> i32;
    #[wasm_bindgen(js_name = keyLow)]
    fn key_low(s: &SharedMemory, i: u32) -> i32;
    #[wasm_bindgen(js_name = setKey)]
    fn set_key(s: &SharedMemory, i: u32, high: i32, low: i32);
    #[wasm_bindgen(js_name = enterCell)]
    fn enter_cell(s: &SharedMemory, c: u32, to: u32) -> i32;
    #[wasm_bindgen(js_name = leaveCell)]
    fn leave_cell(s: &SharedMemory, c: u32, lock: i32, from: i32) -> bool;
}

/// How two shared memories rank, by who made each (main thread, made, tie-break): the core's
/// [`settle::rank`] as a number, < 0 when the first wins.
type Ranker = dyn Fn(f64, f64, f64, f64, f64, f64) -> f64;

/// Wires this thread to the process's other threads: from now on what it hears of their shared
/// memories is ranked by the core, and a better one takes this thread's gates' states along.
/// The package calls it as it loads, so a thread answers the others before it makes a gate.
#[wasm_bindgen(js_name = joinThreads)]
pub fn join_threads() {
    thread_local!(static WIRED: () = {
        use_memory(&wasm_bindgen::memory());
        // Live as long as the module: the shared memory may move at any time.
        let mover = Closure::<dyn FnMut(SharedMemory, SharedMemory)>::new(|old, new| {
            slot::move_all(&old, &new);
        });
        let ranker = Closure::<Ranker>::new(|am, at, ab, bm, bt, bb| {
            let maker = |main, made, tie| Maker { main: main != 0.0, made, tie };
            settle::rank(maker(am, at, ab), maker(bm, bt, bb)) as i8 as f64
        });
        wire(&mover, &ranker);
        mover.forget();
        ranker.forget();
    });
    WIRED.with(|_| ());
}

/// The shared memory threads share now, if memory can be shared here (and the JavaScript side lays
/// it out by this build's protocol).
pub fn current() -> Option<SharedMemory> {
    join_threads();
    thread_local!(static AGREES: bool = protocol_print() == env!("ODDS_GATE_PROTOCOL"));
    shared_memory_now().filter(|_| AGREES.with(|a| *a))
}

/// Whether this thread may admit yet, by the core's [`Settling`] on what `shared_memory.js` saw.
fn settled() -> bool {
    thread_local!(static SETTLING: RefCell<Settling> = RefCell::new(Settling::new(
        match started_as()[..] {
            [made, main, age] if made != 0.0 => Start::Made { main: main != 0.0, age },
            _ => Start::Inherited,
        }
    )));
    let workers = || u32::try_from(workers_started() as i64).ok();
    SETTLING.with_borrow_mut(|s| s.settled(has_waited(), workers))
}

/// This thread's number for the gates' claims, from `worker_threads`' id.
pub fn thread_number() -> u32 {
    threads::thread_number(thread_id())
}

/// The shared clock: Unix milliseconds, the same in every thread. Added to this thread's clock.
pub fn clock_offset() -> Millis {
    js_sys::Reflect::get(&js_sys::global(), &"performance".into())
        .and_then(|p| js_sys::Reflect::get(&p, &"timeOrigin".into()))
        .ok()
        .and_then(|t| t.as_f64())
        .unwrap_or(0.0)
}

/// The f64 index of `words` in the module's memory, where `enter` and `leave` copy; -1 for
/// nothing to copy.
fn index_of(words: Option<&[f64; WORDS]>) -> i32 {
    words.map_or(-1, |w| (w.as_ptr() as usize / 8) as i32)
}

/// The slots on the shared memory the threads share now, and the most it can grow to: `None` where
/// memory cannot be shared.
pub fn size() -> Option<(u32, u32)> {
    current().map(|s| (slots(&s), most(&s)))
}

impl Memory for SharedMemory {
    fn current() -> Option<Self> {
        current()
    }
    fn settled() -> bool {
        settled()
    }
    fn now() -> Millis {
        clock::now() + clock_offset()
    }
    fn is(&self, other: &Self) -> bool {
        js_sys::Object::is(self, other)
    }
    fn enter(&self, i: u32, force: bool, key: Key, words: &mut [f64; WORDS]) -> i32 {
        enter(self, i, force, key.0, key.1, index_of(Some(words)) as u32)
    }
    fn leave(&self, i: u32, lock: i32, words: Option<&[f64; WORDS]>) -> bool {
        leave(self, i, lock, index_of(words))
    }
    fn peek(&self, i: u32, key: Key, words: &mut [f64]) -> bool {
        let to = (words.as_ptr() as usize / 8) as u32;
        peek(self, i, key.0, key.1, to, words.len() as u32)
    }
    fn lock_table(&self) -> i32 {
        lock_table(self)
    }
    fn unlock_table(&self, lock: i32) {
        unlock_table(self, lock)
    }
    fn first(&self) -> u32 {
        first(self)
    }
    fn slots(&self) -> u32 {
        slots(self)
    }
    fn key(&self, i: u32) -> Key {
        (key_high(self, i), key_low(self, i))
    }
    fn set_key(&self, i: u32, key: Key) {
        set_key(self, i, key.0, key.1)
    }
    fn grow(&self) -> bool {
        grow(self)
    }
    fn used(&self) -> Vec<u32> {
        used(self)
    }
}

impl Cells for SharedMemory {
    fn enter(&self, cell: u32, words: &mut [f64; CELL_WORDS]) -> i32 {
        enter_cell(self, cell, (words.as_ptr() as usize / 8) as u32)
    }
    fn leave(&self, cell: u32, lock: i32, words: Option<&[f64; CELL_WORDS]>) -> bool {
        let from = words.map_or(-1, |w| (w.as_ptr() as usize / 8) as i32);
        leave_cell(self, cell, lock, from)
    }
}

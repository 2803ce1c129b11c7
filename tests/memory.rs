//! The memory a live idle gate holds (issue #38: "memory grows with calls waiting, not with
//! keys"), counted by a global allocator: many keys each make one call, answered, and the
//! bytes still allocated are divided among their gates.
#![cfg(not(target_arch = "wasm32"))]

use std::alloc::{GlobalAlloc, Layout, System};
use std::rc::Rc;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::Mutex;

use odds_gate::core::gates::action::Action;
use odds_gate::core::gates::ids::WrapperId;
use odds_gate::core::gates::profile::{Keeping, Profile, Request};
use odds_gate::core::gates::Gates;
use odds_gate::core::parse::feedback::Feedback;
use odds_gate::core::rules::allowance::{Allowance, Rate};
use odds_gate::core::rules::classify::Body;
use odds_gate::core::rules::policy::RetryPolicy;
use odds_gate::core::sim::home::SimHome;

/// The system's allocator, counting the bytes it holds.
struct Counting;

static HELD: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        HELD.fetch_add(layout.size() as isize, Ordering::Relaxed);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        HELD.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, size: usize) -> *mut u8 {
        HELD.fetch_add(size as isize - layout.size() as isize, Ordering::Relaxed);
        System.realloc(ptr, layout, size)
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

const KEYS: usize = 10_000;

/// The bytes each of `KEYS` gates of a wrapper with `allowance` holds (the default
/// `createFetch()`'s other settings), after one call each was answered 200 (idle), or while
/// one call each is out (`answered` false).
fn bytes_per_gate(allowance: Allowance, answered: bool) -> isize {
    // The count is the process's: one measurement at a time.
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let mut gates = Gates::new(Box::new(SimHome::alone(1)));
    let wrapper = gates.wrapper(Profile {
        allowance,
        budget: None,
        keeping: Keeping::Memory { threads: false },
        policy: Some(Rc::new(RetryPolicy::default())),
        max_wait_ms: None,
        max_waiting: None,
        reports_wait: false,
        typed_errors: false,
        spread: None,
    });
    let keys: Vec<String> = (0..KEYS).map(|k| format!("key-{k}")).collect();
    // One key first, so what every wrapper makes once is not counted.
    call(&mut gates, wrapper, "warm-up", true);
    let before = HELD.load(Ordering::Relaxed);
    for key in &keys {
        call(&mut gates, wrapper, key, answered);
    }
    let held = HELD.load(Ordering::Relaxed) - before;
    assert_eq!(gates.len(), KEYS + 1, "every gate still live");
    held / KEYS as isize
}

/// A GET with `key`, sent, and if `answered`, answered 200 and its body disposed of, all at
/// time 0.
fn call(gates: &mut Gates, wrapper: WrapperId, key: &str, answered: bool) {
    let request = Request {
        api_key: Some(key),
        authorization: None,
        idempotency_key: false,
        method: "GET",
        body: Body::None,
        url: "http://api/v4/sports/x/odds",
        batch: None,
    };
    gates.start(0.0, wrapper, &request).expect("started");
    while let Some(action) = gates.poll_action(0.0) {
        match action {
            Action::Send { call, .. } if answered => {
                gates.responded_with(0.0, call, 200, Feedback::default())
            }
            Action::Dispose { call, gate, .. } => {
                gates.disposed(0.0, gate, call, None);
            }
            _ => {}
        }
    }
}

#[test]
fn an_idle_gate_keeps_no_room_for_the_calls_it_had() {
    let fixed = bytes_per_gate(Allowance::Fixed(Rate::new(10.0, 1.0).unwrap()), true);
    let learning = bytes_per_gate(Allowance::Learned(None), true);
    eprintln!("bytes per idle gate: fixed rate {fixed}, learning {learning}");
    // Measured 64-bit, 10,000 keys: 2,194 and 2,844 bytes (2,306 and 2,956 while a gate kept
    // room for a snapshot's state beside its counts; 7,904 and 8,070 while an idle gate kept
    // room for the calls it had: its calls' first 8 slots, 2,816 bytes, its queue's and
    // actions' buffers; and held a learner, a spread, a 429's headers and histogram bins
    // inline, used or not). Issue #38 asks for a few hundred: not yet.
    assert!(fixed < 2_300, "fixed rate: {fixed} bytes a gate");
    assert!(learning < 2_950, "learning: {learning} bytes a gate");
}

#[test]
fn a_gate_with_one_call_out_holds_room_for_one() {
    let fixed = bytes_per_gate(Allowance::Fixed(Rate::new(10.0, 1.0).unwrap()), false);
    eprintln!("bytes per gate with a call out: {fixed}");
    // Measured 64-bit, 10,000 keys: 3,535 bytes (3,647 with a snapshot's state kept beside the
    // counts; 6,007 while a gate's calls took 8 slots at once, some 350 bytes each).
    assert!(fixed < 3_600, "{fixed} bytes a gate");
}

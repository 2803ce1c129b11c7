//! The memory a live idle gate holds (issue #38: "memory grows with calls waiting, not with
//! keys"), counted by a global allocator: many keys each make one call, answered, and the
//! bytes still allocated are divided among their gates.
#![cfg(not(target_arch = "wasm32"))]

mod profiles;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use odds_gate::core::gates::action::Action;
use odds_gate::core::gates::ids::WrapperId;
use odds_gate::core::gates::profile::{Keeping, LaneAsks, Request};
use odds_gate::core::gates::Gates;
use odds_gate::core::parse::feedback::Feedback;
use odds_gate::core::rules::allowance::{Allowance, Rate};
use odds_gate::core::rules::classify::Body;
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

/// Gates with one wrapper with `allowance` (the default `createFetch()`'s other settings).
fn gates_for(allowance: Allowance) -> (Gates, WrapperId) {
    let mut gates = Gates::new(Box::new(SimHome::alone(1)));
    let wrapper = gates.wrapper(profiles::profile(
        allowance,
        Keeping::Memory { threads: false },
    ));
    (gates, wrapper)
}

/// The count is the process's: one measurement at a time.
fn one_at_a_time() -> MutexGuard<'static, ()> {
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// The bytes each of `KEYS` gates of a wrapper with `allowance` holds, after one call each
/// was answered 200 (idle), or while one call each is out (`answered` false).
fn bytes_per_gate(allowance: Allowance, answered: bool) -> isize {
    let _turn = one_at_a_time();
    let (mut gates, wrapper) = gates_for(allowance);
    // One key first, so what every wrapper makes once is not counted.
    let mut now = call(&mut gates, wrapper, "warm-up", 1, true, 0.0);
    let before = HELD.load(Ordering::Relaxed);
    for k in 0..KEYS {
        now = call(&mut gates, wrapper, &format!("key-{k}"), 1, answered, now);
    }
    let held = HELD.load(Ordering::Relaxed) - before;
    assert_eq!(gates.len(), KEYS + 1, "every gate still live");
    held / KEYS as isize
}

/// `calls` GETs with `key` made at `now`, each sent and, if `answered`, answered 200 and its
/// body disposed of, the gates' timer run until nothing is due: when it ended.
fn call(
    gates: &mut Gates,
    wrapper: WrapperId,
    key: &str,
    calls: usize,
    answered: bool,
    mut now: f64,
) -> f64 {
    let request = Request {
        api_key: Some(key),
        authorization: None,
        idempotency_key: false,
        method: "GET",
        body: Body::None,
        url: "http://api/v4/sports/x/odds",
        batch: None,
    };
    for _ in 0..calls {
        gates.start(now, wrapper, &request).expect("started");
    }
    loop {
        while let Some(action) = gates.poll_action(now) {
            match action {
                Action::Send { call, .. } if answered => {
                    gates.responded_with(now, call, 200, Feedback::default())
                }
                Action::Dispose { call, gate, .. } => {
                    gates.disposed(now, gate, call, None);
                }
                _ => {}
            }
        }
        match gates.poll_timeout() {
            Some(at) if answered => {
                now = now.max(at);
                gates.handle_timeout(now);
            }
            _ => return now,
        }
    }
}

/// A rate an idle gate is left with after a call: 10 at once, 1 a second.
fn fixed() -> Allowance {
    Allowance::Fixed(Rate::new(10.0, 1.0).unwrap())
}

#[test]
fn an_idle_gate_keeps_no_room_for_the_calls_it_had() {
    let fixed = bytes_per_gate(fixed(), true);
    let learning = bytes_per_gate(Allowance::Learned(None), true);
    eprintln!("bytes per idle gate: fixed rate {fixed}, learning {learning}");
    // Measured 64-bit, 10,000 keys: 1,137 and 1,654 bytes (learning 1,822 while a route's
    // tables took room for four at their first entry). Earlier 1,169 and 1,910; before issue
    // #38's second round 2,217 and 2,868 (fixed rate, step by step: 2,071 with one histogram
    // bin kept without
    // the bins and the scope's string shared; 1,895 with the counts that stay 0 until trouble
    // boxed; 1,505 with the queue, calls, timelines and lanes made only while busy; 1,281
    // with the actions' buffer given back at once, not at the sweep; 1,169 with the queue's
    // turns kept without spare room). Before its first round 7,904 and 8,070: its calls'
    // first 8 slots, and a learner, a spread and a 429's headers inline, used or not.
    assert!(fixed < 1_200, "fixed rate: {fixed} bytes a gate");
    assert!(learning < 1_720, "learning: {learning} bytes a gate");
}

#[test]
fn a_gate_with_one_call_out_holds_room_for_one() {
    let fixed = bytes_per_gate(fixed(), false);
    eprintln!("bytes per gate with a call out: {fixed}");
    // Measured 64-bit, 10,000 keys: 2,677 bytes (3,535 before the busy state was made apart
    // from the idle one; 6,007 while a gate's calls took 8 slots at once, some 350 bytes each).
    assert!(fixed < 2_750, "{fixed} bytes a gate");
}

#[test]
fn a_gate_that_was_busy_goes_back_to_what_an_idle_one_holds() {
    const KEYS: usize = 1_000;
    let _turn = one_at_a_time();
    let (mut gates, wrapper) = gates_for(fixed());
    let mut now = call(&mut gates, wrapper, "warm-up", 1, true, 0.0);
    let before = HELD.load(Ordering::Relaxed);
    let keys: Vec<String> = (0..KEYS).map(|k| format!("key-{k}")).collect();
    for key in &keys {
        now = call(&mut gates, wrapper, key, 1, true, now);
    }
    let idle = (HELD.load(Ordering::Relaxed) - before) / KEYS as isize;
    // Then 40 calls at once on each key's 9 tokens left: 31 queue, for up to 31 seconds.
    for key in &keys {
        now = call(&mut gates, wrapper, key, 40, true, now);
    }
    assert_eq!(gates.len(), KEYS + 1, "every gate still live");
    let was_busy = (HELD.load(Ordering::Relaxed) - before) / KEYS as isize;
    eprintln!("bytes per gate, idle: {idle}, idle again after 40 calls at once: {was_busy}");
    // Measured 64-bit, 1,000 keys: 1,132 and 1,252 bytes, the difference the admission
    // waits' histogram bins (120 bytes: its waits fell in more than one bin). With the busy
    // state kept once made, 1,997 and 3,557: the queue's and calls' room stayed.
    assert!(
        was_busy <= idle + 120 + 32,
        "{was_busy} bytes against {idle}"
    );
}

#[test]
fn a_lane_made_per_call_and_let_go_leaves_nothing_behind() {
    const CALLS: usize = 2_000;
    let _turn = one_at_a_time();
    let (mut gates, wrapper) = gates_for(fixed());
    // Each call on a lane of its own (`lane()` per request), the lane let go after its call
    // (the bindings do that when the garbage collector finalises its function).
    let per_call = |gates: &mut Gates, now: f64| {
        let profile = gates
            .profile(wrapper)
            .expect("live")
            .lane(LaneAsks::default());
        let lane = gates.lane(profile, (1.0, false), None);
        let now = call(gates, lane, "key", 1, true, now);
        assert!(gates.release(lane), "the lane's last holder");
        now
    };
    let mut now = per_call(&mut gates, 0.0);
    let before = HELD.load(Ordering::Relaxed);
    for _ in 0..CALLS {
        now = per_call(&mut gates, now + 1_000.0);
    }
    let grown = HELD.load(Ordering::Relaxed) - before;
    eprintln!("bytes held after {CALLS} lanes, each let go: {grown}");
    // Measured 64-bit: 0. Before, each lane stayed a user of its gate (searched by every
    // call after) and a lane in the gate's queue (its turn ahead of the clock): 2,000 lanes
    // held 128,000 bytes, 64,000 each way. (Run beside the other tests, the harness's own
    // allocations may show: under a byte a lane.)
    assert!(grown < CALLS as isize, "{grown} bytes");
}

//! Which of the threads' shared memories a thread keeps, and when it may admit through it.
//! Threads that loaded the package before they heard of each other each made a shared memory;
//! they keep the best by [`rank`], and each moves what it spent there. What threads say to
//! each other arrives only as a thread's event loop turns, so a thread that made its own memory
//! admits nothing until it has had time to hear of a better one ([`Settling`]).
//! `shared_memory.js` reads the facts (a memory's header, its timer, Node's list of worker
//! threads) and asks these rules.

use std::cmp::Ordering;

use crate::core::base::protocol::STARTUP_MS;
use crate::core::Millis;

/// Who made a shared memory, as its header says.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Maker {
    /// The process's main thread made it.
    pub main: bool,
    /// When (Unix ms, the clock every thread shares).
    pub made: Millis,
    /// A random number, which breaks ties.
    pub tie: f64,
}

/// How shared memory `a` ranks against `b`: `Less` when the threads keep `a` (the main
/// thread's, else the one made first, else the lower tie-break), `Equal` for the same memory
/// (each message brings its own object for it, so only the header tells).
pub fn rank(a: Maker, b: Maker) -> Ordering {
    b.main
        .cmp(&a.main)
        .then(a.made.total_cmp(&b.made))
        .then(a.tie.total_cmp(&b.tie))
}

/// How a thread came by its shared memory.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Start {
    /// Handed down by the thread that started it: the one the threads keep.
    Inherited,
    /// Made here, by the main thread or not, `age` ms after the process started.
    Made {
        /// This is the process's main thread.
        main: bool,
        /// The process's age then.
        age: Millis,
    },
}

/// Whether a thread may admit yet: once it may, it may for good.
#[derive(Debug)]
pub struct Settling {
    start: Start,
    settled: bool,
    asked: bool,
}

impl Settling {
    /// A thread that inherited its memory may admit at once, and so may the main thread in its
    /// process's first [`STARTUP_MS`]: a worker starts, loads the package and settles first.
    pub fn new(start: Start) -> Settling {
        let settled = match start {
            Start::Inherited => true,
            Start::Made { main, age } => main && age <= STARTUP_MS,
        };
        Settling {
            start,
            settled,
            asked: false,
        }
    }

    /// Whether the thread may admit now. `waited`: [`SETTLE_MS`] passed since it made its
    /// memory and its event loop turned since. `workers`: how many worker threads the process
    /// has started, where a report can be believed (Node's; Bun's and Deno's list none even
    /// while some run); asked once, of the main thread only, at the first admission that would
    /// wait: with none, no memory made elsewhere can exist to hear of (every other thread is a
    /// worker the main thread started, or one of theirs), and waiting would only delay the
    /// first call.
    ///
    /// [`SETTLE_MS`]: crate::core::base::protocol::SETTLE_MS
    pub fn settled(&mut self, waited: bool, workers: impl FnOnce() -> Option<u32>) -> bool {
        if !self.settled {
            self.settled = waited || self.alone(workers);
        }
        self.settled
    }

    fn alone(&mut self, workers: impl FnOnce() -> Option<u32>) -> bool {
        let main = matches!(self.start, Start::Made { main: true, .. });
        if !main || self.asked {
            return false;
        }
        self.asked = true;
        workers() == Some(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const fn maker(main: bool, made: Millis, tie: f64) -> Maker {
        Maker { main, made, tie }
    }

    #[test]
    fn the_main_threads_memory_wins_then_the_oldest_then_the_tie_break() {
        let main_late = maker(true, 2_000.0, 0.9);
        let worker_early = maker(false, 1_000.0, 0.1);
        assert_eq!(rank(main_late, worker_early), Ordering::Less);
        assert_eq!(rank(worker_early, main_late), Ordering::Greater);
        let older = maker(false, 999.0, 0.9);
        assert_eq!(rank(older, worker_early), Ordering::Less);
        let tie = maker(false, 1_000.0, 0.2);
        assert_eq!(rank(worker_early, tie), Ordering::Less);
        assert_eq!(rank(tie, tie), Ordering::Equal);
    }

    #[test]
    fn an_inherited_memory_or_an_early_main_thread_admits_at_once() {
        let never = || -> Option<u32> { panic!("not asked") };
        assert!(Settling::new(Start::Inherited).settled(false, never));
        let early = Start::Made {
            main: true,
            age: STARTUP_MS,
        };
        assert!(Settling::new(early).settled(false, never));
    }

    #[test]
    fn a_worker_that_made_its_own_waits_for_the_timer_and_never_asks_for_workers() {
        let mut s = Settling::new(Start::Made {
            main: false,
            age: 5.0,
        });
        assert!(!s.settled(false, || panic!("a worker is never alone")));
        assert!(s.settled(true, || panic!("not asked")));
        // Once settled, for good.
        assert!(s.settled(false, || panic!("not asked")));
    }

    #[test]
    fn a_late_main_thread_asks_once_and_admits_when_it_started_no_worker() {
        let late = Start::Made {
            main: true,
            age: STARTUP_MS + 1.0,
        };
        let mut alone = Settling::new(late);
        assert!(alone.settled(false, || Some(0)));

        let asked = std::cell::Cell::new(0);
        let ask = |n| {
            asked.set(asked.get() + 1);
            n
        };
        let mut busy = Settling::new(late);
        assert!(!busy.settled(false, || ask(Some(2))));
        // Asked once: a report that later lists none is not read again; the timer settles it.
        assert!(!busy.settled(false, || ask(Some(0))));
        assert_eq!(asked.get(), 1);
        assert!(busy.settled(true, || ask(Some(0))));

        // No report to believe (Bun, Deno, an old Node): wait.
        assert!(!Settling::new(late).settled(false, || None));
    }
}

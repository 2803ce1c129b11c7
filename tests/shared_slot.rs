//! A gate's slot on the memory threads share (`authority/slot.rs`), over a memory in a vector:
//! an admission waits until the thread has heard of the others and of a memory that replaced
//! its own, other transactions go on meanwhile, a key's state moves with the memory exactly
//! once, a slot given to another key is found again, and the figures' read writes nothing.
#![cfg(not(target_arch = "wasm32"))]

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use odds_gate::core::authority::fair::Turn;
use odds_gate::core::authority::slot::{self, Memory, MemorySlot, SUPERSEDED, TAKEN};
use odds_gate::core::authority::table::{key_of, Key, NEVER_USED};
use odds_gate::core::authority::threads::{thread_number, Settings, Slot, ThreadAuthority, WORDS};
use odds_gate::core::authority::{Answer, Immediate};
use odds_gate::core::rules::allowance::Rate;
use odds_gate::core::Millis;

/// A memory in vectors: what `shared_memory.js` keeps in a `SharedArrayBuffer`.
#[derive(Clone)]
struct Vecs(Rc<RefCell<Inner>>);

struct Inner {
    keys: Vec<Key>,
    words: Vec<[f64; WORDS]>,
    /// Replaced by a larger memory: only a forced lock enters.
    superseded: bool,
}

thread_local! {
    static CURRENT: RefCell<Option<Vecs>> = const { RefCell::new(None) };
    static SETTLED: Cell<bool> = const { Cell::new(true) };
}

impl Vecs {
    fn new(slots: usize) -> Vecs {
        Vecs(Rc::new(RefCell::new(Inner {
            keys: vec![NEVER_USED; slots],
            words: vec![[0.0; WORDS]; slots],
            superseded: false,
        })))
    }

    /// Makes this the memory the thread has heard the threads share.
    fn tell(&self) {
        CURRENT.with(|c| *c.borrow_mut() = Some(self.clone()));
    }

    fn slot_of(&self, name: &str) -> Option<usize> {
        self.0.borrow().keys.iter().position(|&k| k == key_of(name))
    }
}

impl Memory for Vecs {
    fn current() -> Option<Self> {
        CURRENT.with(|c| c.borrow().clone())
    }
    fn settled() -> bool {
        SETTLED.with(Cell::get)
    }
    fn now() -> Millis {
        0.0
    }
    fn is(&self, other: &Self) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }
    fn enter(&self, i: u32, force: bool, key: Key, words: &mut [f64; WORDS]) -> i32 {
        let inner = self.0.borrow();
        if inner.superseded && !force {
            return SUPERSEDED;
        }
        if key != NEVER_USED && inner.keys[i as usize] != key {
            return TAKEN;
        }
        *words = inner.words[i as usize];
        1
    }
    fn leave(&self, i: u32, _lock: i32, words: Option<&[f64; WORDS]>) -> bool {
        if let Some(words) = words {
            self.0.borrow_mut().words[i as usize] = *words;
        }
        true
    }
    fn lock_table(&self) -> i32 {
        1
    }
    fn unlock_table(&self, _lock: i32) {}
    fn first(&self) -> u32 {
        self.0.borrow().keys.len() as u32
    }
    fn slots(&self) -> u32 {
        self.0.borrow().keys.len() as u32
    }
    fn key(&self, i: u32) -> Key {
        self.0.borrow().keys[i as usize]
    }
    fn set_key(&self, i: u32, key: Key) {
        self.0.borrow_mut().keys[i as usize] = key;
    }
    fn grow(&self) -> bool {
        false
    }
    fn used(&self) -> Vec<u32> {
        let inner = self.0.borrow();
        (0..inner.keys.len() as u32)
            .filter(|&i| inner.keys[i as usize] != NEVER_USED)
            .collect()
    }
}

/// One token, refilled in 100 ms.
fn one_token() -> Settings {
    Settings {
        rate: Rate::new(1.0, 10.0).unwrap(),
        budget: None,
        learn: false,
    }
}

fn join(memory: &Vecs, name: &str) -> ThreadAuthority {
    let slot = MemorySlot::find(memory.clone(), name).expect("room for the key");
    ThreadAuthority::join(Box::new(slot), one_token(), 1, 0.0).unwrap()
}

fn admit(a: &mut ThreadAuthority, id: u64) -> Answer {
    let turn = Turn {
        since: 0.0,
        lane: Some((0, 1.0)),
        waiting: 1,
    };
    a.admit(0.0, id, turn, false, None)
}

#[test]
fn a_key_has_one_slot_and_its_spent_token_moves_with_the_memory() {
    SETTLED.with(|s| s.set(true));
    let old = Vecs::new(8);
    old.tell();
    let mut a = join(&old, "scope-a");
    let b = join(&old, "scope-a");
    drop(b);
    assert_eq!(old.used().len(), 1, "one slot for the key");
    assert!(matches!(admit(&mut a, 0), Answer::Admitted { .. }));
    let new = Vecs::new(16);
    old.0.borrow_mut().superseded = true;
    new.tell();
    // The next admission finds the memory replaced, moves there and brings the spent token.
    assert!(matches!(admit(&mut a, 1), Answer::Wait(_)));
    let i = new.slot_of("scope-a").expect("moved");
    assert_eq!(new.0.borrow().words[i][0], 1.0, "ready on the new memory");
    let j = old.slot_of("scope-a").unwrap();
    assert_eq!(
        old.0.borrow().words[j],
        [0.0; WORDS],
        "left fresh: moved once"
    );
}

#[test]
fn move_all_brings_every_ready_key_once() {
    SETTLED.with(|s| s.set(true));
    let old = Vecs::new(8);
    old.tell();
    let mut a = join(&old, "scope-a");
    assert!(matches!(admit(&mut a, 0), Answer::Admitted { .. }));
    let new = Vecs::new(16);
    slot::move_all(&old, &new);
    let i = new.slot_of("scope-a").expect("moved");
    assert_eq!(new.0.borrow().words[i][0], 1.0);
    let j = old.slot_of("scope-a").unwrap();
    assert_eq!(old.0.borrow().words[j], [0.0; WORDS]);
    // Moved again, nothing is left to bring: the key's new slot keeps what it has.
    let before = new.0.borrow().words[i];
    slot::move_all(&old, &new);
    assert_eq!(new.0.borrow().words[i], before);
}

#[test]
fn an_admission_waits_to_hear_of_the_others_and_of_a_new_memory_while_the_rest_go_on() {
    let memory = Vecs::new(8);
    memory.tell();
    let mut slot = MemorySlot::find(memory.clone(), "scope-a").unwrap();
    let ran = Cell::new(0);
    let mut f = |_: &mut [f64; WORDS]| {
        ran.set(ran.get() + 1);
        false
    };
    SETTLED.with(|s| s.set(false));
    assert!(!slot.transact(&mut f, true), "not settled: no admission");
    assert!(slot.transact(&mut f, false), "the rest go on");
    assert_eq!(ran.get(), 1);
    SETTLED.with(|s| s.set(true));
    assert!(slot.transact(&mut f, true));
    SETTLED.with(|s| s.set(false));
    assert!(slot.transact(&mut f, true), "settled for good");
    assert_eq!(ran.get(), 3);
    // Replaced, and not told by what yet.
    memory.0.borrow_mut().superseded = true;
    assert!(!slot.transact(&mut f, true), "an admission waits");
    assert!(
        slot.transact(&mut f, false),
        "the rest go on on the old memory"
    );
    assert_eq!(ran.get(), 4);
}

#[test]
fn a_slot_given_to_another_key_is_found_again() {
    SETTLED.with(|s| s.set(true));
    let memory = Vecs::new(8);
    memory.tell();
    let mut slot = MemorySlot::find(memory.clone(), "scope-a").unwrap();
    let i = memory.slot_of("scope-a").unwrap();
    memory.set_key(i as u32, key_of("scope-b"));
    let mut f = |w: &mut [f64; WORDS]| {
        w[WORDS - 1] = 7.0;
        true
    };
    assert!(slot.transact(&mut f, false));
    let j = memory.slot_of("scope-a").expect("found again");
    assert_ne!(i, j);
    assert_eq!(memory.0.borrow().words[j][WORDS - 1], 7.0);
    assert_eq!(memory.0.borrow().words[i][WORDS - 1], 0.0);
}

#[test]
fn keys_and_thread_numbers_stay_in_their_ranges() {
    for name in ["", "a", "scope-a", "anonymous"] {
        assert_ne!(key_of(name), NEVER_USED);
        assert_eq!(key_of(name).1 & 1, 1);
    }
    assert_ne!(key_of("scope-a"), key_of("scope-b"));
    assert_eq!(thread_number(0.0), 1);
    assert_eq!(thread_number(4094.0), 4095);
    assert_eq!(thread_number(4095.0), 1);
}

#[test]
fn the_figures_read_a_slot_without_writing_it_and_follow_a_moved_memory() {
    SETTLED.with(|s| s.set(true));
    let old = Vecs::new(8);
    old.tell();
    let mut a = join(&old, "scope-r");
    let i = old.slot_of("scope-r").unwrap();
    // Given back fresh (its thread moved it): read as a fresh state, and left fresh.
    old.0.borrow_mut().words[i] = [0.0; WORDS];
    assert_eq!(a.standing(), (0.0, false, None));
    assert_eq!(old.0.borrow().words[i], [0.0; WORDS], "nothing written");
    // On a replaced memory, the read moves to the new one as a transaction would.
    assert!(matches!(admit(&mut a, 0), Answer::Admitted { .. }));
    let new = Vecs::new(16);
    old.0.borrow_mut().superseded = true;
    new.tell();
    assert_eq!(a.standing(), (0.0, false, None));
    let j = new.slot_of("scope-r").expect("moved");
    assert_eq!(new.0.borrow().words[j][0], 1.0, "ready on the new memory");
}

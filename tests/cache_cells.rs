//! The threads' cache claims in their shared memory (`authority::cache_cells`): a cell per
//! request locked by the slots' transaction protocol, here over cells in this thread's memory
//! whose locks can be taken over on demand, as a stalled thread's are.
#![cfg(not(target_arch = "wasm32"))]

use std::cell::{Cell as Flag, RefCell};

use odds_gate::core::authority::cache_cells::{
    cell_of, claim, key_of_name, settle, Cells, CELLS, CELL_WORDS,
};
use odds_gate::core::authority::table::Key;
use odds_gate::core::rules::arena::Place;
use odds_gate::core::rules::shared_cache::{Asked, CLAIM_MS};

/// Cells in plain memory: a lock copies the live words; a let-go publishes what it wrote unless
/// `steal` says the lock was taken over meanwhile (then another writer's `theirs` went live).
#[derive(Default)]
struct Plain {
    cells: RefCell<Vec<[f64; CELL_WORDS]>>,
    locks: Flag<i32>,
    steal: RefCell<Option<[f64; CELL_WORDS]>>,
    entered: Flag<u32>,
}

impl Plain {
    fn new() -> Self {
        Plain {
            cells: RefCell::new(vec![[0.0; CELL_WORDS]; CELLS as usize]),
            ..Plain::default()
        }
    }
    fn words(&self, key: Key) -> [f64; CELL_WORDS] {
        self.cells.borrow()[cell_of(key) as usize]
    }
}

impl Cells for Plain {
    fn enter(&self, cell: u32, words: &mut [f64; CELL_WORDS]) -> i32 {
        self.entered.set(self.entered.get() + 1);
        *words = self.cells.borrow()[cell as usize];
        self.locks.set(self.locks.get() + 1);
        self.locks.get()
    }
    fn leave(&self, cell: u32, _lock: i32, words: Option<&[f64; CELL_WORDS]>) -> bool {
        if let Some(theirs) = self.steal.borrow_mut().take() {
            self.cells.borrow_mut()[cell as usize] = theirs;
            return false;
        }
        if let Some(words) = words {
            self.cells.borrow_mut()[cell as usize] = *words;
        }
        true
    }
}

const NAME: &str = "{k1}:cache:0123456789abcdef0000000500000007";

#[test]
fn a_name_keys_its_cell_by_its_last_16_hex_digits() {
    assert_eq!(key_of_name(NAME), Some((5, 7)));
    assert_eq!(cell_of((5, 7)), 7);
    assert_eq!(
        key_of_name("{k}:cache:ffffffff80000001"),
        Some((-1, i32::MIN + 1))
    );
    assert_eq!(cell_of((0, -1)), u32::MAX % CELLS);
    assert_eq!(key_of_name("short"), None);
    assert_eq!(key_of_name("{k}:cache:zzzzzzzz00000001"), None);
}

#[test]
fn the_first_claims_writes_its_key_and_the_next_waits_for_its_lease() {
    let cells = Plain::new();
    let key = (5, 7);
    assert_eq!(claim(&cells, key, 100.0, None).0, Asked::Lead);
    assert_eq!(cells.words(key)[..3], [5.0, 7.0, 100.0 + CLAIM_MS]);
    let waits = claim(&cells, key, 200.0, None).0;
    assert_eq!(
        waits,
        Asked::Wait {
            left_ms: CLAIM_MS - 100.0
        }
    );
    // Its entry put: fresh for the others, its lease over, its bytes' place named.
    let place = Place {
        start: 4_096.0,
        len: 300.0,
        capacity: 65_536.0,
        digest: [11.0, 12.0],
    };
    settle(&cells, key, 300.0, Some((1_000.0, place)));
    let put = [
        5.0, 7.0, 0.0, 1_300.0, 300.0, 4_096.0, 300.0, 65_536.0, 11.0, 12.0,
    ];
    assert_eq!(cells.words(key), put);
    let (fresh, cell) = claim(&cells, key, 400.0, None);
    assert_eq!(fresh, Asked::Fresh { left_ms: 900.0 });
    assert_eq!((cell.place, cell.put_at), (Some(place), 300.0));
    // Those bytes found overwritten: the cell forgets them and the fetch is claimed.
    assert_eq!(claim(&cells, key, 500.0, Some(place)).0, Asked::Lead);
    assert_eq!(cells.words(key)[5..], [0.0; 5]);
}

#[test]
fn a_request_that_meets_anothers_cell_neither_takes_its_claim_nor_ends_it() {
    let cells = Plain::new();
    let (ours, theirs) = ((5, 7), (6, 7 + CELLS as i32));
    assert_eq!(cell_of(ours), cell_of(theirs));
    assert_eq!(claim(&cells, ours, 100.0, None).0, Asked::Lead);
    let before = cells.words(ours);
    assert_eq!(claim(&cells, theirs, 150.0, None).0, Asked::Alone);
    let place = Place {
        start: 0.0,
        len: 10.0,
        capacity: 100.0,
        digest: [1.0, 2.0],
    };
    settle(&cells, theirs, 160.0, Some((5_000.0, place)));
    assert_eq!(cells.words(ours), before, "the other's put wrote nothing");
    // Once the claim ended, the cell goes to whoever asks.
    let later = 100.0 + CLAIM_MS + 1.0;
    assert_eq!(claim(&cells, theirs, later, None).0, Asked::Lead);
    assert_eq!(cells.words(theirs)[..2], [6.0, f64::from(7 + CELLS as i32)]);
}

#[test]
fn a_hold_taken_over_meanwhile_runs_again_on_what_the_taker_wrote() {
    let cells = Plain::new();
    let key = (5, 7);
    // While this thread decides, a stalled lock is taken over and the taker claims the fetch:
    // what this thread wrote counts for nothing, and it decides again on the taker's claim.
    let mut taker = [0.0; CELL_WORDS];
    taker[..3].copy_from_slice(&[5.0, 7.0, 90.0 + CLAIM_MS]);
    *cells.steal.borrow_mut() = Some(taker);
    let asked = claim(&cells, key, 100.0, None).0;
    assert_eq!(
        asked,
        Asked::Wait {
            left_ms: CLAIM_MS - 10.0
        }
    );
    assert_eq!(cells.entered.get(), 2);
    assert_eq!(cells.words(key), taker);
}

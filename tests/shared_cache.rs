//! The shared cache's rules (#36) on the virtual clock: a request's claim and entry as the
//! threads' cells and `cache.lua` hold them, the waiters' backoff, the store's answers, the
//! shared names, and the load (32 workers over 4 processes polling 10 snapshots every
//! 500 ms for 60 s, a `ttl_seconds` of 5) against its ideal of one request per snapshot per
//! lifetime, for the fleet.
#![cfg(not(target_arch = "wasm32"))]

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use odds_gate::core::gates::scope::{RequestKey, Scope};
use odds_gate::core::rules::arena::Place;
use odds_gate::core::rules::cache::{Cache, CacheConfig, Landed, Lookup};
use odds_gate::core::rules::cache_request::CacheRequest;
use odds_gate::core::rules::shared_cache::{
    claim, follow, put, Asked, Cell, CLAIM_MS, FIRST_POLL_MS, MAX_POLL_MS, WAIT_MS,
};
use odds_gate::core::Millis;
use odds_gate::store::cache::{
    cache_key, put as put_args, reply, reply_words, shared_name as name,
};

/// A place in the threads' ring, told apart by `n`.
fn place(n: f64) -> Place {
    Place {
        start: n * 100.0,
        len: 100.0,
        capacity: 1_000.0,
        digest: [n, 7.0],
    }
}

fn request(api_key: &str, url: &str, accept: &str) -> RequestKey {
    (Scope::of(Some(api_key), None), url.into(), accept.into())
}

#[test]
fn the_first_to_ask_claims_the_fetch_the_others_wait_for_its_lease() {
    let (asked, cell) = claim(Cell::default(), 1_000.0, None);
    assert_eq!(asked, Asked::Lead);
    let cell = cell.expect("a claim is written");
    assert_eq!(cell.lease_until, 1_000.0 + CLAIM_MS);
    // The cell was free (never used, or another request's with its lease over): now it is ours.
    assert!(cell.ours);
    let (asked, write) = claim(cell, 1_200.0, None);
    assert_eq!(
        asked,
        Asked::Wait {
            left_ms: CLAIM_MS - 200.0
        }
    );
    assert_eq!(write, None);
    // The lease over, the next to ask claims.
    let (asked, _) = claim(cell, 1_000.0 + CLAIM_MS, None);
    assert_eq!(asked, Asked::Lead);
}

#[test]
fn a_put_entry_answers_while_fresh_and_bytes_found_overwritten_are_fetched_again() {
    let (_, cell) = claim(Cell::default(), 0.0, None);
    let cell = put(cell.unwrap(), 100.0, Some((5_000.0, place(1.0))));
    assert_eq!((cell.lease_until, cell.place), (0.0, Some(place(1.0))));
    assert_eq!(
        claim(cell, 200.0, None),
        (Asked::Fresh { left_ms: 4_900.0 }, None)
    );
    // A thread that found those bytes overwritten in the ring claims the fetch, and the cell
    // names them no more; bytes of another place lost say nothing of these.
    let (asked, write) = claim(cell, 200.0, Some(place(1.0)));
    assert_eq!(asked, Asked::Lead);
    let write = write.expect("the claim is written");
    assert_eq!((write.lease_until, write.place), (200.0 + CLAIM_MS, None));
    assert_eq!(
        claim(write, 300.0, None).0,
        Asked::Wait {
            left_ms: CLAIM_MS - 100.0
        }
    );
    let other = claim(cell, 200.0, Some(place(2.0))).0;
    assert_eq!(other, Asked::Fresh { left_ms: 4_900.0 });
    // While another leads, a lost place is forgotten and the thread waits for the lead.
    let led = Cell {
        lease_until: 9_000.0,
        ..cell
    };
    let (asked, write) = claim(led, 200.0, Some(place(1.0)));
    assert_eq!(asked, Asked::Wait { left_ms: 8_800.0 });
    assert_eq!(write.map(|c| c.place), Some(None));
    // Past its lifetime, the next to ask claims; a fresh cell naming no bytes answers nothing.
    assert_eq!(claim(cell, 5_100.0, None).0, Asked::Lead);
    let empty = Cell {
        place: None,
        ..cell
    };
    assert_eq!(claim(empty, 200.0, None).0, Asked::Lead);
}

#[test]
fn a_leader_with_nothing_to_put_releases_its_claim() {
    let (_, cell) = claim(Cell::default(), 0.0, None);
    let released = put(cell.unwrap(), 300.0, None);
    assert_eq!(released.lease_until, 0.0);
    assert_eq!(claim(released, 301.0, None).0, Asked::Lead);
}

#[test]
fn another_requests_cell_is_never_waited_on_while_its_lease_holds() {
    let theirs = Cell {
        ours: false,
        lease_until: 5_000.0,
        fresh_until: 0.0,
        put_at: 0.0,
        place: Some(place(1.0)),
    };
    assert_eq!(claim(theirs, 1_000.0, None), (Asked::Alone, None));
    let (asked, cell) = claim(theirs, 5_000.0, None);
    assert_eq!(asked, Asked::Lead);
    assert!(cell.is_some_and(|c| c.ours));
}

#[test]
fn a_waiter_asks_again_after_a_doubling_backoff_and_stops_at_the_lease_or_wait_ms() {
    let delays: Vec<Millis> = (0..5).filter_map(|n| follow(0.0, n, 1e9)).collect();
    assert_eq!(
        delays,
        vec![FIRST_POLL_MS, 8.0, 16.0, MAX_POLL_MS, MAX_POLL_MS]
    );
    assert_eq!(follow(0.0, 0, 3.0), Some(3.0));
    assert_eq!(follow(0.0, 3, 0.0), None);
    assert_eq!(follow(WAIT_MS, 3, 1e9), None);
    assert_eq!(follow(WAIT_MS - 1.0, 3, 1e9), Some(1.0));
}

#[test]
fn the_stores_answers_are_understood_and_anything_else_is_alone() {
    let fields = |f: &[&str]| f.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let fresh = fields(&["fresh", "4000", "1000", "200", "OK", "[]", "e30=", "0"]);
    assert_eq!(reply(&fresh), (Asked::Fresh { left_ms: 4_000.0 }, 1_000.0));
    assert_eq!(reply(&fields(&["lead", "10000"])).0, Asked::Lead);
    let wait = reply(&fields(&["wait", "250"])).0;
    assert_eq!(wait, Asked::Wait { left_ms: 250.0 });
    for odd in [&["fresh", "4000"][..], &["fresh", "x"], &["what"], &[]] {
        assert_eq!(reply(&fields(odd)).0, Asked::Alone, "{odd:?}");
    }
}

#[test]
fn a_shared_name_keeps_the_credentials_hash_tag_and_tells_every_request_apart() {
    let url = "https://api.example/v1/events/e1/odds/snapshot?secret=1";
    let a = request("key-a", url, "application/json");
    let scope = a.0.as_str().to_owned();
    let key = cache_key("og", &a);
    assert!(key.starts_with(&format!("og:{{{scope}}}:cache:")), "{key}");
    assert!(!key.contains("events") && !key.contains("secret") && !key.contains("key-a"));
    let others = [
        request("key-b", url, "application/json"),
        request(
            "key-a",
            "https://api.example/v1/events/e2/odds/snapshot",
            "application/json",
        ),
        request("key-a", url, "text/csv"),
    ];
    for other in &others {
        assert_ne!(name(other), name(&a));
    }
    assert_eq!(name(&a), name(&a.clone()));
}

#[test]
fn an_entry_from_the_shared_cache_lands_as_a_hit_for_its_leader_and_answers_who_joined() {
    let mut c: Cache<RequestKey, u32> = Cache::new(CacheConfig::DEFAULT);
    let k = request("key-a", "/v1/events/e1/odds/snapshot", "");
    let open = || false;
    assert_eq!(
        c.lookup(0.0, &k, (1, &CacheRequest::default()), open),
        Lookup::Lead
    );
    assert_eq!(
        c.lookup(1.0, &k, (2, &CacheRequest::default()), open),
        Lookup::Joined
    );
    let settled = c.shared(30.0, &k, 1, (500.0, 4_000.0), false);
    assert_eq!(settled.waiting, vec![1, 2]);
    assert_eq!(settled.fresh_ms, 4_000.0);
    assert!(settled.kept.is_some());
    let f = c.figures();
    assert_eq!((f.hits, f.coalesced, f.requests_saved()), (1, 1, 2));
    assert!(matches!(
        c.lookup(4_029.0, &k, (3, &CacheRequest::default()), open),
        Lookup::Fresh { .. }
    ));
    assert_eq!(
        c.lookup(4_030.0, &k, (4, &CacheRequest::default()), open),
        Lookup::Lead
    );
    // A leader that waited for another's request joined it.
    let joined = c.shared(4_100.0, &k, 4, (500.0, 4_000.0), true);
    assert_eq!(joined.waiting, vec![4]);
    assert_eq!((c.figures().hits, c.figures().coalesced), (2, 2));
    // A leader that lost its flight (everyone left) counts nothing.
    assert_eq!(
        c.lookup(8_100.0, &k, (5, &CacheRequest::default()), open),
        Lookup::Lead
    );
    assert_eq!(c.leave(5), Some(5));
    let late = c.shared(8_101.0, &k, 5, (500.0, 4_000.0), false);
    assert!(late.waiting.is_empty());
    assert_eq!((c.figures().hits, c.figures().coalesced), (2, 2));
}

/// The load through a fleet: each process has its own cache, the store one cell per
/// snapshot with its bytes (as `cache.lua` keeps them: always there while fresh).
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord, Clone, Copy)]
enum Event {
    /// A worker (process, worker) polls every snapshot.
    Poll(usize, u32),
    /// Process p's call (leader, snapshot, polls so far, since) asks the store.
    Ask(usize, u32, u32, u32, u64),
    /// Process p's request for a snapshot, led by a call, is answered.
    Land(usize, u32, u32),
}

#[test]
fn four_processes_polling_ten_snapshots_make_one_request_per_snapshot_per_lifetime() {
    const PROCESSES: usize = 4;
    const WORKERS: u32 = 32;
    const SNAPSHOTS: u32 = 10;
    const TTL_MS: Millis = 5_000.0;
    const RUN_MS: Millis = 60_000.0;
    const UPSTREAM_MS: Millis = 80.0;
    let mut caches: Vec<Cache<u32, u32>> = (0..PROCESSES)
        .map(|_| Cache::new(CacheConfig::DEFAULT))
        .collect();
    let mut cells: HashMap<u32, Cell> = HashMap::new();
    let mut queue = BinaryHeap::new();
    let at = |t: Millis| (t * 1_000.0) as u64;
    for w in 0..WORKERS {
        // Workers start 7 ms apart and split over the processes.
        queue.push(Reverse((
            at(f64::from(w) * 7.0),
            Event::Poll(w as usize % PROCESSES, w),
        )));
    }
    let (mut upstream, mut next_caller) = (0u32, 0u32);
    let mut asked_at: HashMap<(usize, u32), Millis> = HashMap::new();
    let mut waits: Vec<Millis> = Vec::new();
    while let Some(Reverse((t, event))) = queue.pop() {
        let now = t as f64 / 1_000.0;
        match event {
            Event::Poll(p, w) => {
                if now + 500.0 < RUN_MS {
                    queue.push(Reverse((at(now + 500.0), Event::Poll(p, w))));
                }
                for s in 0..SNAPSHOTS {
                    next_caller += 1;
                    let caller = next_caller;
                    asked_at.insert((p, caller), now);
                    match caches[p].lookup(now, &s, (caller, &CacheRequest::default()), || false) {
                        Lookup::Lead => queue.push(Reverse((t, Event::Ask(p, caller, s, 0, t)))),
                        Lookup::Joined => {}
                        _ => waits.push(0.0),
                    }
                }
            }
            Event::Ask(p, leader, s, polls, since) => {
                let cell = cells.get(&s).copied().unwrap_or_default();
                let (asked, write) = claim(Cell { ours: true, ..cell }, now, None);
                if let Some(w) = write {
                    cells.insert(s, w);
                }
                match asked {
                    Asked::Fresh { left_ms } => {
                        let waited = polls > 0;
                        let settled = caches[p].shared(now, &s, leader, (100.0, left_ms), waited);
                        for c in settled.waiting {
                            waits.push(now - asked_at[&(p, c)]);
                        }
                    }
                    Asked::Wait { left_ms } => {
                        let waited = now - since as f64 / 1_000.0;
                        let delay =
                            follow(waited, polls, left_ms).expect("the leader answers in time");
                        let ask = Event::Ask(p, leader, s, polls + 1, since);
                        queue.push(Reverse((at(now + delay), ask)));
                    }
                    Asked::Lead | Asked::Alone => {
                        upstream += 1;
                        queue.push(Reverse((at(now + UPSTREAM_MS), Event::Land(p, leader, s))));
                    }
                }
            }
            Event::Land(p, leader, s) => {
                let cell = cells.get(&s).copied().unwrap_or_default();
                cells.insert(s, put(cell, now, Some((TTL_MS, place(1.0)))));
                let landed = Landed::Ok {
                    bytes: 100.0,
                    lifetime: Some(TTL_MS),
                };
                for c in caches[p].landed(now, &s, leader, (landed, None)).waiting {
                    waits.push(now - asked_at[&(p, c)]);
                }
            }
        }
    }
    // One request per snapshot per lifetime: the first, then one as each lifetime ends.
    let ideal = f64::from(SNAPSHOTS) * (RUN_MS / TTL_MS).ceil();
    let ratio = f64::from(upstream) / ideal;
    assert!(
        (1.0..=1.1).contains(&ratio),
        "{upstream} requests for an ideal of {ideal}"
    );
    waits.sort_by(f64::total_cmp);
    let p99 = waits[waits.len() * 99 / 100];
    // Who waits for another process's request sees its answer at most one backoff late.
    assert!(p99 <= UPSTREAM_MS + MAX_POLL_MS, "p99 wait {p99} ms");
    let saved: u64 = caches.iter().map(|c| c.figures().requests_saved()).sum();
    assert_eq!(saved + u64::from(upstream), waits.len() as u64);
}

#[test]
fn whoever_shares_the_allowance_shares_the_cache() {
    use odds_gate::core::rules::shared_cache::Sharing;
    assert_eq!(Sharing::of(true, true), Sharing::Fleet);
    assert_eq!(Sharing::of(true, false), Sharing::Fleet);
    assert_eq!(Sharing::of(false, true), Sharing::Threads);
    assert_eq!(Sharing::of(false, false), Sharing::Alone);
}

#[test]
fn a_store_that_failed_is_not_asked_for_retry_ms() {
    use odds_gate::core::rules::shared_cache::asks;
    assert!(asks(0.0, Millis::NEG_INFINITY, 1_000.0));
    assert!(!asks(1_500.0, 1_000.0, 1_000.0));
    assert!(asks(2_000.0, 1_000.0, 1_000.0));
}

#[test]
fn the_answers_and_cells_cross_to_javascript_as_numbers() {
    assert_eq!(Asked::Alone.code(), [0.0, 0.0]);
    assert_eq!(Asked::Fresh { left_ms: 40.0 }.code(), [1.0, 40.0]);
    assert_eq!(
        Asked::Lead.code(),
        [2.0, CLAIM_MS],
        "a leader's claim lasts CLAIM_MS"
    );
    assert_eq!(Asked::Wait { left_ms: 7.0 }.code(), [3.0, 7.0]);
    for code in [0.0, 1.0, 2.0, 3.0, 4.0, 9.0] {
        let back = Asked::from_code(code, 40.0);
        let again = match back {
            Asked::Alone => [0.0, 0.0],
            _ => back.code(),
        };
        assert_eq!(Asked::from_code(again[0], again[1]), back, "{code}");
    }
    assert_eq!(
        Asked::from_code(1.0, 0.0),
        Asked::Alone,
        "fresh for no time"
    );
    assert_eq!(Asked::from_code(2.5, 1.0), Asked::Alone);
}

#[test]
fn the_fleets_entries_are_written_and_read_field_by_field() {
    let number = |n: f64| n.to_string();
    let stored = ["OK".into(), "{}".into(), "e30=".into(), "3".into()];
    let args = put_args("p1", (5_000.0, 600_000.0), 200, stored, &number);
    let expected = [
        "put", "p1", "5000", "605000", "200", "OK", "{}", "e30=", "3",
    ];
    assert_eq!(args, expected.map(String::from));
    let fresh = ["fresh", "4000", "1000", "200", "OK", "{}", "e30=", "3"].map(String::from);
    let (numbers, texts) = reply_words(&fresh);
    assert_eq!(numbers, [1.0, 4_000.0, 1_000.0, 200.0]);
    assert_eq!(texts, ["OK", "{}", "e30=", "3"].map(String::from));
    let lead = ["lead", "0"].map(String::from);
    assert_eq!(reply_words(&lead), (vec![2.0, CLAIM_MS], &[][..]));
    let short = ["fresh", "4000", "1000"].map(String::from);
    assert_eq!(
        reply_words(&short),
        (vec![0.0, 0.0], &[][..]),
        "a fresh answer cut short"
    );
}

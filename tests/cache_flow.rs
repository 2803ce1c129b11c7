//! The cache's sequence (`rules::cache_flow`) on the virtual clock: who is answered from what,
//! who joins, leads, asks the shared cache and when again, who sends their own or hears the
//! leader's failure, what is kept, shared, released and dropped; and, over random runs, that
//! every call settles exactly once and every led request ends once.
#![cfg(not(target_arch = "wasm32"))]

use std::collections::HashMap;

use odds_gate::core::parse::freshness::CacheHeaders;
use odds_gate::core::rules::cache::{Cache, CacheConfig, Refusal};
use odds_gate::core::rules::cache_flow::{
    says_json, CacheAction, CacheFlow, CallId, Copied, Ended, How,
};
use odds_gate::core::rules::cache_request::CacheRequest;
use odds_gate::core::rules::policy::Reason;
use odds_gate::core::rules::shared_cache::{Asked, FIRST_POLL_MS, MAX_POLL_MS, WAIT_MS};
use proptest::prelude::*;

type Key = &'static str;

fn flow(shared: bool) -> CacheFlow<Key> {
    let config = CacheConfig {
        stale_for_ms: 60_000.0,
        ..CacheConfig::DEFAULT
    };
    CacheFlow::new(Cache::new(config), shared)
}

fn get(key: Key) -> Option<(Key, CacheRequest)> {
    Some((key, CacheRequest::new("", [("X-API-Key", "k")])))
}

fn begin(f: &mut CacheFlow<Key>, now: f64, key: Key) -> CallId {
    f.begin(now, get(key), false, || false)
}

fn ok(json: bool) -> Ended {
    Ended::Responded {
        status: 200,
        json,
        refusal: None,
    }
}

fn copy(cache_control: Option<&'static str>, age: Option<&'static str>) -> Copied<'static> {
    Copied {
        status: 200,
        bytes: 100.0,
        headers: CacheHeaders {
            cache_control,
            age,
            ..CacheHeaders::default()
        },
        vary: None,
        ttl_seconds: None,
    }
}

use CacheAction as A;

#[test]
fn one_request_answers_everyone_waiting_and_its_copy_then_answers_as_a_hit_with_its_age() {
    let mut f = flow(false);
    let a = begin(&mut f, 0.0, "k");
    assert_eq!(f.take_actions(), [A::Lead { call: a }]);
    let b = begin(&mut f, 1.0, "k");
    assert_eq!(f.take_actions(), [], "b joined: it waits");
    f.ended(50.0, a, ok(true));
    let take = A::Take {
        leader: a,
        give: true,
        ttl: true,
    };
    assert_eq!(f.take_actions(), [take]);
    f.copied(60.0, 0.0, a, Some(copy(Some("max-age=5"), Some("3"))));
    let out = f.take_actions();
    let A::Keep { entry, leader } = out[0] else {
        panic!("kept first: {out:?}")
    };
    assert_eq!(leader, a);
    let coalesced = A::Copy {
        call: b,
        leader: a,
        age_s: 3.0,
    };
    assert_eq!(out[1..], [coalesced, A::Done { leader: a }]);
    // 3 s old when it came, 1.5 s since: Age 4; fresh until 60 + (5 - 3) s.
    let c = begin(&mut f, 1_560.0, "k");
    let hit = A::Answer {
        call: c,
        entry,
        how: How::Hit,
        age_s: 4.0,
    };
    assert_eq!(f.take_actions(), [hit]);
    let d = begin(&mut f, 2_061.0, "k");
    assert_eq!(f.take_actions(), [A::Lead { call: d }], "stale after 2 s");
}

#[test]
fn an_entry_whose_bytes_the_ring_lost_goes_uncounted_and_the_next_call_asks_again() {
    let mut f = flow(true);
    let a = begin(&mut f, 0.0, "k");
    assert_eq!(f.take_actions(), [A::Ask { call: a }]);
    f.asked(
        1.0,
        a,
        Asked::Fresh { left_ms: 5_000.0 },
        Some((100.0, 0.0)),
    );
    let out = f.take_actions();
    let A::Keep { entry, .. } = out[0] else {
        panic!("kept first: {out:?}")
    };
    let b = begin(&mut f, 10.0, "k");
    let hit = A::Answer {
        call: b,
        entry,
        how: How::Hit,
        age_s: 0.0,
    };
    assert_eq!(f.take_actions(), [hit]);
    assert_eq!(f.cache().figures().hits, 2);
    // The ring overwrote its bytes: b is sent on as it is, and counts as no hit.
    f.lost(entry, How::Hit);
    assert_eq!(f.take_actions(), [A::Drop { entry }]);
    let figures = f.cache().figures();
    assert_eq!((figures.hits, figures.entries, figures.bytes), (1, 0, 0.0));
    // Lost again (another caller held it too): nothing more goes, nothing more is uncounted.
    f.lost(entry, How::Hit);
    assert_eq!(f.take_actions(), []);
    assert_eq!(f.cache().figures().hits, 1);
    let c = begin(&mut f, 20.0, "k");
    assert_eq!(f.take_actions(), [A::Ask { call: c }]);
}

#[test]
fn a_failed_request_fails_every_caller_that_waited_for_it_and_a_copy_that_failed_sends_theirs() {
    let mut f = flow(false);
    let a = begin(&mut f, 0.0, "k");
    let b = begin(&mut f, 0.0, "k");
    f.take_actions();
    f.ended(5.0, a, Ended::Failed { refusal: None });
    let rejected = [
        A::Reject { call: a, leader: a },
        A::Reject { call: b, leader: a },
        A::Done { leader: a },
    ];
    assert_eq!(f.take_actions(), rejected);

    let c = begin(&mut f, 10.0, "k");
    let d = begin(&mut f, 10.0, "k");
    f.take_actions();
    f.ended(15.0, c, ok(false));
    let take = A::Take {
        leader: c,
        give: true,
        ttl: false,
    };
    assert_eq!(f.take_actions(), [take]);
    f.copied(16.0, 0.0, c, None);
    // c has its response; d, whose copy could not be made, sends its own.
    assert_eq!(
        f.take_actions(),
        [A::Forward { call: d }, A::Done { leader: c }]
    );
    assert_eq!(f.cache().figures().entries, 0);
}

#[test]
fn only_a_200_that_says_json_has_its_ttl_seconds_read() {
    assert!(says_json(Some("application/json; charset=utf-8")));
    assert!(says_json(Some("Application/JSON")));
    assert!(!says_json(Some("text/plain")));
    assert!(!says_json(None));
    let mut f = flow(false);
    let a = begin(&mut f, 0.0, "k");
    f.take_actions();
    let not_found = Ended::Responded {
        status: 404,
        json: true,
        refusal: None,
    };
    f.ended(1.0, a, not_found);
    let take = A::Take {
        leader: a,
        give: true,
        ttl: false,
    };
    assert_eq!(f.take_actions(), [take]);
}

#[test]
fn an_answer_that_varies_on_a_header_the_joiner_sent_otherwise_sends_the_joiner_its_own() {
    let mut f = flow(false);
    let en = CacheRequest::new("", [("X-API-Key", "k"), ("Accept-Language", "en")]);
    let de = CacheRequest::new("", [("X-API-Key", "k"), ("Accept-Language", "de")]);
    let a = f.begin(0.0, Some(("k", en)), false, || false);
    let b = f.begin(0.0, Some(("k", de)), false, || false);
    f.take_actions();
    f.ended(1.0, a, ok(false));
    f.take_actions();
    let varies = Copied {
        vary: Some("Accept-Language"),
        ..copy(Some("max-age=60"), None)
    };
    f.copied(2.0, 0.0, a, Some(varies));
    let out = f.take_actions();
    assert!(matches!(out[0], A::Keep { .. }), "{out:?}");
    assert_eq!(out[1..], [A::Forward { call: b }, A::Done { leader: a }]);
}

#[test]
fn the_gates_refusal_is_answered_by_a_stale_entry_and_a_server_failure_is_not() {
    let mut f = flow(false);
    let a = begin(&mut f, 0.0, "k");
    f.take_actions();
    f.ended(1.0, a, ok(false));
    f.take_actions();
    f.copied(1.0, 0.0, a, Some(copy(Some("max-age=1"), None)));
    let entry = match f.take_actions()[0] {
        A::Keep { entry, .. } => entry,
        ref other => panic!("{other:?}"),
    };
    // Past its lifetime: the next call leads, and the gate refuses it (maxWaitMs).
    let b = begin(&mut f, 5_000.0, "k");
    let c = begin(&mut f, 5_000.0, "k");
    assert_eq!(f.take_actions(), [A::Lead { call: b }]);
    let queue_wait = Some(Refusal::Abandoned(Reason::QueueWait));
    f.ended(
        6_000.0,
        b,
        Ended::Failed {
            refusal: queue_wait,
        },
    );
    let stale = |call| A::Answer {
        call,
        entry,
        how: How::Stale,
        age_s: 5.0,
    };
    assert_eq!(
        f.take_actions(),
        [stale(b), stale(c), A::Done { leader: b }]
    );
    // The spent quota's answer given again: its body goes unread.
    let d = begin(&mut f, 7_000.0, "k");
    f.take_actions();
    let quota = Ended::Responded {
        status: 429,
        json: true,
        refusal: Some(Refusal::Quota),
    };
    f.ended(7_000.0, d, quota);
    assert_eq!(
        f.take_actions(),
        [
            A::Discard { leader: d },
            A::Answer {
                call: d,
                entry,
                how: How::Stale,
                age_s: 6.0
            },
            A::Done { leader: d }
        ]
    );
    // Retries spent on the server's failures: the caller hears of the outage.
    let e = begin(&mut f, 8_000.0, "k");
    f.take_actions();
    let attempts = Some(Refusal::Abandoned(Reason::Attempts));
    f.ended(8_000.0, e, Ended::Failed { refusal: attempts });
    assert_eq!(
        f.take_actions(),
        [A::Reject { call: e, leader: e }, A::Done { leader: e }]
    );
    assert_eq!(f.cache().figures().stale, 3);
}

#[test]
fn a_call_that_waits_for_another_processs_fetch_asks_again_on_the_timer_with_a_backoff() {
    let mut f = flow(true);
    let a = begin(&mut f, 0.0, "k");
    assert_eq!(f.take_actions(), [A::Ask { call: a }]);
    assert_eq!(f.next_wake(), None, "nothing to wake while the ask is out");
    let mut now = 1.0;
    let mut waits = Vec::new();
    for _ in 0..5 {
        f.asked(now, a, Asked::Wait { left_ms: 5_000.0 }, None);
        assert_eq!(f.take_actions(), []);
        let at = f.next_wake().expect("a poll");
        waits.push(at - now);
        f.wake(at - 1.0);
        assert_eq!(f.take_actions(), [], "not before its time");
        now = at;
        f.wake(now);
        assert_eq!(f.take_actions(), [A::Ask { call: a }]);
    }
    let first = FIRST_POLL_MS;
    assert_eq!(
        waits,
        [first, 2.0 * first, 4.0 * first, MAX_POLL_MS, MAX_POLL_MS]
    );
    // The entry came: the leader is answered as one that waited (coalesced), and keeps it.
    f.asked(
        now,
        a,
        Asked::Fresh { left_ms: 3_000.0 },
        Some((100.0, 1_500.0)),
    );
    let out = f.take_actions();
    let A::Keep { entry, leader } = out[0] else {
        panic!("{out:?}")
    };
    assert_eq!(leader, a);
    let answer = A::Answer {
        call: a,
        entry,
        how: How::Coalesced,
        age_s: 1.0,
    };
    assert_eq!(out[1..], [answer, A::Done { leader: a }]);
    assert_eq!(f.next_wake(), None);
    assert_eq!(f.cache().figures().coalesced, 1);
}

#[test]
fn a_wait_ends_in_a_fetch_of_its_own_when_the_lease_ends_or_the_longest_wait_passed() {
    let mut f = flow(true);
    let a = begin(&mut f, 0.0, "k");
    f.take_actions();
    f.asked(1.0, a, Asked::Wait { left_ms: 0.0 }, None);
    assert_eq!(f.take_actions(), [A::Lead { call: a }], "the lease ended");
    let b = begin(&mut f, 0.0, "j");
    f.take_actions();
    f.asked(WAIT_MS, b, Asked::Wait { left_ms: 5_000.0 }, None);
    assert_eq!(
        f.take_actions(),
        [A::Lead { call: b }],
        "waited long enough"
    );
}

#[test]
fn a_leader_puts_what_it_fetched_and_releases_a_claim_it_has_nothing_for() {
    let mut f = flow(true);
    let a = begin(&mut f, 0.0, "k");
    f.take_actions();
    f.asked(1.0, a, Asked::Lead, None);
    assert_eq!(f.take_actions(), [A::Lead { call: a }]);
    f.ended(10.0, a, ok(false));
    f.take_actions();
    f.copied(11.0, 0.0, a, Some(copy(Some("max-age=6"), Some("2"))));
    let out = f.take_actions();
    let put = A::Put {
        leader: a,
        fresh_ms: 4_000.0,
        age_s: 2.0,
    };
    assert_eq!(out[1..], [put, A::Done { leader: a }]);
    // A shared cache that failed is one that does not answer: lead, release what is not kept.
    let b = begin(&mut f, 0.0, "j");
    f.take_actions();
    f.asked(1.0, b, Asked::Alone, None);
    assert_eq!(f.take_actions(), [A::Lead { call: b }]);
    f.ended(2.0, b, Ended::Failed { refusal: None });
    assert_eq!(
        f.take_actions(),
        [
            A::Reject { call: b, leader: b },
            A::Release { leader: b },
            A::Done { leader: b }
        ]
    );
}

#[test]
fn a_request_nobody_waits_for_goes_in_whatever_phase_it_is() {
    let mut f = flow(true);
    // Out: cancelled; its late answer goes unread.
    let a = begin(&mut f, 0.0, "k");
    f.asked(1.0, a, Asked::Lead, None);
    f.take_actions();
    f.leave(a);
    assert_eq!(f.take_actions(), [A::Cancel { leader: a }]);
    f.ended(2.0, a, ok(false));
    assert_eq!(
        f.take_actions(),
        [
            A::Discard { leader: a },
            A::Release { leader: a },
            A::Done { leader: a }
        ]
    );
    // Polling: forgotten, and the timer has nothing to wake.
    let b = begin(&mut f, 0.0, "j");
    f.asked(1.0, b, Asked::Wait { left_ms: 900.0 }, None);
    f.take_actions();
    assert!(f.next_wake().is_some());
    f.leave(b);
    assert_eq!(f.take_actions(), [A::Done { leader: b }]);
    assert_eq!(f.next_wake(), None);
    // Asking: the claim the answer gives goes back.
    let c = begin(&mut f, 0.0, "i");
    f.take_actions();
    f.leave(c);
    assert_eq!(f.take_actions(), []);
    f.asked(1.0, c, Asked::Lead, None);
    assert_eq!(
        f.take_actions(),
        [A::Release { leader: c }, A::Done { leader: c }]
    );
    // While one still waits, the request goes on.
    let d = begin(&mut f, 0.0, "h");
    let e = begin(&mut f, 0.0, "h");
    f.take_actions();
    f.leave(d);
    assert_eq!(f.take_actions(), []);
    f.asked(1.0, d, Asked::Lead, None);
    assert_eq!(f.take_actions(), [A::Lead { call: d }]);
    f.ended(2.0, d, ok(false));
    let take = A::Take {
        leader: d,
        give: false,
        ttl: false,
    };
    assert_eq!(
        f.take_actions(),
        [take],
        "the leader left: nobody is given its response"
    );
    let _ = e;
}

#[test]
fn an_aborted_call_or_one_not_cached_goes_to_the_gate_as_it_is() {
    let mut f = flow(false);
    let a = f.begin(0.0, get("k"), true, || false);
    let b = f.begin(0.0, None, false, || false);
    assert_eq!(
        f.take_actions(),
        [A::Forward { call: a }, A::Forward { call: b }]
    );
}

/// One event a random run may report.
#[derive(Debug, Clone)]
enum Step {
    Begin(u8),
    Leave(u8),
    /// The oldest pending send, ask or copy finishes, the number picking its outcome.
    Finish(u8),
    Tick(u16),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (0u8..3).prop_map(Step::Begin),
        1 => any::<u8>().prop_map(Step::Leave),
        3 => any::<u8>().prop_map(Step::Finish),
        1 => (1u16..500).prop_map(Step::Tick),
    ]
}

/// What the bindings owe the machine: a report for each action that asks for one.
#[derive(Debug, Clone, Copy)]
enum Owed {
    Send(CallId),
    Ask(CallId),
    Copy(CallId),
}

/// A run's books: which calls settled (and how often), which left, which leaders ended.
#[derive(Default)]
struct Books {
    settled: HashMap<CallId, u32>,
    left: Vec<CallId>,
    done: HashMap<CallId, u32>,
    begun: Vec<CallId>,
    owed: Vec<Owed>,
}

impl Books {
    fn read(&mut self, actions: Vec<CacheAction>) {
        for a in actions {
            let settles = match a {
                A::Answer { call, .. }
                | A::Copy { call, .. }
                | A::Forward { call }
                | A::Reject { call, .. } => Some(call),
                A::Take {
                    leader, give: true, ..
                } => Some(leader),
                _ => None,
            };
            if let Some(call) = settles {
                *self.settled.entry(call).or_default() += 1;
            }
            match a {
                A::Lead { call } => self.owed.push(Owed::Send(call)),
                A::Ask { call } => self.owed.push(Owed::Ask(call)),
                A::Take { leader, .. } => self.owed.push(Owed::Copy(leader)),
                A::Done { leader } => *self.done.entry(leader).or_default() += 1,
                _ => {}
            }
        }
    }
}

fn finish(f: &mut CacheFlow<&'static str>, now: f64, owed: Owed, pick: u8) {
    match owed {
        Owed::Send(c) => {
            let ended = match pick % 4 {
                0 => Ended::Failed { refusal: None },
                1 => Ended::Failed {
                    refusal: Some(Refusal::Abandoned(Reason::QueueWait)),
                },
                _ => ok(pick % 3 == 0),
            };
            f.ended(now, c, ended);
        }
        Owed::Ask(c) => {
            let answer = match pick % 4 {
                0 => Asked::Alone,
                1 => Asked::Lead,
                2 => Asked::Wait { left_ms: 300.0 },
                _ => Asked::Fresh { left_ms: 800.0 },
            };
            f.asked(now, c, answer, Some((64.0, 0.0)));
        }
        Owed::Copy(c) => {
            let copied = match pick % 3 {
                0 => None,
                1 => Some(copy(Some("no-store"), None)),
                _ => Some(copy(Some("max-age=1"), Some("2"))),
            };
            f.copied(now, 0.0, c, copied);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Whatever happens in whatever order, every call that did not leave settles exactly once
    /// (a call that left, never after), and every request led or asked for ends once.
    #[test]
    fn every_call_settles_exactly_once_and_every_led_request_ends_once(
        shared in any::<bool>(),
        steps in prop::collection::vec(step(), 1..80),
    ) {
        let mut f = flow(shared);
        let mut b = Books::default();
        let mut now = 0.0;
        let keys = ["a", "b", "c"];
        for s in steps {
            match s {
                Step::Begin(k) => {
                    let call = begin(&mut f, now, keys[usize::from(k)]);
                    b.begun.push(call);
                }
                Step::Leave(i) if !b.begun.is_empty() => {
                    let call = b.begun[usize::from(i) % b.begun.len()];
                    if !b.settled.contains_key(&call) && !b.left.contains(&call) {
                        b.left.push(call);
                        f.leave(call);
                    }
                }
                Step::Finish(pick) if !b.owed.is_empty() => {
                    let owed = b.owed.remove(0);
                    finish(&mut f, now, owed, pick);
                }
                Step::Tick(ms) => {
                    now += f64::from(ms);
                    f.wake(now);
                }
                _ => {}
            }
            let actions = f.take_actions();
            b.read(actions);
        }
        // Everything owed is reported, the timer runs out; bounded: each round ends a phase.
        for round in 0..10_000 {
            if b.owed.is_empty() {
                match f.next_wake() {
                    Some(at) => { now = at; f.wake(now); }
                    None => break,
                }
            } else {
                let owed = b.owed.remove(0);
                finish(&mut f, now, owed, round as u8);
            }
            let actions = f.take_actions();
            b.read(actions);
        }
        prop_assert!(b.owed.is_empty() && f.next_wake().is_none(), "the run never ended");
        for call in &b.begun {
            let n = b.settled.get(call).copied().unwrap_or(0);
            match b.left.contains(call) {
                true => prop_assert!(n == 0, "call {call} left and still settled"),
                false => prop_assert_eq!(n, 1, "call {} settled {} times", call, n),
            }
        }
        for (leader, n) in &b.done {
            prop_assert_eq!(*n, 1, "leader {} ended {} times", leader, n);
        }
    }
}

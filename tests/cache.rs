//! The cache's rules (#36) on the virtual clock: which answers are kept and for how long, which
//! calls join a request in flight or are answered from an entry, which entries go when the
//! bytes run out, and the polling load the issue measures (32 workers, 10 snapshots, a
//! `ttl_seconds` of 5) against its ideal of one request per snapshot per lifetime.
#![cfg(not(target_arch = "wasm32"))]

use odds_gate::core::parse::freshness::Freshness;
use odds_gate::core::rules::allowance::ConfigError;
use odds_gate::core::rules::cache::{
    cacheable, lifetime, Cache, CacheConfig, CacheGiven, Landed, Lookup, Refusal,
};
use odds_gate::core::rules::cache_request::CacheRequest;
use odds_gate::core::rules::classify::Body;
use odds_gate::core::rules::policy::Reason;
use odds_gate::core::rules::toggle::Toggle;
use odds_gate::core::Millis;
use proptest::prelude::*;

/// (credential, URL): what makes two GETs the same here.
type Key = (&'static str, String);

fn key(credential: &'static str, n: u32) -> Key {
    (credential, format!("/v1/events/e{n}/odds/snapshot"))
}

fn cache(config: CacheConfig) -> Cache<Key, u32> {
    Cache::new(config)
}

/// The gate would let the call through now: no stale answer.
fn open() -> bool {
    false
}

/// The gate would hold the call past a cooldown, or refuse it for a spent quota.
fn held() -> bool {
    true
}

fn ok(bytes: f64, lifetime: Millis) -> Landed {
    Landed::Ok {
        bytes,
        lifetime: Some(lifetime),
    }
}

#[test]
fn a_lifetime_comes_from_the_headers_then_ttl_seconds_then_the_default() {
    assert_eq!(
        lifetime(Freshness::For(3_000.0), Some(5.0), 1.0),
        Some(3_000.0)
    );
    assert_eq!(lifetime(Freshness::NoStore, Some(5.0), 1.0), None);
    assert_eq!(lifetime(Freshness::Unsaid, Some(5.0), 1.0), Some(5_000.0));
    assert_eq!(lifetime(Freshness::Unsaid, Some(-1.0), 1.0), None);
    assert_eq!(lifetime(Freshness::Unsaid, Some(f64::NAN), 1.0), None);
    assert_eq!(lifetime(Freshness::Unsaid, None, 250.0), Some(250.0));
}

#[test]
fn cache_true_is_the_defaults_false_or_left_out_none() {
    assert_eq!(CacheConfig::toggled(None), Ok(None));
    assert_eq!(CacheConfig::toggled(Some(Toggle::Flag(false))), Ok(None));
    let defaults = Some(CacheConfig::DEFAULT);
    assert_eq!(CacheConfig::toggled(Some(Toggle::Flag(true))), Ok(defaults));
    let given = CacheGiven::default();
    assert_eq!(
        CacheConfig::toggled(Some(Toggle::Given(given))),
        Ok(defaults)
    );
    let small = CacheGiven {
        max_bytes: Some(10.0),
        ..given
    };
    let small = CacheConfig::toggled(Some(Toggle::Given(small)));
    assert_eq!(small.unwrap().map(|c| c.max_entry_bytes), Some(10.0));
}

#[test]
fn bad_options_name_the_field() {
    let field = |c: CacheConfig| match c.validate() {
        Err(ConfigError::OutOfRange { field, .. } | ConfigError::Unsupported { field, .. }) => {
            field
        }
        Err(other) => panic!("not a range error: {other}"),
        Ok(_) => "accepted",
    };
    let d = CacheConfig::DEFAULT;
    assert_eq!(field(d), "accepted");
    let bad = CacheConfig {
        max_bytes: 0.0,
        ..d
    };
    assert_eq!(field(bad), "cache.maxBytes");
    let bad = CacheConfig {
        max_entry_bytes: f64::INFINITY,
        ..d
    };
    assert_eq!(field(bad), "cache.maxEntryBytes");
    let bad = CacheConfig {
        max_entry_bytes: d.max_bytes + 1.0,
        ..d
    };
    assert_eq!(field(bad), "cache.maxEntryBytes");
    let bad = CacheConfig {
        default_ttl_ms: -1.0,
        ..d
    };
    assert_eq!(field(bad), "cache.defaultTtlMs");
    let bad = CacheConfig {
        stale_for_ms: f64::NAN,
        ..d
    };
    assert_eq!(field(bad), "cache.staleForMs");
}

#[test]
fn identical_gets_in_flight_share_one_request_and_each_caller_gets_its_answer() {
    let mut c = cache(CacheConfig::DEFAULT);
    let k = key("a", 1);
    assert_eq!(
        c.lookup(0.0, &k, (0, &CacheRequest::default()), open),
        Lookup::Lead
    );
    for caller in 1..32 {
        assert_eq!(
            c.lookup(1.0, &k, (caller, &CacheRequest::default()), open),
            Lookup::Joined
        );
    }
    // Another credential's identical URL is another request.
    assert_eq!(
        c.lookup(1.0, &key("b", 1), (99, &CacheRequest::default()), open),
        Lookup::Lead
    );
    let settled = c.landed(50.0, &k, 0, (ok(1_000.0, 5_000.0), None));
    assert_eq!(settled.waiting, (0..32).collect::<Vec<_>>());
    assert!(settled.kept.is_some() && settled.dropped.is_empty());
    assert_eq!(c.figures().coalesced, 31);
    assert_eq!(c.figures().requests_saved(), 31);
}

#[test]
fn a_kept_answer_is_fresh_for_its_lifetime_then_stale_for_stale_for_ms() {
    let config = CacheConfig {
        stale_for_ms: 1_000.0,
        ..CacheConfig::DEFAULT
    };
    let mut c = cache(config);
    let k = key("a", 1);
    c.lookup(0.0, &k, (0, &CacheRequest::default()), open);
    let id = c
        .landed(100.0, &k, 0, (ok(10.0, 5_000.0), None))
        .kept
        .unwrap();
    // Fresh, the gate is not even asked.
    let never = || -> bool { panic!("a fresh entry asks nothing of the gate") };
    assert_eq!(
        c.lookup(5_099.0, &k, (1, &CacheRequest::default()), never),
        Lookup::Fresh {
            entry: id,
            age_ms: 4_999.0
        }
    );
    // At its lifetime's end it is no longer fresh: while the gate lets calls through, a new
    // request leads...
    assert_eq!(
        c.lookup(5_100.0, &k, (2, &CacheRequest::default()), open),
        Lookup::Lead
    );
    // ...and while the gate would hold or refuse one, the old entry answers at once, with no
    // request (not even joining the one in flight), until stale_for_ms past its lifetime.
    assert_eq!(
        c.lookup(6_100.0, &k, (3, &CacheRequest::default()), held),
        Lookup::Stale {
            entry: id,
            age_ms: 6_000.0
        }
    );
    assert_eq!(
        c.lookup(6_101.0, &k, (4, &CacheRequest::default()), held),
        Lookup::Joined
    );
    let f = c.figures();
    assert_eq!((f.hits, f.stale, f.coalesced), (1, 1, 1));
    assert_eq!(f.requests_saved(), 3);
    // A key with no entry has nothing stale to give, however the gate stands.
    assert_eq!(
        c.lookup(6_101.0, &key("a", 2), (5, &CacheRequest::default()), held),
        Lookup::Lead
    );
    assert_eq!(
        c.lookup(0.0, &key("b", 1), (6, &CacheRequest::default()), held),
        Lookup::Lead
    );
}

#[test]
fn the_gates_own_refusals_are_answered_stale_and_nothing_else_is() {
    use Reason::*;
    let serves = |r: Refusal| r.serves_stale();
    assert!(serves(Refusal::Quota));
    for reason in [
        QueueWait,
        QueueFull,
        Deadline,
        StoreUnavailable,
        RetryAfterExceedsDeadline,
    ] {
        assert!(serves(Refusal::Abandoned(reason)), "{reason}");
    }
    for reason in [Attempts, TimeBudget, RetryBudget] {
        assert!(!serves(Refusal::Abandoned(reason)), "{reason}");
    }
    // Every reason JavaScript sees is read back as itself.
    for name in [
        "attempts",
        "time-budget",
        "retry-budget",
        "deadline",
        "retry-after-exceeds-deadline",
        "store-unavailable",
        "queue-wait",
        "queue-full",
    ] {
        assert_eq!(Reason::named(name).map(Reason::as_str), Some(name));
    }
    assert_eq!(Reason::named("abort"), None);
}

#[test]
fn a_refused_request_answers_everyone_waiting_from_a_stale_entry_within_stale_for_ms() {
    let config = CacheConfig {
        stale_for_ms: 1_000.0,
        ..CacheConfig::DEFAULT
    };
    let mut c = cache(config);
    let k = key("a", 1);
    c.lookup(0.0, &k, (0, &CacheRequest::default()), open);
    let id = c
        .landed(0.0, &k, 0, (ok(10.0, 5_000.0), None))
        .kept
        .unwrap();
    // Past its lifetime, 1 leads and 2, 3 join; 3 leaves; the gate refuses 1's request.
    assert_eq!(
        c.lookup(5_000.0, &k, (1, &CacheRequest::default()), open),
        Lookup::Lead
    );
    c.lookup(5_100.0, &k, (2, &CacheRequest::default()), open);
    c.lookup(5_100.0, &k, (3, &CacheRequest::default()), open);
    assert_eq!(c.leave(3), None);
    let quota = Refusal::Quota;
    // A refusal that serves nothing stale leaves the request to land as any other does...
    let gave_up = Refusal::Abandoned(Reason::Attempts);
    assert_eq!(c.refused(5_200.0, &k, 1, gave_up), None);
    // ...and another caller's word is not the leader's.
    assert_eq!(c.refused(5_200.0, &k, 2, quota), None);
    assert_eq!(c.refused(5_200.0, &k, 1, quota), Some((id, vec![1, 2])));
    let f = c.figures();
    assert_eq!((f.stale, f.coalesced, f.requests_saved()), (2, 2, 4));
    // The request is settled: its landing settles nobody, the next call leads anew.
    assert!(c
        .landed(5_300.0, &k, 1, (Landed::Other, None))
        .waiting
        .is_empty());
    assert_eq!(
        c.lookup(5_300.0, &k, (4, &CacheRequest::default()), open),
        Lookup::Lead
    );
    // Past stale_for_ms, the refusal reaches the callers.
    assert_eq!(c.refused(6_001.0, &k, 4, quota), None);
    assert_eq!(
        c.landed(6_001.0, &k, 4, (Landed::Other, None)).waiting,
        vec![4]
    );
    // Another key's request has no entry to fall back on.
    let other = key("b", 1);
    c.lookup(5_300.0, &other, (5, &CacheRequest::default()), held);
    assert_eq!(c.refused(5_300.0, &other, 5, quota), None);
    assert_eq!(c.figures().stale, 2);
}

#[test]
fn nothing_is_kept_that_may_not_be_or_does_not_fit() {
    let config = CacheConfig {
        max_bytes: 100.0,
        max_entry_bytes: 50.0,
        ..CacheConfig::DEFAULT
    };
    let mut c = cache(config);
    let cases = [
        Landed::Other,
        Landed::Ok {
            bytes: 10.0,
            lifetime: None,
        },
        ok(51.0, 5_000.0),
    ];
    for (n, landed) in cases.into_iter().enumerate() {
        let k = key("a", n as u32);
        c.lookup(0.0, &k, (0, &CacheRequest::default()), open);
        c.lookup(0.0, &k, (1, &CacheRequest::default()), open);
        let settled = c.landed(1.0, &k, 0, (landed, None));
        assert_eq!(
            settled.waiting,
            vec![0, 1],
            "{landed:?}: every caller answered"
        );
        assert_eq!(settled.kept, None, "{landed:?}");
        assert_eq!(
            c.lookup(2.0, &k, (2, &CacheRequest::default()), open),
            Lookup::Lead,
            "{landed:?}"
        );
    }
    assert_eq!(c.figures().entries, 0);
    // With no lifetime and no stale use, an answer is shared in flight only.
    let mut c = cache(CacheConfig {
        stale_for_ms: 0.0,
        ..config
    });
    let k = key("a", 9);
    c.lookup(0.0, &k, (0, &CacheRequest::default()), open);
    assert_eq!(c.landed(1.0, &k, 0, (ok(10.0, 0.0), None)).kept, None);
}

#[test]
fn entries_go_least_recently_used_first_when_the_bytes_run_out() {
    let config = CacheConfig {
        max_bytes: 100.0,
        max_entry_bytes: 50.0,
        ..CacheConfig::DEFAULT
    };
    let mut c = cache(config);
    let mut ids = Vec::new();
    for n in 0..2 {
        let k = key("a", n);
        c.lookup(0.0, &k, (n, &CacheRequest::default()), open);
        ids.push(
            c.landed(0.0, &k, n, (ok(40.0, 60_000.0), None))
                .kept
                .unwrap(),
        );
    }
    // Entry 0 is used again, so entry 1 is the least recent when entry 2 needs room.
    assert!(matches!(
        c.lookup(1.0, &key("a", 0), (7, &CacheRequest::default()), open),
        Lookup::Fresh { .. }
    ));
    c.lookup(2.0, &key("a", 2), (8, &CacheRequest::default()), open);
    let settled = c.landed(2.0, &key("a", 2), 8, (ok(40.0, 60_000.0), None));
    assert_eq!(settled.dropped, vec![ids[1]]);
    let f = c.figures();
    assert_eq!((f.entries, f.bytes, f.evictions), (2, 80.0, 1));
    // A new answer for a kept key replaces its entry (not an eviction).
    c.lookup(70_000.0, &key("a", 0), (9, &CacheRequest::default()), open);
    let settled = c.landed(70_000.0, &key("a", 0), 9, (ok(10.0, 60_000.0), None));
    assert_eq!(settled.dropped, vec![ids[0]]);
    assert_eq!(c.figures().evictions, 1);
    // The next landing past both entries' stale time drops them (an answer not kept, here).
    let late = 70_000.0 + 60_000.0 + 600_001.0;
    c.lookup(late, &key("b", 0), (10, &CacheRequest::default()), open);
    let settled = c.landed(late, &key("b", 0), 10, (Landed::Other, None));
    assert_eq!(settled.dropped.len(), 2);
    assert_eq!((c.figures().entries, c.figures().bytes), (0, 0.0));
}

#[test]
fn a_request_goes_on_while_anyone_waits_for_it() {
    let mut c = cache(CacheConfig::DEFAULT);
    let k = key("a", 1);
    c.lookup(0.0, &k, (0, &CacheRequest::default()), open);
    c.lookup(0.0, &k, (1, &CacheRequest::default()), open);
    c.lookup(0.0, &k, (2, &CacheRequest::default()), open);
    assert_eq!(c.leave(0), None, "the leader aborts: two still wait");
    assert_eq!(c.leave(2), None);
    assert_eq!(
        c.landed(5.0, &k, 0, (ok(1.0, 1_000.0), None)).waiting,
        vec![1]
    );
    // When the last caller leaves, the request (led by 3) is cancelled and the next call leads
    // anew; the cancelled one's landing settles nothing of the new one's.
    let k = key("a", 2);
    c.lookup(0.0, &k, (3, &CacheRequest::default()), open);
    c.lookup(0.0, &k, (4, &CacheRequest::default()), open);
    assert_eq!(c.leave(3), None);
    assert_eq!(c.leave(4), Some(3));
    assert_eq!(
        c.lookup(1.0, &k, (5, &CacheRequest::default()), open),
        Lookup::Lead
    );
    c.lookup(1.0, &k, (6, &CacheRequest::default()), open);
    let stale = c.landed(2.0, &k, 3, (ok(1.0, 1_000.0), None));
    assert!(stale.waiting.is_empty() && stale.kept.is_none());
    assert_eq!(
        c.landed(3.0, &k, 5, (ok(1.0, 1_000.0), None)).waiting,
        vec![5, 6]
    );
}

/// The polling load: `workers` poll `snapshots` URLs every `every_ms` (offset per
/// worker) for `for_ms`; a request takes `latency_ms`; answers carry `ttl_ms`. Returns the
/// requests sent and the longest a caller waited.
fn poll(
    workers: u32,
    snapshots: u32,
    every_ms: Millis,
    for_ms: Millis,
    ttl_ms: Millis,
) -> (u32, Millis) {
    let latency_ms = 120.0;
    let mut c = cache(CacheConfig::DEFAULT);
    let mut landing: Vec<(Millis, Key, u32)> = Vec::new();
    let mut sent_at: Vec<(u32, Millis)> = Vec::new();
    let (mut requests, mut longest) = (0, 0.0_f64);
    let mut caller = 0;
    let step = every_ms / f64::from(workers);
    let mut now = 0.0;
    while now < for_ms {
        landing.sort_by(|a, b| a.0.total_cmp(&b.0));
        while landing.first().is_some_and(|(at, ..)| *at <= now) {
            let (at, k, leader) = landing.remove(0);
            for waiting in c
                .landed(at, &k, leader, (ok(2_000.0, ttl_ms), None))
                .waiting
            {
                let asked = sent_at.iter().find(|(c, _)| *c == waiting).unwrap().1;
                longest = longest.max(at - asked);
            }
        }
        // Worker w polls at w * step + k * every_ms.
        for w in 0..workers {
            let phase = (now - f64::from(w) * step).rem_euclid(every_ms);
            if phase != 0.0 || now < f64::from(w) * step {
                continue;
            }
            for s in 0..snapshots {
                let k = key("a", s);
                caller += 1;
                sent_at.push((caller, now));
                if c.lookup(now, &k, (caller, &CacheRequest::default()), open) == Lookup::Lead {
                    requests += 1;
                    landing.push((now + latency_ms, k, caller));
                }
            }
        }
        now += step;
    }
    (requests, longest)
}

#[test]
fn polling_makes_one_request_per_snapshot_per_lifetime() {
    let (requests, longest) = poll(32, 10, 500.0, 60_000.0, 5_000.0);
    // The ideal: one request per snapshot per lifetime (plus the first), 10 * 12.
    let ideal = 10.0 * (60_000.0 / 5_000.0);
    let ratio = f64::from(requests) / ideal;
    println!("requests {requests} (ideal {ideal}), {ratio:.3}x; longest wait {longest} ms");
    // Each lifetime starts when its answer lands (120 ms after it was asked), and the next
    // poll after it runs out asks anew: 5,000 + 120 ms a round, 12 rounds in 60 s.
    assert_eq!(requests, 120);
    // A caller waits at most one request's latency: fresh entries answer at once.
    assert_eq!(longest, 120.0);
}

proptest! {
    /// Whatever happens, the bytes kept stay within `max_bytes`, the figures match the entries,
    /// and every caller is answered exactly once: from an entry, with its request, or never
    /// because it left.
    #[test]
    fn every_caller_is_answered_once_and_the_bytes_stay_bounded(
        ops in proptest::collection::vec((0u8..4, 0u32..4, 0u32..3_000, 1u32..400), 1..300)
    ) {
        let config = CacheConfig { max_bytes: 1_000.0, max_entry_bytes: 400.0, stale_for_ms: 500.0, ..CacheConfig::DEFAULT };
        let mut c = cache(config);
        let mut now = 0.0;
        let mut next = 0u32;
        let mut waiting: Vec<(Key, u32)> = Vec::new();
        let mut leaders: std::collections::HashMap<Key, u32> = std::collections::HashMap::new();
        let mut answered = std::collections::HashSet::new();
        let mut kept = std::collections::HashMap::new();
        for (op, k, dt, n) in ops {
            now += f64::from(dt);
            let k = key("a", k);
            match op {
                0 | 1 => {
                    next += 1;
                    // op 1: the gate would hold the call or refuse it.
                    match c.lookup(now, &k, (next, &CacheRequest::default()), || op == 1) {
                        Lookup::Fresh { entry, age_ms } | Lookup::Stale { entry, age_ms } => {
                            prop_assert!(kept.values().any(|&id| id == entry));
                            prop_assert!(age_ms >= 0.0);
                            prop_assert!(answered.insert(next));
                        }
                        Lookup::Lead => {
                            leaders.insert(k.clone(), next);
                            waiting.push((k, next));
                        }
                        Lookup::Joined => waiting.push((k, next)),
                    }
                }
                2 => {
                    let Some(leader) = leaders.remove(&k) else { continue };
                    let settled = c.landed(now, &k, leader, (ok(f64::from(n), f64::from(n) * 3.0), None));
                    for caller in settled.waiting {
                        prop_assert!(answered.insert(caller), "answered twice");
                        waiting.retain(|(_, w)| *w != caller);
                    }
                    for id in settled.dropped {
                        kept.retain(|_, v| *v != id);
                    }
                    if let Some(id) = settled.kept {
                        kept.insert(k.clone(), id);
                    }
                }
                _ => {
                    if let Some(i) = waiting.iter().position(|(w, _)| *w == k) {
                        let (k, caller) = waiting.remove(i);
                        if c.leave(caller).is_some() {
                            leaders.remove(&k);
                        }
                        answered.insert(caller);
                    }
                }
            }
            let f = c.figures();
            prop_assert!(f.bytes <= config.max_bytes);
            prop_assert_eq!(f.entries, kept.len());
        }
        // Whoever still waits leads or joined a request in flight: it lands once for them.
        let keys: std::collections::HashSet<Key> = waiting.iter().map(|(k, _)| k.clone()).collect();
        for k in keys {
            let Some(&leader) = leaders.get(&k) else { continue };
            for caller in c.landed(now, &k, leader, (Landed::Other, None)).waiting {
                prop_assert!(answered.insert(caller), "answered twice");
            }
        }
        prop_assert_eq!(answered.len() as u32, next);
    }
}

#[test]
fn only_a_get_without_a_body_is_cached() {
    assert!(cacheable("GET", Body::None));
    assert!(!cacheable("GET", Body::Reusable));
    assert!(!cacheable("POST", Body::None));
    assert!(!cacheable("HEAD", Body::None));
}

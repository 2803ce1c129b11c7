//! `simulate({ cache })`: workers polling the same snapshots through the core's cache, on the
//! virtual clock. One request per snapshot per ttl, identical calls in flight joined to one
//! request, and nothing shared between keys.
#![cfg(not(target_arch = "wasm32"))]

use odds_gate::core::sim::{simulate, Coordination, Served, SimCache, SimOptions, SimReport};

/// A cache keeping the snapshots `ttl_ms`, and stale for createFetch's 10 minutes.
fn kept(ttl_ms: f64) -> SimCache {
    SimCache {
        ttl_ms,
        stale_for_ms: 600_000.0,
    }
}

fn run(options: SimOptions) -> SimReport {
    simulate(&options).expect("valid options")
}

/// 8 workers on one key polling the same 4 snapshots every 250 ms, 24 times (6 s), burst 2 at
/// 2 per second.
fn polling(cache_ttl_ms: Option<f64>) -> SimOptions {
    SimOptions {
        workers: 8,
        snapshots: 4,
        polls: 24,
        poll_every_ms: 250.0,
        coordination: Coordination::Shared,
        cache: cache_ttl_ms.map(kept),
        ..SimOptions::default()
    }
}

#[test]
fn one_request_per_snapshot_per_ttl() {
    let calls = 8 * 4 * 24;
    let without = run(polling(None));
    assert_eq!((without.attempts, without.completed), (calls, calls));
    assert_eq!(without.requests_saved, None);
    // Fresh for 2 s over 6 s: K x ceil(T / ttl) = 4 x 3 requests.
    let with = run(polling(Some(2_000.0)));
    assert_eq!(
        (with.attempts, with.throttled, with.completed),
        (12, 0, calls)
    );
    let (hits, coalesced) = (with.hits.unwrap(), with.coalesced.unwrap());
    assert_eq!(with.requests_saved, Some(hits + coalesced));
    assert_eq!(hits + coalesced, (calls - 12) as u64);
    // Each snapshot's requests, one per ttl: e0 and e1 at once (the burst), e2 and e3 paced.
    let sent: Vec<f64> = (with.timeline.iter())
        .filter(|a| a.cache.is_none())
        .map(|a| a.at)
        .collect();
    let expected = [
        0, 0, 500, 1000, 2000, 2000, 2500, 3000, 4000, 4000, 4500, 5000,
    ];
    assert_eq!(sent, expected.map(f64::from));
    // The timeline shows every call: the server's attempts and the cache's answers.
    assert_eq!(with.timeline.len(), calls);
    let answered = with.timeline.iter().filter(|a| a.cache.is_some()).count();
    assert_eq!(answered as u64, hits + coalesced);
}

#[test]
fn the_issues_target_is_the_ideal() {
    // 32 workers polling the same 10 snapshots every 500 ms for 60 s, fresh for 5 s: one
    // request per snapshot per ttl (10 x 12), where 38400 go without the cache.
    let r = run(SimOptions {
        workers: 32,
        snapshots: 10,
        polls: 120,
        poll_every_ms: 500.0,
        coordination: Coordination::Shared,
        cache: Some(kept(5_000.0)),
        ..SimOptions::default()
    });
    assert_eq!((r.attempts, r.throttled, r.completed), (120, 0, 38_400));
    assert_eq!(r.requests_saved, Some(38_400 - 120));
}

#[test]
fn identical_calls_in_flight_join_one_request() {
    // 32 workers at once on one key, each answer 100 ms away; fresh for 0 ms: nothing kept.
    let at_once = |cache_ttl_ms: Option<f64>| SimOptions {
        workers: 32,
        latency_ms: 100.0,
        coordination: Coordination::Shared,
        cache: cache_ttl_ms.map(kept),
        ..SimOptions::default()
    };
    let r = run(at_once(Some(0.0)));
    assert_eq!((r.attempts, r.completed, r.abandoned), (1, 32, 0));
    assert_eq!(
        (r.hits, r.coalesced, r.requests_saved),
        (Some(0), Some(31), Some(31))
    );
    let joined = r
        .timeline
        .iter()
        .filter(|a| a.cache == Some(Served::Coalesced));
    assert!(joined.clone().all(|a| a.at == 100.0 && a.status == 200));
    assert_eq!(joined.count(), 31);
    // Without the cache, each of them is its own request.
    assert_eq!(run(at_once(None)).attempts, 32);
}

#[test]
fn a_key_never_gets_another_keys_answer() {
    // Independent workers have a key each: the cache saves nothing, the article's collision
    // is as it was.
    let r = run(SimOptions {
        cache: Some(kept(60_000.0)),
        ..SimOptions::default()
    });
    assert_eq!((r.attempts, r.throttled, r.completed), (20, 12, 8));
    assert_eq!(r.requests_saved, Some(0));
}

#[test]
fn the_options_errors_name_their_field() {
    let refused = |options: SimOptions| simulate(&options).unwrap_err().to_string();
    let ttl = refused(SimOptions {
        cache: Some(kept(f64::NAN)),
        ..SimOptions::default()
    });
    assert_eq!(ttl, "`cache.ttlMs` must be a finite number >= 0, got NaN");
    let polls = refused(SimOptions {
        workers: 1_000,
        snapshots: 10,
        polls: 11,
        ..SimOptions::default()
    });
    let expected = "`polls` must be an integer from 1 with workers x snapshots x polls at most \
                    100000, got 11";
    assert_eq!(polls, expected);
    let every = refused(SimOptions {
        poll_every_ms: -1.0,
        ..SimOptions::default()
    });
    assert_eq!(every, "`pollEveryMs` must be a finite number >= 0, got -1");
}

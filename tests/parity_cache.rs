//! Parity of the fleet's shared cache: random sequences of `get`, `put` and `release` by a few
//! processes on a few requests run through the core's rules (`rules::shared_cache`: `claim` and
//! `put` on a request's cell) and through `cache.lua` on a real `redis-server` (started by
//! `tests/redis_support/`, on a free loopback port), on one virtual clock (the script's
//! test-only `now` argument), with the arguments production builds (`store::cache`'s `get`,
//! `put` and `release`) and its reading of the answers (`reply_words`). Every answer must agree,
//! code and numbers, with what a fresh entry returns and the times the hash holds after each
//! step; `cache.lua` has no other check that it still says what the core decides.
//!
//! The tests are `#[ignore]`d, as `tests/parity.rs`'s are: `scripts/test.sh` runs them with
//! `cargo test --test parity_cache -- --ignored`, and there a missing `redis-server` fails them.
#![cfg(not(target_arch = "wasm32"))]

mod redis_support;

use std::cell::{Cell as Counter, RefCell};
use std::collections::HashMap;
use std::time::Instant;

use odds_gate::core::gates::scope::{RequestKey, Scope};
use odds_gate::core::parse::decimal;
use odds_gate::core::rules::arena::Place;
use odds_gate::core::rules::shared_cache::{claim, put, Asked, Cell, CLAIM_MS};
use odds_gate::core::Millis;
use odds_gate::store::cache::{self, cache_key, reply_words, Stored, CACHE_SCRIPT};
use proptest::prelude::*;
use redis_support::{Connection, Reply, Server};

/// The processes that ask: their ids, as the script's claimants.
const PROCESSES: [&str; 3] = ["p", "q", "r"];

/// Where the store keeps an entry's bytes, for the core's cell: with its times, so always
/// there while it is fresh (no ring overwrites them).
const IN_THE_HASH: Place = Place {
    start: 0.0,
    len: 1.0,
    capacity: 1.0,
    digest: [0.0, 0.0],
};

/// How many requests a sequence asks for.
const REQUESTS: usize = 3;

/// What `put` stores, as production sends it: a status, its text, the headers (JSON), the
/// body (base64) and the `Age`; empty ones among them.
const ENTRIES: [(u16, [&str; 4]); 3] = [
    (
        200,
        [
            "OK",
            r#"[["content-type","application/json"]]"#,
            "eyJvayI6dHJ1ZX0=",
            "",
        ],
    ),
    (203, ["", "[]", "", "12"]),
    (404, ["Not Found", r#"[["x-a","a b"]]"#, "bm8=", "0"]),
];

/// The least a random sequence keeps an entry (fresh and stale), in ms. Redis expires keys on
/// its real clock while the sequence runs on the virtual one, so nothing may expire for real
/// within a sequence (milliseconds long): an entry is kept a minute at least, a claim its lease
/// (10 s). Expiry never changes an answer anyway (an entry is kept past its freshness, a
/// claimed key past its lease); the last test here checks the times Redis keeps them, on its
/// own clock.
const KEEP_AT_LEAST_MS: Millis = 60_000.0;

/// Numbers as the script's arguments: any shortest round-trip writer (Lua's `tonumber` reads
/// them all), as in `tests/parity.rs`.
fn text(n: f64) -> String {
    n.to_string()
}

#[derive(Debug, Clone)]
enum Step {
    /// This process asks (`get`): a fresh entry, a wait, or the claim.
    Get(usize),
    /// This process puts an entry fresh for this long (ms), stale for this long after it, one
    /// of [`ENTRIES`].
    Put(usize, Millis, Millis, usize),
    /// This process gives up its claim, if it holds it.
    Release(usize),
}

fn step() -> impl Strategy<Value = Step> {
    let process = 0..PROCESSES.len();
    // Lifetimes that end exactly where a pause does (the answer's edge), and any other.
    let fresh = prop_oneof![
        prop::sample::select(vec![0.0, 0.5, 1.0, 250.0, 1_000.0, CLAIM_MS, 30_000.0]),
        0.0..20_000.0f64,
    ];
    let stale = prop::sample::select(vec![0.0, 500.0, 600_000.0]);
    prop_oneof![
        5 => process.clone().prop_map(Step::Get),
        3 => (process.clone(), fresh, stale, 0..ENTRIES.len())
            .prop_map(|(p, fresh, stale, entry)| Step::Put(p, fresh, stale, entry)),
        2 => process.prop_map(Step::Release),
    ]
}

/// A pause before a step: none, ones that land on an entry's or a claim's end, or any.
fn pause() -> impl Strategy<Value = Millis> {
    prop_oneof![
        Just(0.0),
        prop::sample::select(vec![
            0.5,
            1.0,
            250.0,
            1_000.0,
            CLAIM_MS - 1.0,
            CLAIM_MS,
            30_000.0
        ]),
        0.0..12_000.0f64,
    ]
}

/// One request as the core sees the store's hash: its cell (always this request's: the store
/// keeps one key per request, so the threads' "another request's lease" never arises), who
/// holds the claim (the core's `put` with no entry is its holder's release; the script releases
/// only for the claimant that holds it, so a leader whose lease ran out cannot release the next
/// one's), and the entry put last.
#[derive(Debug, Clone)]
struct Held {
    cell: Cell,
    lead: Option<&'static str>,
    entry: Option<(u16, Stored)>,
}

impl Held {
    fn new() -> Held {
        Held {
            cell: Cell {
                ours: true,
                ..Cell::default()
            },
            lead: None,
            entry: None,
        }
    }
}

/// What one sequence exercised.
#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    ops: usize,
    fresh: usize,
    leads: usize,
    waits: usize,
    /// Leads taken while another process's lease had run out.
    taken_over: usize,
    /// Asks exactly when an entry stops being fresh or a claim ends.
    at_edge: usize,
    /// Releases by the claim's holder, and by anyone else (which change nothing).
    released: usize,
    ignored: usize,
}

impl Tally {
    fn add(self, o: Tally) -> Tally {
        Tally {
            ops: self.ops + o.ops,
            fresh: self.fresh + o.fresh,
            leads: self.leads + o.leads,
            waits: self.waits + o.waits,
            taken_over: self.taken_over + o.taken_over,
            at_edge: self.at_edge + o.at_edge,
            released: self.released + o.released,
            ignored: self.ignored + o.ignored,
        }
    }
}

/// The request the `i`th key names, under `prefix` (each sequence its own).
fn key(prefix: &str, i: usize) -> String {
    let request: RequestKey = (
        Scope::of(Some("parity-key"), None),
        format!("https://api.the-odds-api.com/v4/sports/{i}/odds"),
        "application/json".into(),
    );
    cache_key(prefix, &request)
}

/// The hash's claimant and times (lease until, fresh until, put at; 0 for a field missing), to
/// compare with the cell after every step.
fn held_in_redis(connection: &mut Connection, key: &str) -> (Option<String>, [f64; 3]) {
    let fields = ["lead", "lease_until", "fresh_until", "put_at"];
    let reply = connection.command(&[&["HMGET", key][..], &fields[..]].concat());
    let Reply::Array(items) = reply else {
        panic!("HMGET answered {reply:?}");
    };
    let number = |r: &Reply| match r {
        Reply::Bulk(s) => decimal::parse(s).unwrap_or(f64::NAN),
        _ => 0.0,
    };
    let lead = match &items[0] {
        Reply::Bulk(s) => Some(s.clone()),
        _ => None,
    };
    (
        lead,
        [number(&items[1]), number(&items[2]), number(&items[3])],
    )
}

/// Runs `steps` (each after its pause, on one of [`REQUESTS`] requests) through the core's
/// rules and through the script; what they exercised, or the first difference.
fn compare(
    connection: &mut Connection,
    sha: &str,
    prefix: &str,
    steps: &[(Millis, usize, Step)],
) -> Result<Tally, String> {
    let mut held: HashMap<usize, Held> = HashMap::new();
    let mut tally = Tally::default();
    // A Unix time in ms, as Redis's clock gives, with a fraction (the virtual clock's).
    let mut now: Millis = 1_700_000_000_000.25;
    for (i, (pause, request, step)) in steps.iter().enumerate() {
        now += pause;
        let key = key(prefix, *request);
        let state = held.entry(*request).or_insert_with(Held::new);
        let before = state.clone();
        let fail = |what: String| Err(format!("step {i} at {now}: {step:?} on {key}: {what}"));
        let reply = match step {
            Step::Get(p) => {
                let process = PROCESSES[*p];
                let (asked, write) = claim(state.cell, now, None);
                if let Some(cell) = write {
                    state.cell = cell;
                }
                let mut numbers = asked.code().to_vec();
                let mut texts: Vec<String> = Vec::new();
                let word = match asked {
                    Asked::Fresh { .. } => {
                        let (status, stored) = state.entry.clone().expect("fresh with an entry");
                        numbers.extend([now - state.cell.put_at, f64::from(status)]);
                        texts = stored.to_vec();
                        tally.fresh += 1;
                        "fresh"
                    }
                    Asked::Lead => {
                        state.lead = Some(process);
                        tally.leads += 1;
                        let lapsed = before.lead.is_some_and(|l| l != process);
                        tally.taken_over += usize::from(lapsed);
                        "lead"
                    }
                    Asked::Wait { .. } => {
                        tally.waits += 1;
                        "wait"
                    }
                    Asked::Alone => return fail("the core went alone on its own cell".into()),
                };
                let edge = [before.cell.fresh_until, before.cell.lease_until];
                tally.at_edge += usize::from(edge.contains(&now));
                let mut args = cache::get(process, &text);
                args.push(text(now));
                let reply = connection.eval(sha, &key, &args);
                let Reply::Array(_) = reply else {
                    return fail(format!("get answered {reply:?}"));
                };
                let fields = reply.strings();
                // The script's own words, before production reads them: its code, and its
                // number (a leader's lease, which reading them does not look at).
                let ms = fields.get(1).and_then(|s| decimal::parse(s));
                if fields[0] != word || ms != Some(asked.code()[1]) {
                    return fail(format!("the core says {asked:?}, the script {fields:?}"));
                }
                let (got, got_texts) = reply_words(&fields);
                if (&got, got_texts) != (&numbers, &texts[..]) {
                    return fail(format!(
                        "the core says {numbers:?} {texts:?}, the script {got:?} {got_texts:?}"
                    ));
                }
                reply
            }
            Step::Put(p, fresh_ms, stale_ms, entry) => {
                let process = PROCESSES[*p];
                let stale_ms = stale_ms.max(KEEP_AT_LEAST_MS - fresh_ms);
                let (status, words) = ENTRIES[*entry];
                let stored: Stored = words.map(String::from);
                state.cell = put(state.cell, now, Some((*fresh_ms, IN_THE_HASH)));
                state.lead = None;
                state.entry = Some((status, stored.clone()));
                let times = (*fresh_ms, stale_ms);
                let mut args = cache::put(process, times, status, stored, &text);
                args.push(text(now));
                connection.eval(sha, &key, &args)
            }
            Step::Release(p) => {
                let process = PROCESSES[*p];
                if state.lead == Some(process) {
                    state.cell = put(state.cell, now, None);
                    state.lead = None;
                    tally.released += 1;
                } else {
                    tally.ignored += 1;
                }
                connection.eval(sha, &key, &cache::release(process))
            }
        };
        if !matches!(step, Step::Get(_)) && reply != Reply::Bulk("ok".into()) {
            return fail(format!("answered {reply:?}, not ok"));
        }
        let (lead, times) = held_in_redis(connection, &key);
        let cell = state.cell;
        let ours = [cell.lease_until, cell.fresh_until, cell.put_at];
        if lead.as_deref() != state.lead || times != ours {
            return fail(format!(
                "the core holds {:?} {ours:?}, the hash {lead:?} {times:?}",
                state.lead
            ));
        }
        tally.ops += 1;
    }
    Ok(tally)
}

#[test]
#[ignore = "needs redis-server"]
fn the_cache_script_and_the_cores_rules_give_the_same_answers() {
    let server = Server::start();
    let connection = RefCell::new(Connection::open(server.port));
    let sha = connection.borrow_mut().load(CACHE_SCRIPT);
    let scenario = prop::collection::vec((pause(), 0..REQUESTS, step()), 1..40);
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(250));
    let (cases, total) = (Counter::new(0), Counter::new(Tally::default()));
    runner
        .run(&scenario, |steps| {
            cases.set(cases.get() + 1);
            let prefix = format!("og-parity-{}", cases.get());
            let done = compare(&mut connection.borrow_mut(), &sha, &prefix, &steps)
                .map_err(TestCaseError::fail)?;
            total.set(total.get().add(done));
            Ok(())
        })
        .unwrap();
    let t = total.get();
    eprintln!(
        "{} sequences, {} steps ({} fresh, {} leads, {} of them after another's lease ran out, \
         {} waits, {} asks at an entry's or a claim's end, {} releases by the holder, {} by \
         another): identical answers and times",
        cases.get(),
        t.ops,
        t.fresh,
        t.leads,
        t.taken_over,
        t.waits,
        t.at_edge,
        t.released,
        t.ignored
    );
    // Floors that say each kind was exercised (a run's counts are several times these).
    assert!(t.ops > 2_500 && t.fresh > 200 && t.leads > 800 && t.waits > 250);
    assert!(t.taken_over > 100 && t.at_edge > 15 && t.released > 60 && t.ignored > 400);
}

/// The times the store keeps things, on Redis's own clock (the one its expiry runs on): an
/// entry for its fresh and stale time together (`keep_ms`, rounded up to a whole ms), and a
/// claimed request at least for the claim's lease, never less than it was kept for. Redis
/// counts down as the test runs, so each TTL is read right after its step and must lie between
/// the time promised and that time less the whole ms measured around the two commands.
#[test]
#[ignore = "needs redis-server"]
fn the_store_keeps_an_entry_for_its_fresh_and_stale_time_and_a_claim_for_its_lease() {
    let server = Server::start();
    let mut connection = Connection::open(server.port);
    let sha = connection.load(CACHE_SCRIPT);
    let key = key("og-parity-keep", 0);
    // Runs `args` (production's, on Redis's clock): its reply, once the key's TTL is found to
    // be `promised` ms less no more than the ms that passed.
    let mut kept_for = |args: Vec<String>, promised: f64| {
        let started = Instant::now();
        let reply = connection.eval(&sha, &key, &args);
        let Reply::Integer(ttl) = connection.command(&["PTTL", &key]) else {
            panic!("no TTL after {args:?}");
        };
        let passed = started.elapsed().as_secs_f64() * 1000.0;
        let ttl = ttl as f64;
        assert!(
            ttl <= promised && ttl >= promised - passed.ceil(),
            "{args:?} ({reply:?}): kept for {ttl} ms, not {promised} less at most {passed} ms"
        );
        reply
    };
    let put = |fresh_ms: f64, stale_ms: f64| {
        let entry = ENTRIES[0].1.map(String::from);
        let args = cache::put("p", (fresh_ms, stale_ms), 200, entry, &text);
        // What production sends to keep is the entry's fresh and stale time together.
        assert_eq!(decimal::parse(&args[3]), Some(fresh_ms + stale_ms));
        args
    };
    let lead = Reply::Array(vec![
        Reply::Bulk("lead".into()),
        Reply::Bulk(text(CLAIM_MS)),
    ]);
    // A claim on a request nobody put: kept for the lease.
    assert_eq!(kept_for(cache::get("q", &text), CLAIM_MS), lead);
    for (fresh_ms, stale_ms) in [(1_500.0, 30_000.0), (250.0, 0.5), (0.0, 100.5)] {
        kept_for(put(fresh_ms, stale_ms), (fresh_ms + stale_ms).ceil());
    }
    // An entry kept for less than a lease (101 ms, no longer fresh): a claim keeps it longer.
    assert_eq!(kept_for(cache::get("q", &text), CLAIM_MS), lead);
    // One kept for longer: a claim leaves its time alone.
    kept_for(put(0.0, 30_000.0), 30_000.0);
    let reply = connection.eval(&sha, &key, &cache::get("r", &text));
    assert_eq!(reply, lead);
    let Reply::Integer(ttl) = connection.command(&["PTTL", &key]) else {
        panic!("no TTL after the claim");
    };
    assert!(ttl as f64 > CLAIM_MS && ttl <= 30_000, "{ttl}");
}

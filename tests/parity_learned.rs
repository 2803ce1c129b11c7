//! Parity of what learning gates share across a fleet: random sequences of puts and gets for a
//! few credentials run through `learned.lua` on a real `redis-server` (started by
//! `tests/redis_support/`, on a free loopback port), with production's arguments and reading
//! (`store::put`, `store::read_all`), and through the simulator's store (`FakeStore`'s `share`
//! and what it keeps, which every simulated fleet learns through). Each get must give the same
//! facts: the simulator's fleets are only evidence for production's while the two agree.
//!
//! Facts are compared by the field they fill, not in the order they come: the simulator moves
//! an updated fact to the end, Redis keeps a field where it first came, and the gates take
//! them in any order (routes' order only counts past `MAX_ROUTES`, 256, where a Redis hash has
//! no order of its own). The script's day-long expiry has no counterpart: the simulator never
//! forgets, and a sequence lasts milliseconds.
//!
//! The test is `#[ignore]`d, as `tests/parity.rs`'s are: `scripts/test.sh` runs it with
//! `cargo test --test parity_learned -- --ignored`, and there a missing `redis-server` fails it.
#![cfg(not(target_arch = "wasm32"))]

mod redis_support;

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;

use odds_gate::core::gates::fleet::Shared;
use odds_gate::core::gates::scope::Scope;
use odds_gate::core::rules::allowance::{Rate, MIN_PER_SECOND};
use odds_gate::core::sim::store::FakeStore;
use odds_gate::store::{field, learned_key, put, read_all, LEARNED_SCRIPT};
use proptest::prelude::*;
use redis_support::{Connection, Reply, Server};

/// The credentials whose gates share, by their API keys.
const CREDENTIALS: [&str; 2] = ["k0", "k1"];

/// Numbers as production's arguments hold them: any shortest round-trip writer, as in
/// `tests/parity.rs` (the script stores the text; only the reader parses it).
fn text(n: f64) -> String {
    n.to_string()
}

#[derive(Debug, Clone)]
enum Step {
    /// Facts put about this credential, in one call (the same field twice among them: the
    /// last wins).
    Put(usize, Vec<Shared>),
    /// What the fleet learned of this credential.
    Get(usize),
}

fn fact() -> impl Strategy<Value = Shared> {
    // Few names, so puts update each other's fields; empty ones, capitals, spaces, names that
    // look like another kind's field, and text beyond ASCII among them.
    let limiter =
        prop::sample::select(vec!["events", "Odds-Minute", "", "a b ü"]).prop_map(String::from);
    let route = prop::sample::select(vec![
        "GET /v4/sports",
        "GET /*/events/*",
        "",
        "e:x",
        "first",
    ])
    .prop_map(String::from);
    let scope = prop::sample::select(vec!["key:ab", "key:ab#events", "", "r:x", "first"])
        .prop_map(String::from);
    // Allowances whose numbers are not short decimals, the extremes Rate takes among them.
    let burst = prop_oneof![
        prop::sample::select(vec![1.0, 2.0, 30.0, 1.5, 1e9, 1.0 + f64::EPSILON]),
        1.0..1e6f64,
    ];
    let per_second = prop_oneof![
        prop::sample::select(vec![0.5, 1.0 / 3.0, 0.1 + 0.2, 9.5, MIN_PER_SECOND, 1e15]),
        1e-6..1e4f64,
    ];
    let rate = (burst, per_second).prop_map(|(b, s)| Rate::new(b, s).unwrap());
    prop_oneof![
        limiter.clone().prop_map(Shared::First),
        (route, limiter).prop_map(|(r, l)| Shared::Route(r, l)),
        (scope, rate).prop_map(|(s, r)| Shared::Estimate(s, r)),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    let credential = 0..CREDENTIALS.len();
    prop_oneof![
        3 => (credential.clone(), prop::collection::vec(fact(), 0..5))
            .prop_map(|(c, facts)| Step::Put(c, facts)),
        2 => credential.prop_map(Step::Get),
    ]
}

/// Facts by the field of the hash they fill; `None` if two fill the same one.
fn by_field(facts: &[Shared]) -> Option<BTreeMap<String, Shared>> {
    let map: BTreeMap<_, _> = facts
        .iter()
        .map(|fact| (field(fact, &text).0, fact.clone()))
        .collect();
    (map.len() == facts.len()).then_some(map)
}

/// What one sequence exercised.
#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    puts: usize,
    /// Facts put where their field already held one.
    updates: usize,
    gets: usize,
    /// Facts read back by the gets.
    read: usize,
}

/// Runs `steps` through the simulator's store and the script (each sequence under its own
/// `prefix`); what they exercised, or the first difference.
fn compare(
    connection: &mut Connection,
    sha: &str,
    prefix: &str,
    steps: &[Step],
) -> Result<Tally, String> {
    let mut fake = FakeStore::default();
    let mut tally = Tally::default();
    for (i, step) in steps.iter().enumerate() {
        let c = match step {
            Step::Put(c, _) | Step::Get(c) => *c,
        };
        let credential = Scope::of(Some(CREDENTIALS[c]), None);
        let key = learned_key(prefix, &credential);
        let kept = |fake: &FakeStore| fake.learned.get(&credential).cloned().unwrap_or_default();
        match step {
            Step::Put(_, facts) => {
                let before = by_field(&kept(&fake)).expect("one fact a field");
                let fields = facts.iter().map(|f| field(f, &text).0);
                tally.updates += fields.filter(|f| before.contains_key(f)).count();
                fake.share(&credential, facts.clone());
                let reply = connection.eval(sha, &key, &put(facts, &text));
                if reply != Reply::Bulk("ok".into()) {
                    return Err(format!("step {i}: {step:?} answered {reply:?}"));
                }
                tally.puts += 1;
            }
            Step::Get(_) => {
                let flat = connection.eval(sha, &key, &["get".to_string()]).strings();
                let read = read_all(&flat);
                let theirs = by_field(&read);
                let ours = by_field(&kept(&fake));
                // Every field the hash holds reads back as a fact.
                if theirs.is_none() || ours != theirs || flat.len() != 2 * read.len() {
                    return Err(format!(
                        "step {i}: {step:?}: the simulator keeps {ours:?}, the script {flat:?}"
                    ));
                }
                tally.gets += 1;
                tally.read += read.len();
            }
        }
    }
    Ok(tally)
}

#[test]
#[ignore = "needs redis-server"]
fn the_learned_script_and_the_simulators_store_share_the_same_facts() {
    let server = Server::start();
    let connection = RefCell::new(Connection::open(server.port));
    let sha = connection.borrow_mut().load(LEARNED_SCRIPT);
    let scenario = prop::collection::vec(step(), 1..30);
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(200));
    let (cases, total) = (Cell::new(0), Cell::new(Tally::default()));
    runner
        .run(&scenario, |steps| {
            cases.set(cases.get() + 1);
            let prefix = format!("og-parity-{}", cases.get());
            let done = compare(&mut connection.borrow_mut(), &sha, &prefix, &steps)
                .map_err(TestCaseError::fail)?;
            let sum = total.get();
            total.set(Tally {
                puts: sum.puts + done.puts,
                updates: sum.updates + done.updates,
                gets: sum.gets + done.gets,
                read: sum.read + done.read,
            });
            Ok(())
        })
        .unwrap();
    let t = total.get();
    eprintln!(
        "{} sequences: {} puts ({} facts put where their field held one), {} gets reading {} \
         facts: the same facts",
        cases.get(),
        t.puts,
        t.updates,
        t.gets,
        t.read
    );
    // Floors that say each kind was exercised (a run's counts are several times these).
    assert!(t.puts > 1_000 && t.updates > 800 && t.gets > 600 && t.read > 2_000);
}

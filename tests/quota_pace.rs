//! A spent quota says nothing of the rate, whoever spends the key: one thread, threads sharing
//! memory, processes sharing a store. On the virtual clock: a learning key paced by the counts
//! of 2 @ 2/s meets the monthly quota's 429s for 15 s (`/usage`: spent until then), then its
//! own bucket again, full after the spell, while calls wait. The fleet's estimate before the
//! spell is the pace after it: neither the quota's 429s nor the full bucket they leave move it.
#![cfg(not(target_arch = "wasm32"))]

mod profiles;

use odds_gate::core::gate::action::Event;
use odds_gate::core::gate::store_link::StoreSettings;
use odds_gate::core::gates::profile::Keeping;
use odds_gate::core::gates::Gates;
use odds_gate::core::rules::allowance::{Allowance, Rate};
use odds_gate::core::rules::bucket::TokenBucket;
use odds_gate::core::rules::quota::Usage;
use odds_gate::core::sim::home::{SharedMemory, SimHome};
use odds_gate::core::sim::server::{Arrival, Reply};
use odds_gate::core::sim::world::{SimCall, World};
use odds_gate::core::Millis;

/// When the server starts answering the quota's 429, and when the quota is lifted.
const SPENT_AT: Millis = 30_000.0;
const LIFTED_AT: Millis = 45_000.0;

#[derive(Debug, Clone, Copy)]
enum Spenders {
    One,
    Threads(usize),
    Fleet(usize),
}

/// The key's spenders' highest learned pace before the spell, and from its start to 5 s after
/// it (from the events each gate reported), and the server's 429s after it; with `spell`, or
/// with the server taking the same calls as ever meanwhile.
fn run(spenders: Spenders, spell: bool) -> (f64, f64, usize) {
    let n = match spenders {
        Spenders::One => 1,
        Spenders::Threads(n) | Spenders::Fleet(n) => n,
    };
    let memory = SharedMemory::default();
    let mut all = Vec::new();
    let mut wrappers = Vec::new();
    for p in 0..n {
        let home = match spenders {
            Spenders::Threads(_) => SimHome::sharing(p as u64 + 1, p as u32 + 1, memory.clone()),
            _ => SimHome::alone(p as u64 + 1),
        };
        let mut gates = Gates::new(Box::new(home));
        let keeping = match spenders {
            Spenders::Fleet(_) => Keeping::Store(gates.store("fake", StoreSettings::DEFAULT)),
            Spenders::Threads(_) => Keeping::Memory { threads: true },
            Spenders::One => Keeping::Memory { threads: false },
        };
        wrappers.push(gates.wrapper(profiles::profile(Allowance::Learned(None), keeping)));
        all.push(gates);
    }
    let mut bucket = TokenBucket::new(Rate::new(2.0, 2.0).unwrap(), 0.0);
    let quota = Reply::status(429, &[]).saying("quota_exceeded", "Monthly API credits exhausted");
    let server = move |now: Millis, _: &Arrival| {
        if spell && (SPENT_AT..LIFTED_AT).contains(&now) {
            return quota.clone().after(20.0);
        }
        let ok = bucket.take(now);
        let left = bucket.tokens(now).floor().to_string();
        let counts = [
            ("X-RateLimit-Limit", "2"),
            ("X-RateLimit-Remaining", left.as_str()),
        ];
        match ok {
            true => Reply::status(200, &counts),
            false => Reply::status(429, &[("Retry-After", "1")]),
        }
        .after(20.0)
    };
    let mut w = World::new(all, Box::new(server));
    w.store.latency = 1.0;
    w.usage = Some(Usage {
        used: 1_000.0,
        limit: 1_000.0,
        period_end: Some(LIFTED_AT),
    });
    // Two calls a second until the spell, one a second in it (each refused once it is known),
    // and after it eight at once, then four a second for 20 s: spread over the spenders.
    let mut at = Vec::new();
    at.extend((0..60).map(|i| f64::from(i) * 500.0));
    at.extend((0..15).map(|i| SPENT_AT + 500.0 + f64::from(i) * 1_000.0));
    at.extend((0..8).map(|_| LIFTED_AT + 100.0));
    at.extend((0..80).map(|i| LIFTED_AT + 1_000.0 + f64::from(i) * 250.0));
    for (i, &t) in at.iter().enumerate() {
        let p = i % n;
        let url = format!("http://api/v1/events/e{i}/odds/snapshot");
        w.start_at(t, SimCall::get(p, wrappers[p], "key", &url));
    }
    w.run();
    let paces = |from: Millis, to: Millis| {
        let learned = w.log.events.iter().filter_map(|(t, _, _, e)| match e {
            Event::Learned(e) if (from..to).contains(t) => Some(e.per_second),
            _ => None,
        });
        learned.fold(0.0, f64::max)
    };
    let before = paces(0.0, SPENT_AT);
    // The pace the spell began with, and any it learned from then to 5 s after.
    let last = w.log.events.iter().rev().find_map(|(t, _, _, e)| match e {
        Event::Learned(e) if *t < SPENT_AT => Some(e.per_second),
        _ => None,
    });
    let after = paces(SPENT_AT, LIFTED_AT + 5_000.0).max(last.unwrap_or(0.0));
    let throttled = w
        .log
        .responses
        .iter()
        .filter(|r| r.2 == 429 && r.0 >= LIFTED_AT)
        .count();
    (before, after, throttled)
}

#[test]
fn a_spent_quota_moves_no_spenders_pace() {
    for spenders in [Spenders::One, Spenders::Threads(4), Spenders::Fleet(2)] {
        let (before, after, throttled) = run(spenders, true);
        let (_, _, without) = run(spenders, false);
        eprintln!(
            "{spenders:?}: {before:.3}/s, {after:.3}/s after; 429s {throttled}, {without} without"
        );
        assert!(before > 1.8, "{spenders:?}: learned first: {before}");
        // Before, the first answer after the spell (full, calls waiting) doubled the pace:
        // 1.83 to 3.86/s (one thread), 1.93 to 3.85/s (4 threads, and 16 429s after, not
        // 11), 2.97 to 3.91/s (2 processes through a store).
        assert!(
            after <= before * 1.02,
            "{spenders:?}: {before} then {after}"
        );
        // Later the pace probes upward as it would have without the spell, no more.
        assert!(
            throttled <= without,
            "{spenders:?}: {throttled} 429s after the spell, {without} without it"
        );
    }
}

//! A spreading gate is forgotten when idle like any other (#49), and its key, returning, goes
//! on at its pace: the bucket and the costs learned wait in the gates' memos, so the gate made
//! anew neither reads `/usage` again nor opens a fresh bucket's credit.
#![cfg(not(target_arch = "wasm32"))]

use std::rc::Rc;

use odds_gate::core::gate::action::End;
use odds_gate::core::gates::profile::{Keeping, Profile};
use odds_gate::core::gates::scope::Scope;
use odds_gate::core::gates::Gates;
use odds_gate::core::rules::allowance::{Allowance, Rate};
use odds_gate::core::rules::credits::{Costs, Spread};
use odds_gate::core::rules::policy::RetryPolicy;
use odds_gate::core::rules::quota::Usage;
use odds_gate::core::sim::home::SimHome;
use odds_gate::core::sim::server::{Arrival, Reply, Server};
use odds_gate::core::sim::world::{SimCall, World};
use odds_gate::core::Millis;

const HOUR: Millis = 3_600_000.0;
const KEY: &str = "key-1";
const SNAPSHOT: &str = "http://api/v1/events/e1/odds/snapshot";

/// A server that counts each key's calls as credits of a 1,000-credit plan ending at 600 h
/// (every key's `/usage` says the same count: enough for one key's pace).
#[derive(Default)]
struct Counting {
    used: f64,
}

impl Server for Counting {
    fn reply(&mut self, _: Millis, a: &Arrival) -> Reply {
        if a.key == KEY {
            self.used += 1.0;
        }
        Reply::ok()
    }

    fn usage(&mut self, _: Millis) -> Option<Usage> {
        Some(Usage {
            used: self.used,
            limit: 1_000.0,
            period_end: Some(600.0 * HOUR),
        })
    }
}

#[test]
fn an_idle_spreading_gate_is_forgotten_and_its_key_goes_on_at_its_pace() {
    let mut gates = Gates::new(Box::new(SimHome::alone(1)));
    let wrapper = gates.wrapper(Profile {
        allowance: Allowance::Fixed(Rate::new(10.0, 10.0).unwrap()),
        budget: None,
        keeping: Keeping::Memory { threads: false },
        policy: Some(Rc::new(RetryPolicy::default())),
        // Long enough to wait for a credit (the spread's own bound is a minute).
        max_wait_ms: Some(HOUR),
        max_waiting: None,
        reports_wait: false,
        typed_errors: false,
        spread: Some((Spread::DEFAULT, Costs::default())),
    });
    // 1,000 credits over 600 hours, 950 spread: one every 37.9 minutes. Each key's first call
    // takes its bucket's opening credit.
    let mut w = World::new(vec![gates], Box::new(Counting::default()));
    w.start_at(0.0, SimCall::get(0, wrapper, KEY, SNAPSHOT));
    w.run();
    // Other keys' gates sweep it away once it is idle.
    for k in 0..60 {
        let other = format!("other-{k}");
        w.start_at(20_000.0, SimCall::get(0, wrapper, &other, SNAPSHOT));
    }
    w.run();
    let key = Scope::of(Some(KEY), None);
    assert!(w.processes[0].gates.find(&key).is_none(), "forgotten");
    // The key returns: its bucket is as it left it (empty, a credit 37.9 minutes after the
    // first), so the call waits for that credit; with no memo it would read `/usage` again
    // and go at once on a fresh bucket's credit, every time its gate was forgotten.
    let back = w.start_at(60_000.0, SimCall::get(0, wrapper, KEY, SNAPSHOT));
    w.run();
    assert_eq!(w.log.settled[&back].1, End::Deliver);
    let sent: Vec<&_> = (w.log.sent.iter())
        .filter(|s| s.scope.as_ref() == Some(&key))
        .collect();
    let first_readings = sent.iter().filter(|s| s.probe && s.at < 900_000.0).count();
    assert_eq!(
        first_readings, 1,
        "no reading again: the next is due a refresh after the first"
    );
    let at = sent
        .iter()
        .find(|s| !s.probe && s.index == back)
        .unwrap()
        .at;
    let due = 600.0 * HOUR / 950.0;
    assert!(
        (at - due).abs() < 2_000.0,
        "sent at {at}, the credit due at {due}"
    );
}

//! The call machine's policy on a virtual clock: retries, the server's delay, budgets, quota,
//! deadlines, aborts, cooldowns, and a shared store that fails. Every test drives the
//! production `Gate` through `harness`, which jumps time to the next event. One file per topic
//! beside this one (one test binary all the same); the helpers they share are here.
#![cfg(not(target_arch = "wasm32"))]

#[path = "../harness/mod.rs"]
mod harness;

use std::rc::Rc;

use harness::{Harness, Reply};
use odds_gate::core::authority::{Immediate, Transitions};
use odds_gate::core::base::random::Seeded;
use odds_gate::core::gate::action::{End, Event};
use odds_gate::core::gate::call::CallSpec;
use odds_gate::core::gate::Gate;
use odds_gate::core::rules::allowance::Rate;
use odds_gate::core::rules::backoff::Backoff;
use odds_gate::core::rules::bucket::TokenBucket;
use odds_gate::core::rules::budget::RefillingConfig;
use odds_gate::core::rules::policy::{Reason, RetryPolicy};
use odds_gate::core::Millis;

mod budgets;
mod cooldowns;
mod pacing;
mod quota;
mod retries;
mod store;
mod waiting;

fn rate(burst: f64, per_second: f64) -> Rate {
    Rate::new(burst, per_second).unwrap()
}

fn gate(burst: f64, per_second: f64, budget: Option<RefillingConfig>) -> Gate {
    Gate::new(
        rate(burst, per_second),
        budget,
        0.0,
        Box::new(Seeded::new(7)),
    )
}

fn retrying(policy: RetryPolicy) -> CallSpec {
    CallSpec {
        policy: Some(Rc::new(policy)),
        replayable: true,
        ..CallSpec::default()
    }
}

fn defaults() -> CallSpec {
    retrying(RetryPolicy::default())
}

/// A server with the given allowance: 200 while it has a token, else 429 `Retry-After: 1`.
fn server(burst: f64, per_second: f64) -> harness::Server {
    let mut bucket = TokenBucket::new(rate(burst, per_second), 0.0);
    Box::new(move |now, _, _| {
        if bucket.take(now) {
            Reply::ok()
        } else {
            Reply::status(429, &[("Retry-After", "1")])
        }
    })
}

/// A server that answers each attempt from `script` in order, then 200s.
fn scripted(script: Vec<Reply>) -> harness::Server {
    let mut script = script.into_iter();
    Box::new(move |_, _, _| script.next().unwrap_or_else(Reply::ok))
}

fn abandoned(end: Option<End>) -> (Reason, u32, Option<u16>) {
    match end {
        Some(End::Abandoned { abandoned, .. }) => {
            (abandoned.reason, abandoned.attempts, abandoned.status)
        }
        other => panic!("expected abandonment, got {other:?}"),
    }
}

//! The article's JavaScript reference model (`retry-model.mjs`), ported line for line, against
//! `simulate()` on the production core: every combination of the article's options gives the
//! same timeline, attempt for attempt.
#![cfg(not(target_arch = "wasm32"))]

use odds_gate::core::sim::{simulate, Coordination, SimOptions};

/// The article's `Bucket`: burst 2, refill 2 per second.
#[derive(Clone)]
struct Bucket {
    tokens: f64,
    last: f64,
}

impl Bucket {
    fn new() -> Bucket {
        Bucket {
            tokens: 2.0,
            last: 0.0,
        }
    }
    fn refill(&mut self, now: f64) {
        self.tokens = (self.tokens + (now - self.last) / 500.0).min(2.0);
        self.last = now;
    }
    fn take(&mut self, now: f64) -> bool {
        self.refill(now);
        if self.tokens < 1.0 {
            return false;
        }
        self.tokens -= 1.0;
        true
    }
}

/// The article's `Gate`.
#[derive(Clone)]
struct Gate {
    bucket: Bucket,
    blocked_until: f64,
}

impl Gate {
    fn new() -> Gate {
        Gate {
            bucket: Bucket::new(),
            blocked_until: 0.0,
        }
    }
    fn defer(&mut self, now: f64, delay_ms: f64) {
        self.blocked_until = self.blocked_until.max(now + delay_ms);
    }
    fn admit_at(&mut self, now: f64) -> f64 {
        if now < self.blocked_until {
            return self.blocked_until;
        }
        self.bucket.refill(now);
        if self.bucket.tokens < 1.0 {
            return now + ((1.0 - self.bucket.tokens) * 500.0).ceil();
        }
        self.bucket.tokens -= 1.0;
        now
    }
}

/// What a run gives: attempts, throttled, completed, abandoned, and (at, worker, status) each.
type Outcome = (usize, usize, usize, usize, Vec<(f64, u32, u16)>);

/// The article's `simulate()`.
fn model(
    shared: bool,
    separate_gates: bool,
    always_reject: bool,
    max_attempts: u32,
    retry_budget: Option<u32>,
) -> Outcome {
    let mut server = Bucket::new();
    let mut gate = Gate::new();
    let mut two_gates = [Gate::new(), Gate::new()];
    let mut queue: Vec<(f64, u32, u32, u64)> = Vec::new();
    let mut timeline = Vec::new();
    let (mut order, mut steps, mut completed, mut abandoned) = (0u64, 0, 0, 0);
    let mut retries_left = retry_budget.map(i64::from);
    let mut schedule = |queue: &mut Vec<(f64, u32, u32, u64)>, at: f64, worker: u32, count: u32| {
        queue.push((at, worker, count, order));
        order += 1;
    };
    for worker in 0..8 {
        schedule(&mut queue, 0.0, worker, 0);
    }
    while !queue.is_empty() {
        steps += 1;
        assert!(steps <= 1000, "Scheduler did not terminate");
        queue.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.3.cmp(&b.3)));
        let (at, worker, count, _) = queue.remove(0);
        if count > 0 && retries_left.is_some_and(|left| left <= 0) {
            abandoned += 1;
            continue;
        }
        let active: Option<&mut Gate> = if shared {
            Some(&mut gate)
        } else if separate_gates {
            Some(&mut two_gates[worker as usize % 2])
        } else {
            None
        };
        let mut active = active;
        if let Some(g) = active.as_deref_mut() {
            let next = g.admit_at(at);
            if next > at {
                schedule(&mut queue, next, worker, count);
                continue;
            }
        }
        if count > 0 {
            if let Some(left) = &mut retries_left {
                *left -= 1;
            }
        }
        let allowed = !always_reject && server.take(at);
        timeline.push((at, worker, if allowed { 200 } else { 429 }));
        if allowed {
            completed += 1;
            continue;
        }
        if count + 1 >= max_attempts {
            abandoned += 1;
            continue;
        }
        if let Some(g) = active {
            g.defer(at, 1000.0);
        }
        schedule(&mut queue, at + 1000.0, worker, count + 1);
    }
    let throttled = timeline.iter().filter(|t| t.2 == 429).count();
    (timeline.len(), throttled, completed, abandoned, timeline)
}

#[test]
fn every_combination_of_the_articles_options_gives_the_articles_timeline() {
    let mut differ = Vec::new();
    let mut total = 0;
    for (shared, separate) in [(false, false), (true, false), (false, true)] {
        for always_reject in [false, true] {
            for max_attempts in [1, 2, 3, 5, 10] {
                for retry_budget in [None, Some(0), Some(4)] {
                    total += 1;
                    let want = model(shared, separate, always_reject, max_attempts, retry_budget);
                    let coordination = match (shared, separate) {
                        (true, _) => Coordination::Shared,
                        (_, true) => Coordination::Separate(2),
                        _ => Coordination::Independent,
                    };
                    let got = simulate(&SimOptions {
                        coordination,
                        always_reject,
                        max_attempts,
                        retry_budget,
                        ..SimOptions::default()
                    })
                    .unwrap();
                    let timeline: Vec<(f64, u32, u16)> = got
                        .timeline
                        .iter()
                        .map(|a| (a.at, a.worker, a.status))
                        .collect();
                    let got = (
                        got.attempts,
                        got.throttled,
                        got.completed,
                        got.abandoned,
                        timeline,
                    );
                    if got != want {
                        differ.push(format!(
                            "shared {shared} separate {separate} reject {always_reject} max {max_attempts} budget {retry_budget:?}:\n  model {:?}\n  ours  {:?}",
                            &want.4, &got.4
                        ));
                    }
                }
            }
        }
    }
    assert!(
        differ.is_empty(),
        "{} of {total} differ:\n{}",
        differ.len(),
        differ.join("\n")
    );
}

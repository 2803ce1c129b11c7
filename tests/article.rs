//! Every number the article states, reproduced by the production call machine on a virtual clock.

use odds_gate::core::rules::allowance::Rate;
use odds_gate::core::sim::ArticleGate as Gate;
use odds_gate::core::sim::{simulate, Coordination, SimOptions};

fn run(options: SimOptions) -> odds_gate::core::sim::SimReport {
    simulate(&options).expect("valid options")
}

fn article(coordination: Coordination) -> SimOptions {
    SimOptions {
        coordination,
        ..SimOptions::default()
    }
}

#[test]
fn independent_delays_repeat_the_collision() {
    let r = run(article(Coordination::Independent));
    assert_eq!((r.attempts, r.throttled, r.completed), (20, 12, 8));
    assert_eq!(r.last_attempt_ms, 3000.0);
}

#[test]
fn shared_admission_avoids_it() {
    let r = run(article(Coordination::Shared));
    assert_eq!((r.attempts, r.throttled, r.completed), (8, 0, 8));
    assert_eq!(r.last_attempt_ms, 3000.0);
    let at: Vec<f64> = r.timeline.iter().map(|a| a.at).collect();
    assert_eq!(
        at,
        [0.0, 0.0, 500.0, 1000.0, 1500.0, 2000.0, 2500.0, 3000.0]
    );
}

#[test]
fn two_separate_gates_still_exceed_the_one_allowance() {
    let r = run(article(Coordination::Separate(2)));
    assert_eq!((r.attempts, r.throttled, r.completed), (14, 6, 8));
}

#[test]
fn per_worker_attempt_caps_still_allow_24_calls() {
    let r = run(SimOptions {
        always_reject: true,
        max_attempts: 3,
        ..SimOptions::default()
    });
    assert_eq!((r.attempts, r.abandoned, r.completed), (24, 8, 0));
}

#[test]
fn a_shared_retry_budget_bounds_the_batch() {
    let r = run(SimOptions {
        always_reject: true,
        max_attempts: 3,
        retry_budget: Some(4),
        ..SimOptions::default()
    });
    assert_eq!((r.attempts, r.abandoned, r.completed), (12, 8, 0));
}

#[test]
fn cooldown_holds_eight_callers_then_releases_only_the_burst() {
    let mut gate = Gate::new(Rate::new(2.0, 2.0).unwrap());
    gate.defer(0.0, 2000.0).unwrap();
    assert!((0..8).all(|_| gate.admit_at(1999.0) == 2000.0));
    let resumed: Vec<f64> = (0..8).map(|_| gate.admit_at(2000.0)).collect();
    // Two take the burst; the six others are told to come back at the next token.
    assert_eq!(
        resumed,
        [2000.0, 2000.0, 2500.0, 2500.0, 2500.0, 2500.0, 2500.0, 2500.0]
    );
}

#[test]
fn cooldowns_extend_but_never_shorten() {
    let mut gate = Gate::new(Rate::new(2.0, 2.0).unwrap());
    gate.defer(0.0, 5000.0).unwrap();
    gate.defer(100.0, 1000.0).unwrap();
    assert_eq!(gate.blocked_until(), 5000.0);
    gate.defer(1000.0, 8000.0).unwrap();
    assert_eq!(gate.blocked_until(), 9000.0);
}

#[test]
fn options_beyond_the_article_work() {
    // 64 workers through one gate at 10 per second, burst 5: no 429s, and the last admission
    // lands on the floor (64 - 5) / 10 seconds.
    let r = run(SimOptions {
        workers: 64,
        rate: Rate::new(5.0, 10.0).unwrap(),
        coordination: Coordination::Shared,
        ..SimOptions::default()
    });
    assert_eq!((r.attempts, r.throttled, r.completed), (64, 0, 64));
    assert_eq!(r.last_attempt_ms, 5900.0);

    // Independent workers with a long Retry-After all finish later than with a short one.
    let slow = run(SimOptions {
        retry_after_ms: 5000.0,
        ..SimOptions::default()
    });
    assert_eq!(slow.completed, 8);
    assert_eq!(slow.last_attempt_ms, 15_000.0);

    // Four separate gates (four processes) overrun the allowance more than two do (6 429s).
    let four = run(article(Coordination::Separate(4)));
    assert_eq!((four.attempts, four.throttled, four.completed), (16, 8, 8));
}

#[test]
fn bad_options_are_refused_by_name() {
    for (options, field) in [
        (
            SimOptions {
                workers: 0,
                ..SimOptions::default()
            },
            "workers",
        ),
        (
            SimOptions {
                max_attempts: 0,
                ..SimOptions::default()
            },
            "maxAttempts",
        ),
        (
            SimOptions {
                retry_after_ms: -1.0,
                ..SimOptions::default()
            },
            "retryAfterMs",
        ),
        (
            SimOptions {
                coordination: Coordination::Separate(0),
                ..SimOptions::default()
            },
            "separateGates",
        ),
    ] {
        let err = simulate(&options).unwrap_err();
        assert!(err.to_string().contains(field), "{err}");
    }
}

#[test]
fn the_articles_gate_enforces_its_rate_and_does_not_learn() {
    assert!(Gate::given(Rate::ARTICLE, false).is_ok());
    let refused = Gate::given(Rate::ARTICLE, true).unwrap_err();
    assert_eq!(
        refused.to_string(),
        "`rate.learn` is for createFetch's `rate` only"
    );
    assert!(refused.is_shape());
}

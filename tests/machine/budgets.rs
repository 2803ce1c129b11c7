//! Budgets: a batch's deadline and allowance, and the shared retry budget with its refunds.

use std::cell::RefCell;

use odds_gate::core::rules::batch::Batch;
use odds_gate::core::rules::budget::BatchBudget;

use super::*;

#[test]
fn a_batch_deadline_refuses_before_anything_is_sent() {
    let mut h = Harness::new(gate(2.0, 2.0, None), server(2.0, 2.0));
    let batch = Rc::new(RefCell::new(Batch {
        deadline: 1_200.0,
        budget: Some(BatchBudget::new(2)),
    }));
    for _ in 0..8 {
        h.start_at(
            0.0,
            CallSpec {
                batch: Some(batch.clone()),
                ..defaults()
            },
        );
    }
    h.run();
    assert!((0..4).all(|i| h.end(i) == Some(End::Deliver)));
    assert!((4..8).all(|i| abandoned(h.end(i)) == (Reason::Deadline, 0, None)));
    assert_eq!(h.attempt_times().len(), 4);
    assert_eq!(batch.borrow().budget.as_ref().unwrap().left(), 2);
}

#[test]
fn a_batch_allowance_bounds_retries_across_all_its_calls() {
    // The eight first attempts are out together before the first 503 comes back (which holds
    // the gate: see `Streak`).
    let mut h = Harness::new(
        gate(20.0, 100.0, None),
        Box::new(|_, _, _| Reply::status(503, &[]).after(10.0)),
    );
    let batch = Rc::new(RefCell::new(Batch {
        deadline: 10_000.0,
        budget: Some(BatchBudget::new(4)),
    }));
    for _ in 0..8 {
        h.start_at(
            0.0,
            CallSpec {
                batch: Some(batch.clone()),
                ..defaults()
            },
        );
    }
    h.run();
    assert_eq!(
        h.attempt_times().len(),
        12,
        "eight first attempts and four retries"
    );
    assert!((0..8).all(|i| matches!(h.end(i), Some(End::Abandoned { .. }))));
}

#[test]
fn the_shared_retry_budget_drains_in_an_outage_and_stops_retries() {
    let budget = RefillingConfig {
        capacity: 30.0,
        ..RefillingConfig::DEFAULT
    };
    let policy = RetryPolicy {
        max_attempts: 5,
        ..RetryPolicy::default()
    };
    let mut h = Harness::new(
        gate(50.0, 1000.0, Some(budget)),
        Box::new(|_, _, _| Reply::status(503, &[])),
    );
    for _ in 0..10 {
        h.start_at(0.0, retrying(policy.clone()));
    }
    h.run();
    assert_eq!(
        h.attempt_times().len(),
        13,
        "ten first attempts, three paid retries"
    );
    assert!((0..10).all(|i| abandoned(h.end(i)).0 == Reason::RetryBudget));
    assert_eq!(h.figures().retry_budget, Some(0.0));
}

#[test]
fn a_success_after_a_retry_refunds_its_cost_and_a_first_time_success_adds_one() {
    let budget = RefillingConfig::DEFAULT;
    // Both out before the first 503 comes back, which holds the gate (see `Streak`).
    let mut h = Harness::new(
        gate(10.0, 10.0, Some(budget)),
        scripted(vec![
            Reply::status(503, &[]).after(1.0),
            Reply::status(503, &[]).after(1.0),
        ]),
    );
    h.start_at(0.0, defaults());
    h.start_at(0.0, defaults());
    h.run_until(1.0);
    assert_eq!(h.figures().retry_budget, Some(480.0));
    h.run();
    assert_eq!(h.figures().retry_budget, Some(500.0));
}

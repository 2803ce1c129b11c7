//! The profile a test's wrapper asks for: `createFetch()`'s defaults (the default retries, no
//! retry budget, no limits on waiting, no spread) with the test's allowance and keeping. A test
//! that needs more changes it by struct update.

use std::rc::Rc;

use odds_gate::core::gates::profile::{Keeping, Profile};
use odds_gate::core::rules::allowance::Allowance;
use odds_gate::core::rules::policy::RetryPolicy;

pub fn profile(allowance: Allowance, keeping: Keeping) -> Profile {
    Profile {
        allowance,
        budget: None,
        keeping,
        policy: Some(Rc::new(RetryPolicy::default())),
        max_wait_ms: None,
        max_waiting: None,
        reports_wait: false,
        typed_errors: false,
        spread: None,
    }
}

//! What the learning gates of one credential share across a fleet through their store: the
//! first limiter the credential's answers named, the limiter each route draws from, and
//! each gate's estimate. A gate made later, in any process, starts from there (`sharing.rs`).

use crate::core::rules::allowance::Rate;

/// One fact the learning gates of a credential share.
#[derive(Debug, Clone, PartialEq)]
pub enum Shared {
    /// The first limiter the credential's answers named.
    First(String),
    /// A route, and the limiter it draws from.
    Route(String, String),
    /// A gate's scope, and the allowance it learned.
    Estimate(String, Rate),
}

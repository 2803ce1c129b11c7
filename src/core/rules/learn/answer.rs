//! One answer as learning takes it ([`Sample`]), and what it taught the gate ([`Lesson`]).

use crate::core::rules::allowance::Rate;
use crate::core::rules::bucket::Count;
use crate::core::Millis;

/// One answer, as learning needs it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// When its request went out.
    pub sent: Millis,
    /// Its status.
    pub status: u16,
    /// `X-RateLimit-Limit` and `-Remaining`, when both came.
    pub counts: Option<(u64, u64)>,
    /// Its request's number among every request the allowance admitted.
    pub seq: f64,
    /// The gate's requests still out when it went: numbered before it, they may reach the
    /// server after it.
    pub ahead: f64,
    /// The highest number the gate had admitted when the answer came: requests numbered above
    /// this one, up to that, may have reached the server before it.
    pub heard: f64,
    /// The gate's requests numbered before this one still out when its answer came: they
    /// may reach the server after it, so its count has not taken them off yet.
    pub behind: f64,
    /// Calls were waiting for a token (a full server bucket then means the pace is too slow).
    pub backlogged: bool,
}

/// What an answer taught: the allowance to follow, and the server's count of tokens as of the
/// answered request (the authority takes off the requests admitted after it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Lesson {
    /// The allowance admissions follow from now.
    pub rate: Rate,
    /// Tokens the server held when it answered (at most that many under a ceiling: learning
    /// never spends faster than the ceiling allows).
    pub tokens: Option<Count>,
}

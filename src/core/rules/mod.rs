//! What the gate decides: allowances, the token bucket, backoff, budgets, classification,
//! the retry policy, the quota and its spread over the month (and what calls cost where it is
//! shared), what is cached, learning,
//! refresh rounds, runs of failures, the fair order of lanes, the ranges of the options, and
//! what an option given as a flag means.

pub mod allowance;
pub mod arena;
pub mod backoff;
pub mod batch;
pub mod bucket;
pub mod budget;
pub mod cache;
pub mod cache_flow;
pub mod cache_request;
pub mod classify;
pub mod credits;
pub(crate) mod fair;
pub mod learn;
pub mod policy;
pub mod quota;
pub mod ranges;
pub mod routes;
pub(crate) mod scale;
pub mod shared_cache;
pub(crate) mod spending;
pub(crate) mod streak;
pub mod toggle;

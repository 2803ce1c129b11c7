//! The spread (#37): a key's quota paced to the end of its billing period, so a busy key spends
//! its month evenly instead of running dry on day 10. A [`CreditBucket`] refills at what is left
//! of the spread over what is left of the period, and every `/usage` reading recomputes it from
//! the server's `used` (what others spent counts). [`Costs`] says what a call costs in credits:
//! stated per route (`quota.costs`), or learned from the readings' deltas.
//!
//! Three ideas, a file each: the settings ([`Spread`], read from `quota` as [`SpreadGiven`]),
//! the bucket ([`CreditBucket`]) and the costs ([`Costs`]).

mod bucket;
mod costs;
mod settings;

pub use self::bucket::CreditBucket;
pub use self::costs::Costs;
pub use self::settings::{Spread, SpreadGiven, CREDIT_WAIT_MS, MIN_REFRESH_MS};

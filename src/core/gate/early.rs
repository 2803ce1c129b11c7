//! How early a timer may fire: the one tolerance every wake-up of the gates allows for.

use crate::core::base::protocol;
use crate::core::Millis;

/// Timers fire on whole milliseconds and may run up to one early: a time due within this much
/// is due now. So is a token due that soon, which spares a second wake-up a moment later.
pub const EARLY_MS: Millis = protocol::EARLY_MS;

//! What a lane is called in `stats()`, `describe()`, the metrics' `odds_gate.lane` attribute and
//! the simulator's reports: the name its maker gave, or one the gates' lane number gives.

use crate::core::gate::queue::Lane;
use crate::core::rules::allowance::ConfigError;
use crate::core::rules::fair::LaneId;

/// The longest name, in characters: a name is a metrics attribute, kept short.
pub(crate) const MAX_CHARS: usize = 64;

/// The name of every wrapper's own calls (lane 0, which they share).
pub(crate) const DEFAULT: &str = "default";

/// Accepts a name of 1 to `MAX_CHARS` characters; names `field` otherwise (with the length
/// given).
pub(crate) fn check(field: &'static str, name: &str) -> Result<(), ConfigError> {
    let chars = name.chars().count();
    match (1..=MAX_CHARS).contains(&chars) {
        true => Ok(()),
        false => Err(ConfigError::OutOfRange {
            field,
            expected: "1 to 64 characters long",
            got: chars as f64,
        }),
    }
}

/// The lane a name stands for wherever gates are shared: its FNV-1a hash with the top bit set,
/// apart from the numbers unnamed lanes get in the order they are made.
pub(crate) fn id(name: &str) -> LaneId {
    let hash = name.bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    hash | 0x8000_0000
}

/// The name of a lane not given one: [`DEFAULT`] for lane 0, else `lane-<n>` with the lane's
/// number among the gates' lanes (1, 2, ... as they were made), so that two unnamed lanes never
/// share a name, and with it a metrics series.
pub(crate) fn unnamed(lane: Lane) -> String {
    match lane.id {
        0 => DEFAULT.to_owned(),
        n => format!("lane-{n}"),
    }
}

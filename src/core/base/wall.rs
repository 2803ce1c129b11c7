//! Wall times (Unix milliseconds) on the monotonic clock the gates use, and back: a time
//! converted lately comes back as exactly the wall time it came from (`period_end_utc` shown as
//! the server said it), not moved by how the two clocks drifted in between.

use std::collections::VecDeque;

use crate::core::Millis;

/// Wall times converted lately are remembered, this many.
const REMEMBERED: usize = 64;

/// The conversions made lately, newest last.
#[derive(Debug, Clone, Default)]
pub struct Walls {
    converted: VecDeque<(Millis, Millis)>,
}

impl Walls {
    /// `wall` on the monotonic clock, which reads `now` while the wall clock reads `wall_now`;
    /// remembered.
    pub fn from_wall(&mut self, wall: Millis, now: Millis, wall_now: Millis) -> Millis {
        let at = now + (wall - wall_now);
        if self.converted.len() == REMEMBERED {
            self.converted.pop_front();
        }
        self.converted.push_back((at, wall));
        at
    }

    /// `at` on the monotonic clock as a wall time: the one it came from when it was converted
    /// lately, else by the clocks' readings now (`clocks`: monotonic, wall; read only then).
    pub fn to_wall(&self, at: Millis, clocks: impl FnOnce() -> (Millis, Millis)) -> Millis {
        let converted = self.converted.iter().rev().find(|(a, _)| *a == at);
        converted.map_or_else(
            || {
                let (now, wall_now) = clocks();
                wall_now + (at - now)
            },
            |&(_, wall)| wall,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_converted_time_comes_back_as_it_was_given_while_remembered() {
        let mut walls = Walls::default();
        let at = walls.from_wall(1_000_000.3, 50.0, 999_000.0);
        assert_eq!(at, 50.0 + (1_000_000.3 - 999_000.0));
        // The clocks drifted: a remembered time still comes back exact.
        assert_eq!(walls.to_wall(at, || (60.0, 999_100.0)), 1_000_000.3);
        assert_eq!(walls.to_wall(70.0, || (60.0, 999_100.0)), 999_110.0);
        for i in 0..REMEMBERED {
            walls.from_wall(2e6 + i as f64, 0.0, 0.0);
        }
        assert_eq!(
            walls.to_wall(at, || (60.0, 999_100.0)),
            999_100.0 + (at - 60.0),
            "forgotten"
        );
    }
}

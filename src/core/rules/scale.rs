//! What calls cost where the spread is shared (#37): threads and a fleet take from one credit
//! bucket, and no one of them knows every route its peers call, so the shared state cannot
//! learn a cost per route as one gate does ([`Costs`](super::credits::Costs)). It learns one
//! number instead: what a credit asked by a call of no stated cost turns out to cost.

use crate::core::base::protocol;

/// Credits asked (at no stated cost) since the last reading below which a reading's delta
/// says too little to learn from: one credit counted twice, or a call in flight as the
/// reading was sent, would move the scale by 10 % or more.
const MIN_ASKED: f64 = protocol::MIN_ASKED;

/// The scale's range: a delta far off what was asked (a reading lost its calls, another key's
/// user spent a burst) paces no call at more than 100 credits, nor at less than a tenth.
const SCALE_RANGE: (f64, f64) = (protocol::SCALE_LOW, protocol::SCALE_HIGH);

/// The scale and what it learns from, in a shared spread.
///
/// Each admission asks its call's cost: stated (`quota.costs`), which is exact and taken as
/// is, or not (1 credit, what the API says most calls cost), which is taken times the scale.
/// Both are counted, apart, from one usable reading to the next. A reading's delta (what the
/// key spent between them, as the bucket counts it) less the stated credits is what the
/// unstated calls cost: over the credits they asked, that is the scale, learned when they
/// asked at least [`MIN_ASKED`], within [`SCALE_RANGE`]. Stated calls are left out because
/// they are known: they neither dilute nor skew it. One scale for every unstated route: a
/// mix of routes gets their average, which paces the key's total right (what the spread
/// needs) though not each route.
///
/// What another key user spends between two readings reads as a dearer call here (the shared
/// state cannot tell them apart); the total is paced the same either way.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct CostScale {
    /// What one credit asked at no stated cost is taken to cost.
    scale: f64,
    /// Credits of stated costs taken since the last usable reading.
    stated: f64,
    /// Credits asked at no stated cost since the last usable reading, unscaled.
    asked: f64,
}

impl Default for CostScale {
    fn default() -> Self {
        CostScale {
            scale: 1.0,
            stated: 0.0,
            asked: 0.0,
        }
    }
}

impl CostScale {
    /// Numbers [`save`](Self::save) writes.
    pub(crate) const WORDS: usize = 3;

    /// The scale as numbers, for a slot shared by threads.
    pub(crate) fn save(&self) -> [f64; Self::WORDS] {
        [self.scale, self.stated, self.asked]
    }

    /// The scale [`save`](Self::save) wrote; a scale of 0 (never saved: a fresh slot's zeros,
    /// below the range) is 1.
    pub(crate) fn load([scale, stated, asked]: [f64; Self::WORDS]) -> CostScale {
        CostScale {
            scale: if scale == 0.0 { 1.0 } else { scale },
            stated,
            asked,
        }
    }

    /// What a call asking `cost` credits takes: `cost` when `stated`, else `cost` times the
    /// scale.
    pub(crate) fn credits(&self, cost: f64, stated: bool) -> f64 {
        if stated {
            cost
        } else {
            cost * self.scale
        }
    }

    /// A call asking `cost` took its credits: it counts for the next reading.
    pub(crate) fn taken(&mut self, cost: f64, stated: bool) {
        if stated {
            self.stated += cost;
        } else {
            self.asked += cost;
        }
    }

    /// Learns from a usable reading's `delta` (`None`: a period's turn, nothing to learn)
    /// and starts counting again. Returns what the calls counted cost, by the scale now.
    pub(crate) fn learn(&mut self, delta: Option<f64>) -> f64 {
        let (stated, asked) = (self.stated, self.asked);
        (self.stated, self.asked) = (0.0, 0.0);
        let Some(delta) = delta else {
            return 0.0;
        };
        if asked >= MIN_ASKED {
            let (low, high) = SCALE_RANGE;
            self.scale = ((delta - stated) / asked).clamp(low, high);
        }
        stated + asked * self.scale
    }

    /// Credits asked at no stated cost since the last usable reading, unscaled.
    pub(crate) fn asked(&self) -> f64 {
        self.asked
    }

    /// What one credit asked at no stated cost is taken to cost.
    pub(crate) fn scale(&self) -> f64 {
        self.scale
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counted(stated: f64, asked: f64) -> CostScale {
        let mut s = CostScale::default();
        s.taken(stated, true);
        s.taken(asked, false);
        s
    }

    #[test]
    fn learns_what_unstated_calls_cost_from_the_delta_less_the_stated() {
        // 20 credits stated, 30 asked at no stated cost; the server counted 170: the 30 cost
        // 150, 5 each.
        let mut s = counted(20.0, 30.0);
        assert_eq!(s.learn(Some(170.0)), 170.0, "by the scale now");
        assert_eq!(s.scale(), 5.0);
        assert_eq!((s.credits(2.0, false), s.credits(2.0, true)), (10.0, 2.0));
        // Counting starts again: a delta with nothing asked learns nothing.
        assert_eq!(s.learn(Some(40.0)), 0.0);
        assert_eq!(s.scale(), 5.0);
    }

    #[test]
    fn too_little_asked_keeps_the_scale_and_a_period_turn_forgets_the_counts() {
        let mut s = counted(0.0, MIN_ASKED - 1.0);
        assert_eq!(s.learn(Some(90.0)), MIN_ASKED - 1.0, "still 1 a credit");
        assert_eq!(s.scale(), 1.0);
        let mut s = counted(5.0, 50.0);
        assert_eq!(s.learn(None), 0.0);
        assert_eq!(s.learn(Some(500.0)), 0.0, "the turn forgot the 50");
        assert_eq!(s.scale(), 1.0);
    }

    #[test]
    fn stays_within_its_range_and_loads_a_fresh_slot_as_one() {
        let (low, high) = SCALE_RANGE;
        let mut s = counted(0.0, 10.0);
        s.learn(Some(1e6));
        assert_eq!(s.scale(), high);
        let mut s = counted(100.0, 10.0);
        s.learn(Some(50.0));
        assert_eq!(s.scale(), low, "stated calls that cost less than stated");
        assert_eq!(CostScale::load(s.save()), s);
        assert_eq!(
            CostScale::load([0.0; CostScale::WORDS]),
            CostScale::default()
        );
    }
}

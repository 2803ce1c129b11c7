//! Learning without (trusted) counts, like TCP: the window that grows each answer, slow start
//! after the first 429, then the climb a step a success, and the pace settled between the bound
//! the 429s prove and the pace of the last one, trying above it now and then.

use super::answer::Sample;
use super::phase::{Phase, FIRST_STEP, HOLD, HOLD_MS, MAX_TRIAL, MIN_STEP, SEARCH_HOLD};
use super::{Learner, BETA, MAX_PACE, MIN_PACE, START_PACE};
use crate::core::rules::classify::took_token;
use crate::core::Millis;

/// A 429 at a pace no more than this over the bound the 429s prove pins the rate between the
/// two: the estimate is confirmed, and the pace holds at the bound.
const CONFIRM: f64 = 1.25;
/// Where a confirmed pace holds between the bound (0) and the pace of the 429 (1): a pace above
/// the true rate drains the bucket and meets a 429 at the next, narrower, pair.
const WITHIN: f64 = 0.5;

impl Learner {
    /// An answer without (trusted) counts.
    pub(super) fn blind(&mut self, now: Millis, s: &Sample, fresh: bool) {
        let took = took_token(s.status);
        if s.status == 429 && !fresh {
            return;
        }
        if took && matches!(self.phase, Phase::Climbing { .. } | Phase::Settled { .. }) {
            // Empty at each 429 kept, holding at least nothing now: the same bound.
            let mark = self.mark(now, 0.0, s);
            self.at_least = self.bound(&mark).max(self.at_least);
        }
        match (self.phase, fresh) {
            (Phase::Opening, false) if took => self.phase = Phase::Window { size: 2.0 },
            (Phase::Window { size }, false) if took => {
                self.phase = Phase::Window { size: size + 1.0 }
            }
            // The counts stopped coming: go on from the pace they led to.
            (Phase::Counted, false) if took => self.phase = Phase::settled(now),
            (Phase::SlowStart { count }, false) if took => {
                let count = count + 1.0;
                self.phase = match count >= self.pace {
                    true => {
                        self.pace = (self.pace * 2.0).min(MAX_PACE);
                        Phase::SlowStart { count: 0.0 }
                    }
                    false => Phase::SlowStart { count },
                };
            }
            (Phase::Climbing { step, wait }, false) if took => {
                self.phase = match wait {
                    0 => {
                        self.pace *= 1.0 + step;
                        Phase::Climbing { step, wait }
                    }
                    _ => Phase::Climbing {
                        step,
                        wait: wait - 1,
                    },
                };
            }
            (
                Phase::Settled {
                    trial,
                    hold,
                    until,
                    held,
                },
                false,
            ) if took => {
                self.pace = self.pace.max(self.at_least);
                let hold = hold.saturating_sub(1);
                self.phase = match hold == 0 && now >= until {
                    true => {
                        // A whole hold without a 429: this pace holds; try above it.
                        let held = self.pace;
                        self.pace *= 1.0 + trial;
                        Phase::Settled {
                            trial: (trial * 2.0).min(MAX_TRIAL),
                            hold: HOLD,
                            until: now + HOLD_MS,
                            held,
                        }
                    }
                    false => Phase::Settled {
                        trial,
                        hold,
                        until,
                        held,
                    },
                };
            }
            (phase, true) => {
                let mark = self.mark(now, 0.0, s);
                let pace = self.rate(now).per_second();
                self.last_throttle = Some(now);
                let quick = std::mem::take(&mut self.since_cut) < SEARCH_HOLD;
                self.quick = if quick { self.quick + 1 } else { 0 };
                let dropped = matches!(phase, Phase::Settled { .. })
                    && (pace <= self.at_least || self.quick >= 2);
                if dropped {
                    // A 429 at the proven bound itself, or soon after the last: the allowance
                    // dropped, or someone else spends the key. The bounds start again from here.
                    self.marks.clear();
                    self.at_least = 0.0;
                }
                self.at_least = self.bound(&mark).max(self.best_bound());
                self.remember(mark);
                let searched = matches!(phase, Phase::Climbing { .. } | Phase::Settled { .. });
                let confirmed = searched && !dropped && pace <= CONFIRM * self.at_least;
                let (pace, next) = match phase {
                    // The 429s pin the rate between the bound and this pace: hold between them, and
                    // no higher than a pace that held a whole hold.
                    _ if confirmed => {
                        let within = self.at_least + (pace - self.at_least) * WITHIN;
                        let held = match phase {
                            Phase::Settled { held, .. } if held > 0.0 => held,
                            _ => f64::INFINITY,
                        };
                        (within.min(held), Phase::settled(now))
                    }
                    // The first 429 ends the window: start again at a pace, doubling.
                    Phase::Opening | Phase::Window { .. } => {
                        (START_PACE, Phase::SlowStart { count: 0.0 })
                    }
                    // Slow start overshot by at most its last doubling.
                    Phase::SlowStart { .. } => (pace / 2.0, Phase::climbing(FIRST_STEP)),
                    Phase::Climbing { step, .. } => {
                        (pace * BETA, Phase::climbing((step / 2.0).max(MIN_STEP)))
                    }
                    Phase::Settled { .. } | Phase::Counted => {
                        (pace * BETA, Phase::climbing(FIRST_STEP))
                    }
                };
                self.pace = pace.max(self.at_least).max(MIN_PACE);
                self.phase = next;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::rules::learn::tests::{sample, Server};

    #[test]
    fn without_counts_the_window_grows_each_answer_until_a_429_then_slow_start() {
        let mut learner = Learner::new(None);
        learner.observe(20.0, &sample(0.0, 200, None, 0.0));
        assert_eq!(learner.window(), Some(2.0));
        learner.observe(40.0, &sample(20.0, 200, None, 1.0));
        learner.observe(40.0, &sample(20.0, 200, None, 2.0));
        assert_eq!(learner.window(), Some(4.0), "doubling each round trip");
        learner.observe(60.0, &sample(40.0, 429, None, 3.0));
        assert_eq!(learner.window(), None);
        assert_eq!(learner.rate(60.0).per_second(), START_PACE);
        assert_eq!(
            learner.rate(9_000.0).per_second(),
            START_PACE,
            "no doubling while nothing went out"
        );
        // A second's worth of successes at each pace doubles it: 1, then 2, then 4 more.
        let mut seq = 4.0;
        for _ in 0..7 {
            learner.observe(9_000.0, &sample(9_000.0, 200, None, seq));
            seq += 1.0;
        }
        assert_eq!(learner.rate(9_000.0).per_second(), 8.0 * START_PACE);
        learner.observe(9_100.0, &sample(9_050.0, 429, None, seq));
        assert_eq!(learner.rate(9_100.0).per_second(), 4.0 * START_PACE);
        // The pace holds a little, then grows a step a success.
        for _ in 0..=SEARCH_HOLD {
            seq += 1.0;
            learner.observe(9_200.0, &sample(9_200.0, 200, None, seq));
        }
        assert_eq!(
            learner.rate(9_200.0).per_second(),
            4.0 * START_PACE * (1.0 + FIRST_STEP)
        );
    }

    /// A sender that always has a call waiting, pacing by the learner, against `server`
    /// without counts: the 429s among the last `tail` of `requests`, and how fast those took
    /// tokens (per second).
    fn backlogged(server: &mut Server, requests: u32, tail: u32) -> (u32, f64) {
        let mut learner = Learner::new(None);
        learner.observe(0.0, &sample(0.0, 200, None, 0.0));
        learner.observe(10.0, &sample(10.0, 429, None, 1.0));
        let (mut now, mut throttled, mut from) = (10.0, 0, 0.0);
        for seq in 2..requests {
            now += 1000.0 / learner.rate(now).per_second();
            let (status, _) = server.take(now);
            if seq == requests - tail {
                from = now;
            }
            if status == 429 && seq >= requests - tail {
                throttled += 1;
            }
            learner.observe(now, &sample(now, status, None, f64::from(seq)));
        }
        (
            throttled,
            f64::from(tail - throttled) / ((now - from) / 1000.0),
        )
    }

    #[test]
    fn without_counts_a_confirmed_rate_holds_and_probes_rarely() {
        for (burst, per_second) in [(10.0, 5.0), (2.0, 2.0), (1.0, 0.5), (50.0, 20.0)] {
            let (throttled, rate) = backlogged(&mut Server::new(burst, per_second), 3_000, 2_000);
            let ratio = rate / per_second;
            // Measured: 5-15 429s in 2,000 (at most 0.75 %), 0.92-1.00 x the true rate (0.92 for
            // a bucket of one, whose bounds are the loosest).
            assert!(
                throttled <= 17,
                "{throttled} 429s at {burst} @ {per_second}/s"
            );
            assert!(
                (0.9..=1.01).contains(&ratio),
                "{ratio} x at {burst} @ {per_second}/s"
            );
        }
    }

    #[test]
    fn answers_out_when_a_429_came_do_not_weaken_its_bound() {
        let mut learner = Learner::new(None);
        learner.observe(0.0, &sample(0.0, 200, None, 0.0));
        // Requests 1-3 went together; 1 is a 429, and 2 and 3 were out when it came.
        let at_429 = Sample {
            heard: 3.0,
            ..sample(10.0, 429, None, 1.0)
        };
        learner.observe(20.0, &at_429);
        learner.observe(21.0, &sample(10.0, 429, None, 2.0));
        learner.observe(22.0, &sample(10.0, 429, None, 3.0));
        // Then four successes a second apart, then a 429: four taken after the first 429.
        for (i, seq) in (4..8).enumerate() {
            let at = 1_000.0 * (i as f64 + 1.0);
            learner.observe(at, &sample(at, 200, None, f64::from(seq)));
        }
        learner.observe(5_000.0, &sample(5_000.0, 429, None, 8.0));
        // (4 taken - 1) over the 4.99 s from the first 429's sending: 2 and 3 are not counted
        // as untaken between them (they were numbered before what its answer had seen).
        let bound = learner.estimate(5_000.0).at_least;
        assert!((bound - 3.0 / 4.99).abs() < 1e-9, "{bound}");
    }

    #[test]
    fn one_overshoot_is_cut_once() {
        let mut learner = Learner::new(None);
        learner.observe(0.0, &sample(0.0, 200, None, 0.0));
        learner.observe(2_000.0, &sample(2_000.0, 429, None, 1.0));
        learner.observe(5_000.0, &sample(5_000.0, 429, None, 2.0));
        let pace = learner.rate(5_000.0).per_second();
        // Sent before that 429 came back: the same overshoot.
        learner.observe(5_010.0, &sample(4_990.0, 429, None, 3.0));
        assert_eq!(learner.rate(5_010.0).per_second(), pace);
        learner.observe(5_500.0, &sample(5_400.0, 429, None, 4.0));
        assert_eq!(
            learner.rate(5_500.0).per_second(),
            (pace * BETA).max(MIN_PACE)
        );
        assert_eq!(learner.estimate(5_500.0).last_throttle, Some(5_500.0));
    }
}

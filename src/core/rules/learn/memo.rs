//! What a learner leaves behind when its gate is forgotten, so the gate made anew for a key
//! that returns goes on from its estimate instead of from the opening: 40 bytes, where the
//! learner itself, with its marks, is several hundred.

use super::{Learner, Phase};
use crate::core::Millis;

/// A forgotten learner's estimate (see [`Learner::memo`] and [`Learner::resume`]).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Memo {
    /// The pace, per second (a window's requests in flight pace it when `window` is set).
    pace: f64,
    /// Requests in flight allowed (no counts, no 429 yet), or 0 once paced. Whole numbers
    /// below 2^24, exact in an `f32`.
    window: f32,
    /// The capacity the counts gave, or 0 when none did (whole, at most `MAX_BURST`).
    burst: f32,
    /// The bound on the rate the answers had proven (the estimate's `atLeast`).
    at_least: f32,
    /// The answers carry trusted counts.
    counted: bool,
    /// The counts lied and are ignored.
    distrusted: bool,
    /// The limiter the answers came from, once one named it.
    limiter: Option<Box<str>>,
}

impl Learner {
    /// What to keep of this learning when its gate is forgotten: nothing before the first
    /// answer. A slow start keeps the pace it started from, not what the idle seconds since
    /// would have doubled it to.
    pub(crate) fn memo(&self) -> Option<Memo> {
        let (window, counted) = match self.phase {
            Phase::Opening => return None,
            Phase::Window { size } => (size as f32, false),
            Phase::SlowStart { .. } | Phase::Climbing { .. } | Phase::Settled { .. } => {
                (0.0, false)
            }
            Phase::Counted => (0.0, true),
        };
        Some(Memo {
            pace: self.pace,
            window,
            burst: self.burst.unwrap_or(0.0) as f32,
            at_least: self.at_least as f32,
            counted,
            distrusted: self.distrusted,
            limiter: self.limiter.as_deref().map(Box::from),
        })
    }

    /// Goes on at `now` from `memo`, what this key's forgotten gate had learned, when nothing
    /// was learned here yet (another thread's estimate, adopted already, is fresher). Without
    /// counts it climbs on from the pace by the smallest step, as after `adopt`.
    pub(crate) fn resume(&mut self, now: Millis, memo: &Memo) {
        if !self.opening() {
            return;
        }
        self.phase = match (memo.window, memo.counted) {
            (size, _) if size > 0.0 => Phase::Window {
                size: f64::from(size),
            },
            (_, true) => Phase::Counted,
            _ => Phase::settled(now),
        };
        self.pace = memo.pace;
        self.burst = (memo.burst > 0.0).then_some(f64::from(memo.burst));
        // The bound holds until answers here prove one (two marks), as it would have in the
        // gate kept: its confidence comes back with it.
        self.at_least = f64::from(memo.at_least).min(self.pace);
        self.distrusted = memo.distrusted;
        self.limiter = memo.limiter.as_deref().map(str::to_owned);
        // Not news: the key's estimate is what it was.
        self.told = Some(self.estimate(now));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::rules::allowance::Rate;
    use crate::core::rules::learn::Sample;

    fn answer(sent: Millis, status: u16, counts: Option<(u64, u64)>, seq: f64) -> Sample {
        Sample {
            sent,
            status,
            counts,
            seq,
            ahead: 0.0,
            heard: seq,
            behind: 0.0,
            backlogged: false,
        }
    }

    /// A learner taken through `answers`, and the same learning resumed in a new learner.
    fn round_trip(ceiling: Option<Rate>, answers: &[Sample]) -> (Learner, Learner) {
        let mut learner = Learner::new(ceiling);
        let mut now = 0.0;
        for a in answers {
            now = a.sent + 20.0;
            learner.observe(now, a);
        }
        let mut again = Learner::new(ceiling);
        again.resume(now, &learner.memo().expect("learned something"));
        (learner, again)
    }

    #[test]
    fn a_memo_is_forty_bytes() {
        assert_eq!(std::mem::size_of::<Memo>(), 40);
    }

    #[test]
    fn nothing_is_kept_before_the_first_answer() {
        assert_eq!(Learner::new(None).memo(), None);
    }

    #[test]
    fn a_counted_estimate_comes_back_as_it_was() {
        let answers: Vec<Sample> = (0..20)
            .map(|i| answer(f64::from(i) * 100.0, 200, Some((10, 9)), f64::from(i)))
            .collect();
        let (learned, again) = round_trip(None, &answers);
        let now = 2_000.0;
        assert_eq!(again.rate(now), learned.rate(now));
        assert_eq!(again.estimate(now).burst, Some(10.0));
        assert_eq!(again.phase, Phase::Counted);
        // Resumed is not news.
        assert_eq!(again.clone().news(now), None);
        // The proven bound comes back too, and holds through the next answer (one mark
        // proves nothing yet): the confidence is what it was, not 0.
        let confidence = learned.estimate(now).confidence;
        assert!(confidence > 0.9, "{confidence}");
        assert_eq!(again.estimate(now).confidence, confidence as f32 as f64);
        let mut again = again;
        again.observe(now + 100.0, &answer(now + 80.0, 200, Some((10, 9)), 0.0));
        assert_eq!(again.estimate(now).confidence, confidence as f32 as f64);
    }

    #[test]
    fn a_window_stays_a_window_and_a_limiter_stays_named() {
        let mut learner = Learner::new(None);
        learner.owns(Some("snapshot"));
        for i in 0..3 {
            learner.observe(10.0, &answer(0.0, 200, None, f64::from(i)));
        }
        let mut again = Learner::new(None);
        again.resume(10.0, &learner.memo().unwrap());
        assert_eq!(again.window(), learner.window());
        assert_eq!(again.window(), Some(4.0));
        assert_eq!(again.limiter(), Some("snapshot"));
        assert!(
            !again.owns(Some("events")),
            "the first limiter named stays its"
        );
    }

    #[test]
    fn a_slow_start_keeps_its_pace() {
        // The first 429 after a window: slow start from one a second, then two successes.
        let (learned, again) = round_trip(
            None,
            &[
                answer(0.0, 200, None, 0.0),
                answer(30.0, 429, None, 1.0),
                answer(1_030.0, 200, None, 2.0),
            ],
        );
        let late = 60_000.0;
        assert_eq!(
            learned.rate(late).per_second(),
            2.0,
            "no doubling while idle"
        );
        assert_eq!(again.rate(late).per_second(), 2.0);
    }

    #[test]
    fn distrusted_counts_stay_distrusted_and_a_ceiling_still_holds() {
        let ceiling = Rate::new(2.0, 0.5).unwrap();
        let mut answers = vec![answer(0.0, 200, Some((100, 99)), 0.0)];
        // 429s while the counts claim room: distrusted.
        answers.extend(
            (1..4).map(|i| answer(f64::from(i) * 100.0, 429, Some((100, 90)), f64::from(i))),
        );
        let (learned, again) = round_trip(Some(ceiling), &answers);
        assert!(learned.distrusts_counts());
        assert!(again.distrusts_counts());
        assert!(again.rate(1_000.0).per_second() <= 0.5);
        assert!(again.rate(1_000.0).burst() <= 2.0);
    }

    #[test]
    fn a_learner_that_learned_already_keeps_its_own() {
        let (learned, _) = round_trip(None, &[answer(0.0, 200, Some((10, 9)), 0.0)]);
        let mut window = Learner::new(None);
        window.observe(10.0, &answer(0.0, 200, None, 0.0));
        let before = window.rate(10.0);
        window.resume(10.0, &learned.memo().unwrap());
        assert_eq!(window.rate(10.0), before);
    }
}

//! Learning a key's allowance from the API itself, for a gate nobody told the allowance.
//!
//! What an answer can say, and what each is worth:
//! - Only an answer that took a token (a 2xx or 3xx: `took_token`) can raise the estimate.
//!   A 429 says the server's bucket was empty; a 404 of a missing event, a 5xx, take nothing
//!   and teach nothing but the counts they carry.
//! - `X-RateLimit-Limit` is the bucket's capacity: it becomes the burst. A `Remaining` above it
//!   is clamped to it; a 429's `Remaining` is no count at all (the bucket was empty).
//! - `X-RateLimit-Remaining` bounds the refill rate from below: between two answers `i` and
//!   `j`, the server's tokens went from at most `remaining_i + 1` to at least `remaining_j`
//!   while the requests admitted between them (every spender's, by the allowance's request
//!   numbers, less those known to have taken nothing) took one each, so `rate >= (remaining_j -
//!   remaining_i - 1 + taken) / dt`. A full bucket in between only makes the true rate higher.
//!   Requests do not reach the server in the order they were numbered, so `j` counts only
//!   when it went after `i`'s answer came, `taken` only the requests surely taken between,
//!   and `dt` is the longest the two can lie apart (from `i`'s sending to `j`'s answer).
//!   The best bound over the last `HORIZON_MS` is the estimate, so a bound proven before the
//!   allowance dropped expires.
//! - The remaining count also says how many tokens are there: the gate's bucket is set to it,
//!   less the requests admitted after the one it answered (the authority knows those).
//! - Counts that keep claiming room while 429s come (a monthly quota's, or a stuck number) are
//!   distrusted for good after `DOUBTS` contradictions: the gate learns as without them.
//! - Without counts, like TCP: after the first answer the requests in flight grow by one per
//!   answer that took a token (so they double each round trip) and nothing else paces them, so
//!   a server that never limits is not slowed. The first 429 ends that: the pace starts again
//!   at one per second and doubles each second until the next 429 (slow start), which halves
//!   it; from then on each 429 cuts it to `BETA` (CUBIC's factor) and each success raises it a
//!   step, never below the bound the successes between 429s prove. A 429 that names the limit
//!   gives the burst.
//!
//! Before any answer, one request at a time, for every spender of the allowance: the opening
//! allowance is one token, the next a long while later. A configured allowance stays a
//! ceiling: learning only goes below it.
//!
//! Here: the [`Learner`] itself, what it says (the allowance, the estimate), and how answers and
//! other spenders' estimates reach it. Its parts each have a file under `learn/`: the phases, the
//! marks, one answer and what it taught, the estimate; learning from trusted counts, learning
//! without them, and the bounds the marks prove; and the memo a forgotten gate leaves.

mod answer;
mod blind;
mod bounds;
mod counted;
mod estimate;
mod marks;
pub(crate) mod memo;
mod phase;

pub use self::answer::Sample;
pub use self::estimate::Estimate;

use std::collections::VecDeque;

use self::answer::Lesson;
use self::marks::{Mark, Untaken};
use self::phase::Phase;
use crate::core::rules::allowance::{Rate, MIN_PER_SECOND};
use crate::core::rules::bucket::Count;
use crate::core::rules::classify::took_token;
use crate::core::rules::routes::OVERFLOW;
use crate::core::Millis;

/// What a 429 leaves of the pace without the counts (with them, of a pace above the bound):
/// a multiplicative decrease, as in CUBIC.
pub(crate) const BETA: f64 = 0.7;
/// A learning gate predicts admissions as if its allowance were this many times the pace it
/// found: learning may find more, and a call refused for a deadline it could have met is a
/// call lost.
const HOPE: f64 = 2.0;
/// The slowest pace learning goes down to, per second: one request a minute.
pub const MIN_PACE: f64 = 1.0 / 60.0;
/// The pace a learning gate starts from once it knows the answers' kind, per second.
const START_PACE: f64 = 1.0;
/// Until the first answer, the allowance's one token refills this slowly (per second): the
/// first answer normally comes first, whoever else spends the allowance, and a first request
/// that hangs holds the key no longer than this (not for its attempt's whole time limit).
const OPENING_PACE: f64 = 1.0;
/// A pace that does not limit (the requests in flight do), per second: a token a microsecond,
/// past what any loopback server answers (a window's pace of a thousand held a server that
/// never limits to a thousand calls a second).
const UNPACED: f64 = 1_000_000.0;
/// The fastest pace learning goes up to, per second: an allowance another thread or process
/// says it learned beyond it (or beyond [`MAX_BURST`]) is garbage (a stored `1e300`), not a pace.
pub(crate) const MAX_PACE: f64 = 10_000.0;
/// The largest burst learning takes from a count.
pub(crate) const MAX_BURST: f64 = 1_000_000.0;
/// How long a bound holds: marks older than this no longer count.
pub(crate) const HORIZON_MS: Millis = 30_000.0;

/// One gate's learning.
#[derive(Debug, Clone)]
pub struct Learner {
    ceiling: Option<Rate>,
    phase: Phase,
    burst: Option<f64>,
    pace: f64,
    at_least: f64,
    marks: VecDeque<Mark>,
    /// Answers that took no token so far.
    untaken: f64,
    /// The latest of them, by number.
    untaken_seqs: Untaken,
    /// Answers that took a token since the last 429 that cut the pace.
    since_cut: u32,
    /// 429s in a row that came within [`SEARCH_HOLD`] successes of the one before.
    ///
    /// [`SEARCH_HOLD`]: phase::SEARCH_HOLD
    quick: u32,
    last_throttle: Option<Millis>,
    /// The limiter whose answers these are (`X-RateLimit-Bucket`), once one named it.
    limiter: Option<String>,
    /// What the latest trusted count said: tokens left as of the request numbered `.1`.
    claim: Option<(f64, f64)>,
    /// Until two counts agree, they release no more requests in flight than this window
    /// (one more per success), however many tokens they claim.
    unconfirmed: Option<f64>,
    /// 429s that came while the counts claimed room (a second one distrusts them).
    doubts: u32,
    /// The counts lied too often: they are ignored from now on.
    distrusted: bool,
    /// A round trip, smoothed (ms).
    rtt: Option<Millis>,
    /// The latest request whose trusted count the gate heard: when it was sent, its number.
    counted_sent: Option<(Millis, f64)>,
    /// The estimate last reported (see [`news`](Self::news)).
    told: Option<Estimate>,
}

impl Learner {
    /// Learning from nothing, below `ceiling` if one was configured.
    pub(crate) fn new(ceiling: Option<Rate>) -> Learner {
        Learner {
            ceiling,
            phase: Phase::Opening,
            burst: None,
            pace: OPENING_PACE,
            at_least: 0.0,
            marks: VecDeque::new(),
            untaken: 0.0,
            untaken_seqs: Untaken::default(),
            since_cut: 0,
            quick: 0,
            last_throttle: None,
            limiter: None,
            claim: None,
            unconfirmed: None,
            doubts: 0,
            distrusted: false,
            rtt: None,
            counted_sent: None,
            told: None,
        }
    }

    /// The limiter this gate's answers came from, once one named it.
    pub(crate) fn limiter(&self) -> Option<&str> {
        self.limiter.as_deref()
    }

    /// Whether an answer from limiter `named` is this gate's to learn from: the first limiter
    /// named is the gate's; an answer from another belongs to that limiter's gate, unless
    /// this gate is the one the limiters past the cap share ([`OVERFLOW`]).
    pub(crate) fn owns(&mut self, named: Option<&str>) -> bool {
        match (named, &self.limiter) {
            (None, _) => true,
            (Some(name), None) => {
                self.limiter = Some(name.to_owned());
                true
            }
            (Some(name), Some(mine)) => name == mine || mine == OVERFLOW,
        }
    }

    /// Whether `rate` is an allowance learning could have come to.
    pub(crate) fn plausible(rate: Rate) -> bool {
        rate.per_second() <= MAX_PACE && rate.burst() <= MAX_BURST
    }

    /// Learning that goes on from `rate`, what another spender of the allowance has learned
    /// (ignored when no learning could have come to it).
    pub(crate) fn adopt(&mut self, rate: Rate) {
        if !Learner::plausible(rate) {
            return;
        }
        self.pace = rate.per_second();
        // (No clock here: the first hold is counted in successes only.)
        self.phase = Phase::settled(f64::NEG_INFINITY);
        self.burst = (rate.burst() > 1.0).then_some(rate.burst());
    }

    /// Learning goes on from `shared`, what another thread spending the allowance set, so
    /// the threads follow one estimate. An opening's or a window's allowance says nothing of
    /// the pace.
    pub(crate) fn follow(&mut self, shared: Rate) {
        let opening = shared.burst() == 1.0 && shared.per_second() == self.opening_pace();
        if opening || shared.per_second() >= UNPACED || !Learner::plausible(shared) {
            return;
        }
        match self.phase {
            Phase::Counted | Phase::Climbing { .. } | Phase::Settled { .. } => {
                self.pace = shared.per_second();
                if shared.burst() > 1.0 {
                    self.burst = Some(shared.burst());
                }
            }
            _ => self.adopt(shared),
        }
    }

    /// How fast the opening's one token refills: slowly, so the first answer normally comes
    /// first whoever else spends the allowance; under a ceiling, at the ceiling's own pace,
    /// which the gate holds to anyway (an attempt that took no token gives none back there).
    fn opening_pace(&self) -> f64 {
        self.ceiling.map_or(OPENING_PACE, |c| c.per_second())
    }

    /// The configured allowance learning stays under, if any.
    pub(crate) fn ceiling(&self) -> Option<Rate> {
        self.ceiling
    }

    /// Whether no answer has come yet (one request in flight at a time).
    pub(crate) fn opening(&self) -> bool {
        self.phase == Phase::Opening
    }

    /// How many requests may be in flight at once, when that is what paces admissions
    /// (without counts, before the first 429; before the first answer the opening's slow token
    /// does, so a request that hangs does not hold the key).
    pub(crate) fn window(&self) -> Option<f64> {
        match self.phase {
            Phase::Window { size } => Some(size),
            Phase::Counted => self.unconfirmed,
            _ => None,
        }
    }

    /// How soon a wait of `wait` ms at the pace followed now could be over if learning
    /// finds more: as fast as slow start could double, or at [`HOPE`] times a pace already
    /// found; `None` before there is a pace (one at a time, or a window), when nothing can
    /// be said.
    pub(crate) fn soonest(&self, wait: Millis) -> Option<Millis> {
        let pace = self.pace;
        match self.phase {
            Phase::Opening | Phase::Window { .. } => None,
            _ if self.unconfirmed.is_some() => None,
            // Doubling each second's worth: the calls a wait of `wait` holds (`wait` × pace)
            // go within log2(1 + calls × ln 2 / pace) seconds.
            Phase::SlowStart { .. } => {
                let calls = wait / 1000.0 * pace;
                Some(1000.0 * (1.0 + calls * std::f64::consts::LN_2 / pace).log2())
            }
            _ => Some(wait / HOPE),
        }
    }

    /// Whether the counts were distrusted.
    pub fn distrusts_counts(&self) -> bool {
        self.distrusted
    }

    /// The allowance admissions follow at `now` (the pace grows between 429s by itself).
    // Never inlined: asked from a dozen places, each with its own copy (5 KB of wasm).
    #[inline(never)]
    pub(crate) fn rate(&self, now: Millis) -> Rate {
        let (burst, pace) = match self.phase {
            Phase::Opening => (1.0, self.opening_pace()),
            Phase::Window { size } => (size, UNPACED),
            _ => (self.burst.unwrap_or(1.0), self.pace_at(now).min(MAX_PACE)),
        };
        let (burst, pace) = match self.ceiling {
            Some(c) => (burst.min(c.burst()), pace.min(c.per_second())),
            None => (burst, pace),
        };
        let burst = burst.min(MAX_BURST);
        Rate::new(burst.max(1.0), pace.max(MIN_PER_SECOND)).unwrap_or(Rate::ARTICLE)
    }

    /// The pace once paced; before, the pace to start from.
    fn pace_at(&self, _now: Millis) -> f64 {
        match self.phase {
            Phase::Opening | Phase::Window { .. } => START_PACE,
            _ => self.pace,
        }
    }

    /// What was learned so far, at `now`.
    pub(crate) fn estimate(&self, now: Millis) -> Estimate {
        let per_second = self.rate(now).per_second();
        Estimate {
            burst: self.burst,
            per_second,
            at_least: self.at_least,
            confidence: (self.at_least / per_second).min(1.0),
            last_throttle: self.last_throttle,
        }
    }

    /// The estimate at `now` when it differs from the one reported last (see
    /// [`Estimate::differs`]), which it becomes: a pace that creeps up a step per answer is
    /// news once it has moved a tenth.
    // Never inlined: one copy for its callers (smaller gzipped).
    #[inline(never)]
    pub(crate) fn news(&mut self, now: Millis) -> Option<Estimate> {
        let estimate = self.estimate(now);
        let news = self.told.is_none_or(|told| estimate.differs(&told));
        news.then(|| {
            self.told = Some(estimate);
            estimate
        })
    }

    /// Learns from an answer at `now`. A 429 to a request sent before the last 429 came is the
    /// same overshoot, already answered: it cuts nothing more.
    pub(crate) fn observe(&mut self, now: Millis, s: &Sample) -> Lesson {
        let took = took_token(s.status);
        let throttled = s.status == 429;
        let fresh = throttled && self.last_throttle.is_none_or(|at| s.sent > at);
        let rtt = now - s.sent;
        self.rtt = Some(self.rtt.map_or(rtt, |r| 0.8 * r + 0.2 * rtt));
        if took {
            self.since_cut = self.since_cut.saturating_add(1);
        } else {
            self.untaken += 1.0;
            self.untaken_seqs.push(s.seq);
        }
        self.expire(now);
        if self.phase == Phase::Opening && !took && !throttled {
            // Nothing was taken: the opening's one token is back for the next request.
            return Lesson {
                rate: self.rate(now),
                tokens: self.opening_token(),
            };
        }
        let counts = s
            .counts
            .filter(|_| !self.distrusted)
            .map(|(limit, remaining)| {
                let limit = (limit as f64).min(MAX_BURST);
                (limit, (remaining as f64).min(limit))
            });
        let tokens = match counts {
            Some((limit, remaining)) if took => {
                self.counted(now, limit, remaining, s);
                Some((remaining - s.behind).max(0.0))
            }
            Some((limit, _)) if throttled => {
                self.burst = Some(limit.max(1.0));
                let doubted = self.distrusted;
                self.contradicted(now, s.seq);
                if self.distrusted {
                    // The 429 that distrusted them starts the slow start; later ones teach.
                    if doubted {
                        self.blind(now, s, fresh);
                    }
                    None
                } else {
                    match self.phase {
                        Phase::Counted => self.counted_throttle(now, s, fresh),
                        _ => self.blind(now, s, fresh),
                    }
                    Some(0.0)
                }
            }
            // An answer that took no token: its count says at most what is there.
            Some((_, remaining)) => {
                return Lesson {
                    rate: self.rate(now),
                    tokens: Some(Count::AtMost(remaining)),
                }
            }
            None => {
                self.blind(now, s, fresh);
                None
            }
        };
        Lesson {
            rate: self.rate(now),
            tokens: tokens.map(|n| self.count(n)),
        }
    }

    /// The opening's one token, back after an attempt that took none (no answer, or one that
    /// took no token); none under a ceiling, whose own pace the opening follows.
    pub(crate) fn opening_token(&self) -> Option<Count> {
        self.ceiling.is_none().then_some(Count::Exactly(1.0))
    }

    /// `n` tokens the server holds, as the gate's bucket takes them: exactly, or at most that
    /// many under a ceiling (learning never spends faster than the ceiling allows).
    fn count(&self, n: f64) -> Count {
        match self.ceiling {
            Some(_) => Count::AtMost(n),
            None => Count::Exactly(n),
        }
    }

    /// Learns at `now` from an answer to a request another gate admitted (a route's scout
    /// that turned out to draw from this limiter): the kind of feedback and the capacity, not a
    /// count to set this gate's own requests against. Only before this gate's first answer.
    pub(crate) fn hear(&mut self, now: Millis, s: &Sample) -> Option<Rate> {
        if !self.opening() {
            return None;
        }
        self.observe(now, s);
        self.marks.clear();
        self.claim = None;
        self.at_least = 0.0;
        Some(self.rate(now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server bucket of `burst` at `per_second`, full at 0, that our requests alone spend.
    pub(super) struct Server {
        tokens: f64,
        last: Millis,
        burst: f64,
        per_second: f64,
    }

    impl Server {
        pub(super) fn new(burst: f64, per_second: f64) -> Server {
            Server {
                tokens: burst,
                last: 0.0,
                burst,
                per_second,
            }
        }

        /// Takes a token at `now`: the status and what is left.
        pub(super) fn take(&mut self, now: Millis) -> (u16, u64) {
            self.tokens =
                (self.tokens + (now - self.last) / 1000.0 * self.per_second).min(self.burst);
            self.last = now;
            if self.tokens >= 1.0 {
                self.tokens -= 1.0;
                (200, self.tokens.floor() as u64)
            } else {
                (429, 0)
            }
        }
    }

    pub(super) fn sample(now: Millis, status: u16, counts: Option<(u64, u64)>, seq: f64) -> Sample {
        Sample {
            sent: now,
            status,
            counts,
            seq,
            ahead: 0.0,
            heard: seq,
            behind: 0.0,
            backlogged: true,
        }
    }

    #[test]
    fn the_bound_never_passes_the_true_rate() {
        // Requests at uneven times, some bunched, some after the bucket filled again.
        for (burst, per_second) in [(5.0, 10.0), (2.0, 2.0), (20.0, 5.0), (1.0, 0.5)] {
            let mut server = Server::new(burst, per_second);
            let mut learner = Learner::new(None);
            let mut now = 0.0;
            for i in 0..500u32 {
                now += f64::from((i * 7919) % 613);
                let (status, left) = server.take(now);
                let counts = Some((burst as u64, left));
                learner.observe(now, &sample(now, status, counts, f64::from(i)));
                let bound = learner.estimate(now).at_least;
                assert!(bound <= per_second, "{bound} > {per_second} at {now}");
            }
        }
    }

    #[test]
    fn the_bound_holds_when_requests_reach_the_server_out_of_their_order() {
        // Waves of requests go out together; each wave reaches the server over the next 200 ms
        // in a shuffled order (connections opening at their own pace), and every answer comes
        // 1 ms after its request arrived. Live, numbering them as if they arrived in order
        // learned 2,800-5,500/s against burst 50 at 20/s.
        for (burst, per_second) in [(50.0, 20.0), (5.0, 10.0), (2.0, 2.0)] {
            let mut server = Server::new(burst, per_second);
            let mut learner = Learner::new(None);
            let (mut seq, mut wave_at) = (0.0, 0.0);
            let mut out = 0.0;
            for wave in 0..20u32 {
                let size = 1 + (wave * 7) % 13;
                let first = seq;
                // (arrival, number, requests of the gate out when it went)
                let mut wave_of: Vec<(Millis, f64, f64)> = (0..size)
                    .map(|k| {
                        let arrival = wave_at + f64::from((k * 7919 + wave * 31) % 200);
                        (arrival, first + f64::from(k), out + f64::from(k))
                    })
                    .collect();
                seq += f64::from(size);
                out += f64::from(size);
                wave_of.sort_by(|a, b| a.0.total_cmp(&b.0));
                for (arrival, number, ahead) in wave_of {
                    let (status, left) = server.take(arrival);
                    let now = arrival + 1.0;
                    let s = Sample {
                        sent: wave_at,
                        ahead,
                        heard: seq - 1.0,
                        ..sample(now, status, Some((burst as u64, left)), number)
                    };
                    learner.observe(now, &s);
                    out -= 1.0;
                    let bound = learner.estimate(now).at_least;
                    assert!(bound <= per_second, "{bound} > {per_second} at {now}");
                }
                wave_at += 250.0;
            }
        }
    }

    #[test]
    fn under_demand_the_bound_closes_on_the_true_rate() {
        for (burst, per_second) in [(5.0, 10.0), (2.0, 2.0), (20.0, 5.0)] {
            let mut server = Server::new(burst, per_second);
            let mut learner = Learner::new(None);
            // A request every token interval for 30 s: the bucket never fills again.
            let step = 1000.0 / per_second;
            let (mut now, mut seq) = (0.0, 0.0);
            while now < 30_000.0 {
                let (status, left) = server.take(now);
                learner.observe(now, &sample(now, status, Some((burst as u64, left)), seq));
                now += step;
                seq += 1.0;
            }
            let bound = learner.estimate(now).at_least;
            assert!(bound > 0.95 * per_second && bound <= per_second, "{bound}");
        }
    }

    #[test]
    fn the_counts_give_the_burst_and_the_tokens_there() {
        let mut learner = Learner::new(None);
        assert!(learner.opening());
        let opening = learner.rate(0.0);
        assert_eq!(
            (opening.burst(), opening.per_second()),
            (1.0, OPENING_PACE),
            "one a second until an answer"
        );
        let lesson = learner.observe(10.0, &sample(0.0, 200, Some((5, 4)), 0.0));
        assert!(!learner.opening());
        assert_eq!(lesson.rate.burst(), 5.0);
        // Four left when it answered request 0 (the authority takes off those after it).
        assert_eq!(lesson.tokens, Some(Count::Exactly(4.0)));
        assert_eq!(lesson.rate.per_second(), START_PACE);
    }

    #[test]
    fn only_answers_that_took_a_token_raise_the_estimate() {
        let mut learner = Learner::new(None);
        // Sixteen 404s carrying the bucket's count: nothing taken, nothing learned, and the
        // opening's one token is back each time.
        for i in 0..16 {
            let now = f64::from(i) * 10.0;
            let lesson = learner.observe(now, &sample(now, 404, Some((5, 5)), f64::from(i)));
            assert_eq!(lesson.tokens, Some(Count::Exactly(1.0)));
            assert_eq!(lesson.rate, learner.rate(now), "still the opening's");
        }
        assert!(learner.opening(), "still no answer of the allowance's own");
        assert_eq!(learner.estimate(200.0).at_least, 0.0);
        // Once paced, a 404's count says at most what is there.
        learner.observe(210.0, &sample(200.0, 200, Some((5, 4)), 16.0));
        let lesson = learner.observe(230.0, &sample(220.0, 404, Some((5, 3)), 17.0));
        assert_eq!(lesson.tokens, Some(Count::AtMost(3.0)));
    }

    #[test]
    fn a_429_is_proof_the_bucket_was_empty_and_lying_counts_are_distrusted() {
        // Counts stuck at a small claim: one 429 against them could be another spender's doing.
        let mut learner = Learner::new(None);
        learner.observe(0.0, &sample(0.0, 200, Some((8, 5)), 0.0));
        let lesson = learner.observe(20.0, &sample(10.0, 429, Some((8, 5)), 1.0));
        assert_eq!(lesson.tokens, Some(Count::Exactly(0.0)), "not 5");
        assert!(
            !learner.distrusts_counts(),
            "one small contradiction is not enough"
        );
        learner.observe(40.0, &sample(30.0, 200, Some((8, 5)), 2.0));
        learner.observe(60.0, &sample(50.0, 429, Some((8, 5)), 3.0));
        assert!(learner.distrusts_counts());
        let lesson = learner.observe(80.0, &sample(70.0, 200, Some((8, 5)), 4.0));
        assert_eq!(lesson.tokens, None);

        // A monthly quota's counts: one 429 against a claim of thousands is enough.
        let mut learner = Learner::new(None);
        learner.observe(0.0, &sample(0.0, 200, Some((100_000, 90_000)), 0.0));
        assert_eq!(learner.estimate(0.0).burst, Some(100_000.0));
        learner.observe(20.0, &sample(10.0, 429, Some((100_000, 89_999)), 1.0));
        assert!(learner.distrusts_counts());
        // From then on the counts are ignored: no burst of 100,000.
        let lesson = learner.observe(40.0, &sample(30.0, 200, Some((100_000, 89_998)), 2.0));
        assert_eq!(lesson.tokens, None);
        assert_eq!(lesson.rate.burst(), 1.0);
    }

    #[test]
    fn a_pace_taken_from_another_process_is_not_lowered_by_a_full_bucket() {
        let mut learner = Learner::new(None);
        learner.adopt(Rate::new(5.0, 8.0).unwrap());
        // Its own first answer finds the server's bucket full while calls waited: no bound of
        // its own yet, but the pace it took stays (and may double, up to twice the bound).
        learner.observe(20.0, &sample(0.0, 200, Some((5, 4)), 0.0));
        assert_eq!(learner.rate(20.0).per_second(), 8.0);
    }

    #[test]
    fn a_remaining_above_the_limit_is_clamped() {
        let mut learner = Learner::new(None);
        let lesson = learner.observe(10.0, &sample(0.0, 200, Some((5, 100)), 0.0));
        assert_eq!(lesson.tokens, Some(Count::Exactly(5.0)));
    }

    #[test]
    fn a_ceiling_holds_whatever_is_learned() {
        let ceiling = Rate::new(3.0, 1.0).unwrap();
        let mut learner = Learner::new(Some(ceiling));
        let mut now = 0.0;
        for (i, remaining) in [49, 48, 49, 49, 49].into_iter().enumerate() {
            now += 100.0;
            let lesson = learner.observe(now, &sample(now, 200, Some((50, remaining)), i as f64));
            assert_eq!(lesson.rate.burst(), 3.0);
            assert!(lesson.rate.per_second() <= 1.0);
            // The server's count may lower the gate's, never raise it past the ceiling's pace.
            assert!(matches!(lesson.tokens, Some(Count::AtMost(_))));
        }
        assert!(
            learner.estimate(now).at_least > 1.0,
            "the bound itself is not capped"
        );
    }

    #[test]
    fn a_bound_proven_before_a_drop_expires() {
        let mut learner = Learner::new(None);
        // 10/s for a while, proven by the counts.
        let mut server = Server::new(10.0, 10.0);
        let (mut now, mut seq) = (0.0, 0.0);
        while now < 20_000.0 {
            let (status, left) = server.take(now);
            learner.observe(now, &sample(now, status, Some((10, left)), seq));
            now += 100.0;
            seq += 1.0;
        }
        assert!(learner.estimate(now).at_least > 9.0);
        // Then nothing for longer than the horizon: the bound no longer holds.
        now += HORIZON_MS + 1_000.0;
        learner.observe(now, &sample(now, 200, Some((10, 9)), seq));
        assert_eq!(learner.estimate(now).at_least, 0.0);
    }

    #[test]
    fn when_the_counts_stop_the_pace_they_led_to_stays() {
        let mut learner = Learner::new(None);
        let mut now = 0.0;
        for (i, remaining) in [4, 3, 2, 1, 0, 0, 0].into_iter().enumerate() {
            now += 300.0;
            let s = Sample {
                backlogged: false,
                ..sample(now, 200, Some((5, remaining)), i as f64)
            };
            learner.observe(now, &s);
        }
        let pace = learner.rate(now).per_second();
        learner.observe(now + 300.0, &sample(now + 300.0, 200, None, 7.0));
        assert!(learner.rate(now + 300.0).per_second() >= pace);
        assert!(!learner.opening());
    }
}

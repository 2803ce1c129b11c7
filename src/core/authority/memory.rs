//! The admission authority kept in this process's memory: a token bucket behind a cooldown, the
//! shared retry budget, the quota closure and the shared spread (`credits.rs`). `gate.lua` encodes these same transitions for
//! Redis, line for line; keep the two in step (the parity test will not let them drift).

use crate::core::authority::credits::{Credit, SharedCredits, Spend};
use crate::core::authority::fair::Turn;
use crate::core::authority::{
    AdmissionId, Answer, Immediate, Op, Remaining, Seen, Transitions, LOW_REMAINING,
};
use crate::core::rules::allowance::Rate;
use crate::core::rules::bucket::{Count, TokenBucket};
use crate::core::rules::budget::{RefillingBudget, RefillingConfig};
use crate::core::Millis;

/// One gate's shared state, in memory.
#[derive(Debug, Clone)]
pub struct MemoryAuthority {
    bucket: TokenBucket,
    /// The admission whose response restarts a paused refill.
    anchor: Option<AdmissionId>,
    /// No admission before this time.
    cooldown_until: Millis,
    budget: Option<RefillingBudget>,
    /// Closed for the quota until this time (0: open).
    quota_until: Millis,
    /// Requests admitted so far: the next one's number.
    sent: f64,
    /// The spread, where gates ask for credits with their tokens.
    credits: SharedCredits,
}

impl MemoryAuthority {
    /// A full bucket whose clock starts at `now`, with no cooldown, and the given retry budget.
    pub(crate) fn new(rate: Rate, budget: Option<RefillingConfig>, now: Millis) -> Self {
        MemoryAuthority {
            bucket: TokenBucket::new(rate, now),
            anchor: None,
            cooldown_until: 0.0,
            budget: budget.map(RefillingBudget::new),
            quota_until: 0.0,
            sent: 0.0,
            credits: SharedCredits::default(),
        }
    }

    /// Numbers [`save`](Self::save) writes: the state's 9, then the shared spread's.
    pub(crate) const WORDS: usize = 9 + SharedCredits::WORDS;

    /// The state as numbers, for a slot shared by threads (the rate and the budget's settings
    /// are the gate's, not state). -1 stands for no anchor and for no budget.
    pub fn save(&self) -> [f64; Self::WORDS] {
        let [tokens, last, paused, slow] = self.bucket.save();
        let anchor = self.anchor.map_or(-1.0, |id| id as f64);
        let budget = self.budget_left().unwrap_or(-1.0);
        let (cooldown, quota) = (self.cooldown_until, self.quota_until);
        let mut words = [0.0; Self::WORDS];
        words[..9].copy_from_slice(&[
            tokens, last, paused, slow, anchor, cooldown, budget, quota, self.sent,
        ]);
        words[9..].copy_from_slice(&self.credits.save());
        words
    }

    /// The authority [`save`](Self::save) wrote, for `rate`. A budget saved by a gate without
    /// one's settings is dropped; `budget`'s settings with none saved start full.
    pub(crate) fn load(
        rate: Rate,
        budget: Option<RefillingConfig>,
        words: [f64; Self::WORDS],
    ) -> Self {
        let [tokens, last, paused, slow, anchor, cooldown, left, quota, sent] =
            std::array::from_fn(|i| words[i]);
        let credits = SharedCredits::load(std::array::from_fn(|i| words[9 + i]));
        MemoryAuthority {
            bucket: TokenBucket::load(rate, [tokens, last, paused, slow]),
            anchor: (anchor >= 0.0).then_some(anchor as AdmissionId),
            cooldown_until: cooldown,
            budget: budget.map(|config| match left {
                left if left >= 0.0 => RefillingBudget::holding(config, left),
                _ => RefillingBudget::new(config),
            }),
            quota_until: quota,
            sent,
            credits,
        }
    }

    /// Takes in what `other` knows and did: the tokens it spent are spent here too (each
    /// started from a full bucket of the same allowance), as is its retry budget's spending;
    /// the later cooldown and quota closure hold, and a slow refill. Two threads that kept the
    /// same key apart for a while join their states this way, once each.
    pub(crate) fn absorb(&mut self, now: Millis, other: &mut MemoryAuthority) {
        let spent = self.bucket.rate().burst() - other.bucket.tokens(now);
        let left = self.bucket.tokens(now) - spent.max(0.0);
        self.bucket.at_most(now, left);
        if other.bucket.is_slow() && !self.bucket.is_slow() {
            self.bucket.set_slow(now, true);
        }
        self.cooldown_until = self.cooldown_until.max(other.cooldown_until);
        self.quota_until = self.quota_until.max(other.quota_until);
        if let (Some(mine), Some(theirs)) = (&mut self.budget, &other.budget) {
            let spent = theirs.config().capacity - theirs.available();
            mine.spend(spent.max(0.0).min(mine.available()));
        }
        // Its requests were admitted too: numbers go on from both.
        self.sent += other.sent;
        self.credits.absorb(&other.credits);
    }

    /// The allowance.
    pub fn rate(&self) -> Rate {
        self.bucket.rate()
    }

    /// Follows a learned allowance from `now`, with the server's count of tokens when it gave
    /// one, as of the request numbered `at`: the requests admitted after it come off (see
    /// [`TokenBucket::retune`]).
    // Never inlined: one copy for its five callers (smaller gzipped).
    #[inline(never)]
    pub(crate) fn tune(&mut self, now: Millis, rate: Rate, count: Option<(Count, f64)>) {
        let count = count.map(|(count, at)| {
            let since = (self.sent - at - 1.0).max(0.0);
            match count {
                Count::Exactly(n) => Count::Exactly((n - since).max(0.0)),
                Count::AtMost(n) => Count::AtMost((n - since).max(0.0)),
            }
        });
        if count.is_some() {
            self.anchor = None;
        }
        self.bucket.retune(now, rate, count);
    }

    /// Gives a budget-less gate this budget (a gate never changes a budget it has).
    pub(crate) fn install_budget(&mut self, config: RefillingConfig) {
        if self.budget.is_none() {
            self.budget = Some(RefillingBudget::new(config));
        }
    }

    /// Tokens in the retry budget, if there is one.
    pub(crate) fn budget_left(&self) -> Option<f64> {
        self.budget.as_ref().map(RefillingBudget::available)
    }

    /// No admission before this time (0 when never held).
    pub fn cooldown_until(&self) -> Millis {
        self.cooldown_until
    }

    /// Whether the refill runs at half rate.
    pub fn slow(&self) -> bool {
        self.bucket.is_slow()
    }

    /// The shared spread.
    pub fn shared_credits(&self) -> &SharedCredits {
        &self.credits
    }

    /// The shared spread, to change.
    pub fn shared_credits_mut(&mut self) -> &mut SharedCredits {
        &mut self.credits
    }

    /// Whether nothing here is worth keeping but the retry budget: a full bucket that is not
    /// paused, no cooldown or quota closure left. A gate in this state can be forgotten and
    /// made anew later with no difference to anyone, its budget put back as it was (see
    /// `cap_budget`): a budget refills only with successes, so a gate kept
    /// until it is full again may never go. Nor is a slow refill a reason to keep it: a full
    /// bucket has nothing left to refill, and the answers to its next burst (the same burst
    /// either way) say again whether the key runs low.
    pub(crate) fn idle(&mut self, now: Millis) -> bool {
        self.bucket.tokens(now) >= self.bucket.rate().burst()
            && !self.bucket.is_paused()
            && self.cooldown_until <= now
            && self.quota_until <= now
    }

    /// Leaves at most `left` tokens in the retry budget: what a forgotten gate of the same
    /// scope had left.
    pub(crate) fn cap_budget(&mut self, left: f64) {
        if let Some(budget) = &mut self.budget {
            let over = budget.available() - left;
            if over > 0.0 {
                budget.spend(over);
            }
        }
    }

    /// When the caller with `ahead` others in front of it could be admitted, if nothing else
    /// changed. While the refill is paused this is a lower bound.
    pub fn predict(&mut self, now: Millis, ahead: usize) -> Millis {
        self.cooldown_until
            .max(self.bucket.nth_ready_at(now, ahead))
    }

    /// Whether the head of the queue could have gone by `at` (at most `now`): no cooldown then,
    /// and a token there.
    pub(crate) fn ready_by(&mut self, now: Millis, at: Millis) -> bool {
        self.cooldown_until <= at && self.bucket.had_token_by(now, at)
    }

    /// Milliseconds until a whole token, at least 1, or 0 when one is there (`wait_ms()` in
    /// the script).
    // Never inlined: one copy for its callers (smaller gzipped).
    #[inline(never)]
    fn wait_ms(&mut self, now: Millis) -> Millis {
        match self.bucket.nth_wait(now, 0) {
            0.0 => 0.0,
            wait => wait.max(1.0),
        }
    }

    fn feedback(&mut self, now: Millis, cooldown_ms: Option<Millis>, seen: Option<Remaining>) {
        if let Some(seen) = seen {
            let remaining = seen.remaining as f64;
            // Someone else spends the key when we believe in more tokens than the server can
            // hold now (see `Remaining`).
            let refill = seen.age_ms.max(0.0) / self.bucket.rate().ms_per_token();
            let after = seen
                .heard
                .map_or(0.0, |heard| (self.sent - heard - 1.0).max(0.0));
            let most = (remaining + 1.0 + refill - after).max(0.0);
            let drained = self.bucket.tokens(now) > most;
            if drained {
                self.bucket.at_most(now, most);
            }
            let low = remaining < LOW_REMAINING * seen.limit as f64;
            if low && drained || !low && self.bucket.is_slow() {
                self.bucket.set_slow(now, low);
            }
        }
        if let Some(ms) = cooldown_ms {
            self.cooldown_until = self.cooldown_until.max(now + ms);
        }
    }
}

impl MemoryAuthority {
    /// Applies what a recent response said of the tokens (what an admission carries, applied
    /// before it is judged).
    pub(crate) fn see(&mut self, now: Millis, seen: Option<Seen>) {
        match seen {
            Some(Seen::Remaining(remaining)) => self.feedback(now, None, Some(remaining)),
            Some(Seen::Count(count, at)) => self.tune(now, self.bucket.rate(), Some((count, at))),
            None => {}
        }
    }
}

impl MemoryAuthority {
    /// The spread's figures, as an operation on it answers.
    fn credit_answer(&self) -> Answer {
        let (used, limit, per_ms) = self.credits.figures();
        Answer::Credits {
            used,
            limit,
            per_ms,
        }
    }

    /// As many tokens as are there, up to `want` (one with `credits`, which it takes with
    /// its token).
    fn take_token(
        &mut self,
        now: Millis,
        id: AdmissionId,
        want: u32,
        credits: Option<Spend>,
    ) -> Answer {
        let Some(anchor) = self.bucket.take_anchored(now) else {
            return Answer::Wait(self.wait_ms(now));
        };
        if anchor {
            self.anchor = Some(id);
        }
        let mut admissions = 1;
        match credits {
            Some(spend) => self.credits.take(now, spend),
            None => {
                while admissions < want && self.bucket.take(now) {
                    admissions += 1;
                }
            }
        }
        let seq = self.sent;
        self.sent += f64::from(admissions);
        Answer::Admitted {
            anchor,
            next_ms: self.wait_ms(now),
            admissions,
            seq,
        }
    }
}

impl Transitions for MemoryAuthority {
    fn apply(&mut self, now: Millis, op: &Op) -> Answer {
        match *op {
            Op::Admit {
                id,
                want,
                seen,
                account,
                credits,
                ..
            } => {
                self.see(now, seen);
                if self.quota_until > now && !account {
                    Answer::Exhausted(self.quota_until - now)
                } else if now < self.cooldown_until {
                    Answer::Wait((self.cooldown_until - now).max(1.0))
                } else {
                    match credits.map_or(Credit::Go, |spend| self.credits.ask(now, spend)) {
                        Credit::Go => self.take_token(now, id, want, credits),
                        Credit::Read => Answer::Read,
                        Credit::Wait(ms) => Answer::Wait(ms),
                    }
                }
            }
            Op::Resume { id } => {
                if self.anchor == Some(id) {
                    self.anchor = None;
                    self.bucket.resume(now);
                }
                Answer::Resumed(self.wait_ms(now))
            }
            Op::Feedback {
                cooldown_ms,
                remaining,
            } => {
                self.feedback(now, cooldown_ms, remaining);
                Answer::Cooldown {
                    cooldown_ms: (self.cooldown_until - now).max(0.0),
                    slow: self.bucket.is_slow(),
                }
            }
            Op::ClearCooldown => {
                self.cooldown_until = 0.0;
                Answer::Cooldown {
                    cooldown_ms: 0.0,
                    slow: self.bucket.is_slow(),
                }
            }
            Op::Charge { cost, refund } => match &mut self.budget {
                None => Answer::Charged(0.0),
                Some(budget) => {
                    budget.credit(refund);
                    if budget.spend(cost) {
                        Answer::Charged(budget.available())
                    } else {
                        Answer::Refused(budget.available())
                    }
                }
            },
            Op::Quota { ms } => {
                self.quota_until = if ms > 0.0 { now + ms } else { 0.0 };
                Answer::QuotaSet((self.quota_until - now).max(0.0))
            }
            Op::Read { spread, reading } => {
                self.credits.read(now, spread, reading);
                self.credit_answer()
            }
            Op::Spent { credits, .. } => {
                self.credits.spent(now, credits);
                self.credit_answer()
            }
        }
    }
}

impl Immediate for MemoryAuthority {
    /// One queue, so first come is first served already.
    fn credits(&mut self, _now: Millis) -> (f64, f64, f64) {
        self.credits.figures()
    }
    fn admit(
        &mut self,
        now: Millis,
        id: AdmissionId,
        _turn: Turn,
        account: bool,
        credits: Option<Spend>,
    ) -> Answer {
        self.apply(
            now,
            &Op::Admit {
                id,
                want: 1,
                seen: None,
                account,
                head: None,
                credits,
            },
        )
    }
    fn predict(&mut self, now: Millis, ahead: usize) -> Millis {
        MemoryAuthority::predict(self, now, ahead)
    }
    fn ready_by(&mut self, now: Millis, at: Millis) -> bool {
        MemoryAuthority::ready_by(self, now, at)
    }
    fn cooldown_until(&mut self) -> Millis {
        MemoryAuthority::cooldown_until(self)
    }
    fn slow(&mut self) -> bool {
        MemoryAuthority::slow(self)
    }
    fn budget_left(&mut self) -> Option<f64> {
        MemoryAuthority::budget_left(self)
    }
    fn idle(&mut self, now: Millis) -> bool {
        MemoryAuthority::idle(self, now)
    }
    fn install_budget(&mut self, config: RefillingConfig) {
        MemoryAuthority::install_budget(self, config)
    }
    fn cap_budget(&mut self, left: f64) {
        MemoryAuthority::cap_budget(self, left)
    }
    fn rate(&mut self) -> Rate {
        MemoryAuthority::rate(self)
    }
    fn tune(&mut self, now: Millis, rate: Rate, count: Option<(Count, f64)>) {
        MemoryAuthority::tune(self, now, rate, count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn article() -> MemoryAuthority {
        MemoryAuthority::new(Rate::ARTICLE, None, 0.0)
    }

    fn admit(a: &mut MemoryAuthority, now: Millis, id: AdmissionId) -> Answer {
        a.apply(
            now,
            &Op::Admit {
                credits: None,
                id,
                want: 1,
                seen: None,
                account: false,
                head: None,
            },
        )
    }

    fn cooldown(ms: Millis) -> Op {
        Op::Feedback {
            cooldown_ms: Some(ms),
            remaining: None,
        }
    }

    #[test]
    fn admits_the_burst_then_says_when_the_next_token_comes() {
        let mut a = article();
        assert_eq!(
            admit(&mut a, 0.0, 1),
            Answer::Admitted {
                anchor: true,
                next_ms: 0.0,
                admissions: 1,
                seq: 0.0
            }
        );
        assert_eq!(
            admit(&mut a, 0.0, 2),
            Answer::Admitted {
                anchor: false,
                next_ms: 500.0,
                admissions: 1,
                seq: 1.0
            }
        );
        assert_eq!(admit(&mut a, 0.0, 3), Answer::Wait(500.0));
    }

    #[test]
    fn one_admission_takes_as_many_tokens_as_are_there_up_to_what_it_wants() {
        let mut a = MemoryAuthority::new(Rate::new(5.0, 2.0).unwrap(), None, 0.0);
        let many = |id, want| Op::Admit {
            credits: None,
            id,
            want,
            seen: None,
            account: false,
            head: None,
        };
        // From a full bucket: three of five, and the refill waits for the first's response.
        assert_eq!(
            a.apply(0.0, &many(1, 3)),
            Answer::Admitted {
                anchor: true,
                next_ms: 0.0,
                admissions: 3,
                seq: 0.0
            }
        );
        // Two are left: wanting ten takes them, and says when the next comes.
        assert_eq!(
            a.apply(0.0, &many(4, 10)),
            Answer::Admitted {
                anchor: false,
                next_ms: 500.0,
                admissions: 2,
                seq: 3.0
            }
        );
        assert_eq!(a.apply(0.0, &many(6, 10)), Answer::Wait(500.0));
        // The refill restarts with the first admission's response, not a later one's.
        assert_eq!(
            a.apply(100.0, &Op::Resume { id: 4 }),
            Answer::Resumed(500.0)
        );
        assert_eq!(
            a.apply(100.0, &Op::Resume { id: 1 }),
            Answer::Resumed(500.0)
        );
        assert_eq!(
            a.apply(1_100.0, &many(6, 10)),
            Answer::Admitted {
                anchor: false,
                next_ms: 500.0,
                admissions: 2,
                seq: 5.0
            }
        );
    }

    #[test]
    fn the_refill_after_a_burst_starts_when_its_first_response_comes_back() {
        let mut a = article();
        admit(&mut a, 0.0, 1);
        admit(&mut a, 0.0, 2);
        assert_eq!(a.apply(2.0, &Op::Resume { id: 2 }), Answer::Resumed(500.0));
        assert_eq!(a.apply(4.0, &Op::Resume { id: 1 }), Answer::Resumed(500.0));
        assert_eq!(admit(&mut a, 503.0, 3), Answer::Wait(1.0));
        assert!(matches!(admit(&mut a, 504.0, 3), Answer::Admitted { .. }));
    }

    #[test]
    fn a_cooldown_is_checked_before_the_tokens_and_never_shortened() {
        let mut a = article();
        a.apply(0.0, &cooldown(5_000.0));
        a.apply(100.0, &cooldown(1_000.0));
        assert_eq!(a.cooldown_until(), 5_000.0);
        assert_eq!(admit(&mut a, 1_999.0, 1), Answer::Wait(3_001.0));
        a.apply(1_000.0, &cooldown(8_000.0));
        assert_eq!(a.cooldown_until(), 9_000.0);
        assert!(matches!(admit(&mut a, 9_000.0, 1), Answer::Admitted { .. }));
    }

    #[test]
    fn the_servers_remaining_lowers_the_count_and_slows_a_drained_key() {
        let mut a = MemoryAuthority::new(Rate::new(20.0, 10.0).unwrap(), None, 0.0);
        let seen = |remaining| Op::Feedback {
            cooldown_ms: None,
            remaining: Some(Remaining {
                limit: 20,
                remaining,
                heard: None,
                age_ms: 0.0,
            }),
        };
        assert_eq!(
            a.apply(0.0, &seen(1)),
            Answer::Cooldown {
                cooldown_ms: 0.0,
                slow: true
            }
        );
        assert_eq!(a.predict(0.0, 2), 200.0, "two tokens, then one per 200 ms");
        a.apply(0.0, &seen(10));
        assert!(!a.slow(), "recovered above 10%");
    }

    /// An admission of `id` that first takes in a remaining count of `remaining` (of `limit`)
    /// heard when the highest number admitted was `heard`, its request sent `age_ms` ago.
    fn told(id: AdmissionId, limit: u64, remaining: u64, heard: f64, age_ms: Millis) -> Op {
        Op::Admit {
            credits: None,
            id,
            want: 1,
            seen: Some(Seen::Remaining(Remaining {
                limit,
                remaining,
                heard: Some(heard),
                age_ms,
            })),
            account: false,
            head: None,
        }
    }

    #[test]
    fn an_answer_at_the_floor_told_a_moment_after_the_next_token_is_no_sign_of_anyone_else() {
        let mut a = article();
        admit(&mut a, 0.0, 1);
        admit(&mut a, 0.0, 2);
        a.apply(20.0, &Op::Resume { id: 1 });
        // The token of 520 ms goes to request 2; the server says 0 left. That count rides
        // along with the next admission, 1 ms after the next token came: a hair over one
        // token is there, which is no more than the server can hold by now.
        assert!(matches!(
            admit(&mut a, 520.0, 3),
            Answer::Admitted { seq: 2.0, .. }
        ));
        assert_eq!(
            a.apply(1_021.0, &told(4, 2, 0, 2.0, 501.0)),
            Answer::Admitted {
                anchor: false,
                next_ms: 499.0,
                admissions: 1,
                seq: 3.0
            }
        );
        assert!(!a.slow());
    }

    #[test]
    fn the_requests_admitted_after_an_answer_came_are_not_in_its_count() {
        let rate = Rate::new(10.0, 5.0).unwrap();
        let start = || {
            let mut a = MemoryAuthority::new(rate, None, 0.0);
            admit(&mut a, 0.0, 1);
            a.apply(20.0, &Op::Resume { id: 1 });
            // Three more go after request 0's answer came: 6.15 tokens at 50 ms.
            for id in 2..5 {
                admit(&mut a, 40.0, id);
            }
            a
        };
        // It said 9 left (at most 9 + 1 + 50 ms of refill - 3 = 7.25 now), or 5: someone
        // else took 4 (at most 3.25 now). Then this admission takes one.
        let mut honest = start();
        honest.apply(50.0, &told(5, 10, 9, 0.0, 50.0));
        assert_eq!(honest.predict(50.0, 4), 50.0, "5.15 tokens are there");
        let mut drained = start();
        drained.apply(50.0, &told(5, 10, 5, 0.0, 50.0));
        assert_eq!(drained.predict(50.0, 1), 50.0);
        assert_eq!(drained.predict(50.0, 2), 200.0, "2.25 tokens are there");
        // Had the three gone before the answer came, they might be in its count.
        let mut before = start();
        before.apply(
            50.0,
            &Op::Feedback {
                cooldown_ms: None,
                remaining: Some(Remaining {
                    limit: 10,
                    remaining: 5,
                    heard: None,
                    age_ms: 50.0,
                }),
            },
        );
        assert_eq!(before.predict(50.0, 5), 50.0, "6.15 tokens are there");
    }

    #[test]
    fn a_key_drained_to_nothing_by_someone_else_slows_the_refill() {
        let mut a = MemoryAuthority::new(Rate::new(10.0, 5.0).unwrap(), None, 0.0);
        admit(&mut a, 0.0, 1);
        a.apply(20.0, &Op::Resume { id: 1 });
        // The server said 0 left after request 0: someone else took 9.
        assert!(matches!(
            a.apply(520.0, &told(2, 10, 0, 0.0, 520.0)),
            Answer::Admitted { .. }
        ));
        assert!(a.slow());
        // Of at most 0 + 1 + 2.6, this admission took one: the next at half rate.
        assert_eq!(a.predict(520.0, 2), 520.0 + 0.4 * 400.0);
    }

    #[test]
    fn the_budget_pays_what_it_has_after_crediting_refunds() {
        let config = RefillingConfig {
            capacity: 10.0,
            ..RefillingConfig::DEFAULT
        };
        let mut a = MemoryAuthority::new(Rate::ARTICLE, Some(config), 0.0);
        let charge = |cost, refund| Op::Charge { cost, refund };
        assert_eq!(a.apply(0.0, &charge(10.0, 0.0)), Answer::Charged(0.0));
        assert_eq!(a.apply(0.0, &charge(5.0, 0.0)), Answer::Refused(0.0));
        assert_eq!(a.apply(0.0, &charge(5.0, 7.0)), Answer::Charged(2.0));
        assert_eq!(a.apply(0.0, &charge(0.0, 100.0)), Answer::Charged(10.0));
    }

    #[test]
    fn a_quota_closure_refuses_admissions_until_it_ends() {
        let mut a = article();
        assert_eq!(
            a.apply(0.0, &Op::Quota { ms: 1_000.0 }),
            Answer::QuotaSet(1_000.0)
        );
        assert_eq!(admit(&mut a, 400.0, 1), Answer::Exhausted(600.0));
        // An account call is not held by it: it takes a token as any call does.
        let account = Op::Admit {
            credits: None,
            id: 1,
            want: 1,
            seen: None,
            account: true,
            head: None,
        };
        assert!(matches!(a.apply(400.0, &account), Answer::Admitted { .. }));
        assert_eq!(admit(&mut a, 400.0, 2), Answer::Exhausted(600.0));
        assert!(matches!(admit(&mut a, 1_000.0, 3), Answer::Admitted { .. }));
        a.apply(3_000.0, &Op::Quota { ms: 5.0 });
        a.apply(3_000.0, &Op::Quota { ms: 0.0 });
        assert!(matches!(admit(&mut a, 3_001.0, 4), Answer::Admitted { .. }));
    }

    #[test]
    fn idle_once_nothing_is_worth_keeping() {
        let mut a = article();
        assert!(a.idle(0.0));
        admit(&mut a, 0.0, 1);
        assert!(!a.idle(0.0));
        a.apply(0.0, &Op::Resume { id: 1 });
        assert!(!a.idle(400.0));
        assert!(a.idle(500.0));
        a.apply(500.0, &cooldown(100.0));
        assert!(!a.idle(599.0) && a.idle(600.0));
    }
}

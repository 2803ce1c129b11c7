//! The link as the gate's authority: each question the gate asks any authority, answered by
//! the store (later, through an operation) or, while the store is down, by the fail-safe.
//! A part of the link, so that it reaches the link's own state; the link itself needs nothing
//! of the trait.

use super::{OnFailure, Purpose, StoreLink};
use crate::core::authority::fair::Turn;
use crate::core::authority::{AdmissionId, Answer, Head, Op, Remaining, Seen, Transitions};
use crate::core::gate::action::OpId;
use crate::core::gate::authority::{Admission, Authority, Needs, Standing};
use crate::core::gate::ids::CallId;
use crate::core::rules::allowance::Rate;
use crate::core::rules::bucket::Count;
use crate::core::rules::budget::RefillingConfig;
use crate::core::Millis;

impl Authority for StoreLink {
    /// While the store is down the fail-safe admits, at its share, and now and then the store
    /// is asked again. Otherwise the store is asked for as many of the queue as `want`, not a
    /// moment early: asking before its token is there costs a round trip for a "wait".
    fn admit(
        &mut self,
        now: Millis,
        id: AdmissionId,
        turn: Turn,
        want: u32,
        learning: bool,
        Needs { account, credits }: Needs,
    ) -> Admission {
        if self.alone() {
            if self.ping_due(now) {
                let ping = Op::Feedback {
                    cooldown_ms: None,
                    remaining: None,
                };
                self.send(now, Purpose::Tell, ping);
            }
            // Alone, the fail-safe spreads too: its share of the pace, from the store's bucket
            // as last heard (or from a reading of its own when none was).
            if let Some(spend) = credits.filter(|_| self.spread_alone) {
                self.spread_alone = false;
                let seed = self.heard_credits.map(|(view, at)| (view, now - at));
                let share = self.settings.local_share;
                let shared = self.fallback.shared_credits_mut();
                let had = shared.has_bucket();
                shared.alone(now, (spend.spread, share), seed, had);
            }
            let needs = Needs { account, credits };
            let admission =
                Authority::admit(&mut self.fallback, now, id, turn, want, learning, needs);
            let answer = match &admission {
                Admission::Answered { answer, .. } => Some(answer),
                _ => None,
            };
            if let (Some(spend), Some(Answer::Admitted { .. })) = (credits, answer) {
                let cost = self.fallback.shared_credits().cost(spend);
                let (spent, _) = self.spent_alone.get_or_insert((0.0, spend.spread));
                *spent += cost;
            }
            return admission;
        }
        if self.admitting || now < self.ready_at {
            return Admission::NotYet;
        }
        let seen = self.seen.take().map(|(seen, at)| seen.aged(now - at));
        let op = Op::Admit {
            id,
            want,
            seen,
            account,
            head: Some(Head {
                waited_ms: now - turn.since,
                lane: turn.lane,
                waiting: turn.waiting,
            }),
            credits,
        };
        self.send(now, Purpose::Admit(id), op);
        self.asked_with = self.rate;
        Admission::Asked
    }

    fn predict(&mut self, now: Millis, ahead: usize) -> Millis {
        match self.alone() {
            true => Authority::predict(&mut self.fallback, now, ahead),
            false => self.estimate(now, ahead),
        }
    }

    fn head_due(&mut self, now: Millis) -> Option<Millis> {
        if self.alone() {
            let fallback = Authority::predict(&mut self.fallback, now, 0);
            return Some(fallback.min(self.retry_at));
        }
        (!self.admitting).then(|| self.estimate(now, 0))
    }

    /// Where others share the state, nobody can say: no, unless the fail-safe admits alone.
    fn ready_by(&mut self, now: Millis, at: Millis) -> bool {
        self.alone() && Authority::ready_by(&mut self.fallback, now, at)
    }

    fn refusing(&self, now: Millis) -> bool {
        self.down && self.settings.on_failure == OnFailure::Closed && now < self.retry_at
    }

    fn cooldown_until(&mut self) -> Millis {
        let fallback = Authority::cooldown_until(&mut self.fallback);
        self.cooldown_until.max(fallback)
    }

    fn standing(&mut self) -> Standing {
        if self.alone() {
            return self.fallback.standing();
        }
        Standing {
            cooldown_until: self.cooldown_until,
            slow: self.slow,
            retry_budget: self.budget_left,
        }
    }

    /// The fail-safe hears it too, should the store go down; the store, unless it is down.
    /// A reading the fail-safe takes in leaves it its share of the pace.
    fn tell(&mut self, now: Millis, op: Op) {
        let had = self.fallback.shared_credits().has_bucket();
        self.fallback.apply(now, &op);
        if let Op::Read { spread, .. } = op {
            let share = self.settings.local_share;
            (self.fallback.shared_credits_mut()).alone(now, (spread, share), None, had);
        }
        if let Op::ClearCooldown = op {
            self.cooldown_until = 0.0;
        }
        if !self.down {
            self.send(now, Purpose::Tell, op);
        }
    }

    /// A cooldown is told at once, so every process holds; a remaining count paces
    /// admissions, so it rides along with the next one rather than cost a round trip of its
    /// own.
    fn observe(
        &mut self,
        now: Millis,
        cooldown_ms: Option<Millis>,
        remaining: Option<Remaining>,
        heard: f64,
    ) {
        let op = Op::Feedback {
            cooldown_ms,
            remaining,
        };
        // The fail-safe holds too, should the store go down during the cooldown.
        self.fallback.apply(now, &op);
        if let Some(ms) = cooldown_ms {
            self.cooldown_until = self.cooldown_until.max(now + ms);
        }
        if cooldown_ms.is_none() {
            let heard = Some(heard);
            self.seen = remaining.map(|r| (Seen::Remaining(Remaining { heard, ..r }), now));
        } else if !self.down {
            self.seen = None;
            self.send(now, Purpose::Tell, op);
        }
    }

    /// With the store up, a success's refund rides along with the next charge: it costs no
    /// round trip.
    fn credit(&mut self, now: Millis, refund: f64) {
        match self.alone() {
            true => Authority::credit(&mut self.fallback, now, refund),
            false => self.refunds += refund,
        }
    }

    fn charge(&mut self, now: Millis, call: CallId, cost: f64) -> Option<bool> {
        if self.alone() {
            return Some(self.charge_alone(now, cost));
        }
        let refund = std::mem::take(&mut self.refunds);
        self.send(
            now,
            Purpose::Charge { call, cost },
            Op::Charge { cost, refund },
        );
        None
    }

    /// The store hears the allowance with the next operation of any kind (each carries it;
    /// `gate.lua` refills at the old one up to then, as `TokenBucket::retune` does) and the
    /// count with the next admission; the fail-safe follows the allowance at its share.
    fn tune(&mut self, now: Millis, rate: Rate, count: Option<(Count, f64)>) {
        let faster = rate.per_second() > self.rate.per_second();
        self.rate = rate;
        let share = self.settings.local_rate(rate);
        Authority::tune(&mut self.fallback, now, share, None);
        if let Some((count, at)) = count {
            self.seen = Some((Seen::Count(count, at), now));
        }
        if faster || count.is_some() {
            // The store's last wait was for the old allowance: ask again.
            self.ready_at = f64::NEG_INFINITY;
        }
    }

    fn shared_rate(&mut self) -> Option<Rate> {
        self.stored.take()
    }

    fn install_budget(&mut self, config: RefillingConfig) {
        Authority::install_budget(&mut self.fallback, config);
        self.budget_left.get_or_insert(config.capacity);
    }

    /// The store keeps the budget.
    fn local_budget_left(&mut self) -> Option<f64> {
        None
    }

    fn cap_budget(&mut self, _left: f64) {}

    /// Success refunds not yet carried to the store go with the gate: the shared budget only
    /// ever errs low (fewer retries), and a gate kept for them would never go.
    fn idle(&mut self, now: Millis) -> bool {
        self.next_deadline().is_none() && Authority::idle(&mut self.fallback, now)
    }

    fn outgoing(&mut self) -> Option<(OpId, Op)> {
        self.outbox.pop_front()
    }

    fn store_counts(&self) -> Option<(u64, u64, bool)> {
        Some((self.calls, self.failures, !self.down))
    }

    /// The fleet's, as the store last told them; the fail-safe's while it spreads alone.
    fn credits(&mut self, now: Millis) -> Option<(f64, f64, f64)> {
        if self.alone() {
            let (used, limit, per_ms) = self.fallback.shared_credits().figures();
            if limit > 0.0 {
                return Some((used, limit, per_ms));
            }
        }
        let view = self.heard_credits(now)?;
        Some((view.used, view.limit, view.per_ms))
    }

    fn link(&mut self) -> Option<&mut StoreLink> {
        Some(self)
    }
}

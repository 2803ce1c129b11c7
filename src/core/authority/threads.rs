//! The admission authority shared by the threads of one process. Each thread keeps its own queue
//! and its one timer per gate; what they all draw from (the state the memory authority keeps for
//! a lone thread) lives in a [`Slot`] of shared memory that one thread changes at a time. The
//! transitions are the memory authority's own: a transaction loads the state from the slot's
//! words, applies the operation and saves it back. What sharing adds is the
//! `order` between the queues: the head of each waiting queue leaves a claim, and
//! a token goes to the head the fair order puts first.
//!
//! A slot's words, in order: `READY` (1 once anything was saved), the gate's allowance and
//! retry budget settings (the first thread's; the others must agree), the memory authority's
//! state, then the order (the fair order's clock and lanes, and the heads' claims).

use crate::core::authority::credits::Spend;
use crate::core::authority::fair::{Shares, Turn};
use crate::core::authority::memory::MemoryAuthority;
use crate::core::authority::order::{self, Ask, Order};
use crate::core::authority::{AdmissionId, Answer, Immediate, Op, Transitions};
use crate::core::base::protocol;
use crate::core::rules::allowance::Rate;
use crate::core::rules::bucket::Count;
use crate::core::rules::budget::RefillingConfig;
use crate::core::Millis;

/// Word 0: 1 once a thread saved the slot, 0 in a fresh one.
pub(crate) const READY: usize = 0;
const CONFIG: usize = 1;
const CONFIG_WORDS: usize = 7;
const STATE: usize = CONFIG + CONFIG_WORDS;
const ORDER_AT: usize = STATE + MemoryAuthority::WORDS;
/// The words [`Immediate::standing`] reads: the settings and the state but the shared spread's.
const STANDING: usize = STATE + 9;
/// Numbers in a slot.
pub const WORDS: usize = ORDER_AT + order::WORDS;
// The JavaScript side lays the shared memory out by the protocol's count.
const _: () = assert!(WORDS == protocol::SLOT_WORDS);

/// The highest thread number: numbers salt admission ids above 2^40 and stay below 2^53.
pub(crate) const MAX_THREAD: u32 = 4095;

/// A thread's number for the gates' claims, from its id (`worker_threads`' id, unique in the
/// process): from 1 to `MAX_THREAD`.
pub fn thread_number(id: f64) -> u32 {
    (id as u32 % MAX_THREAD) + 1
}

/// One gate's state in memory shared by threads.
pub trait Slot {
    /// Runs `f` on the slot's words while this thread alone holds the slot, and keeps what `f`
    /// wrote if it returns true. If the hold was taken over meanwhile (this thread stalled past
    /// the lease), what `f` wrote is dropped and `f` runs again on the words as they are now.
    ///
    /// For an `admission`, it may instead return false without running `f`: the thread may not
    /// have heard yet of the memory the others share, or the slot moves to memory the thread
    /// has not been told of. The thread's event loop must turn before it asks again. Other
    /// transactions go on meanwhile, on the memory the slot leaves, and come along when it
    /// moves.
    fn transact(&mut self, f: &mut dyn FnMut(&mut [f64; WORDS]) -> bool, admission: bool) -> bool;

    /// Runs `f` on the slot's first `len` words, as they are while this thread holds the slot,
    /// changing nothing: `stats()` reads every gate's few words this way (copying all of a
    /// slot's words, at a transaction's two calls into JavaScript, cost about as much as the
    /// rest of a gate's figures in wasm).
    fn read(&mut self, len: usize, f: &mut dyn FnMut(&[f64])) {
        self.transact(
            &mut |words| {
                f(&words[..len]);
                false
            },
            false,
        );
    }
}

/// What a slot holds for a gate: its allowance and retry budget settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// The allowance.
    pub rate: Rate,
    /// The shared retry budget's settings, if any wrapper on the key retries.
    pub budget: Option<RefillingConfig>,
    /// The allowance is learned: `rate` is the latest estimate, which any thread may change.
    pub learn: bool,
}

impl Settings {
    fn save(&self, words: &mut [f64; WORDS]) {
        let b = self.budget;
        words[CONFIG..STATE].copy_from_slice(&[
            self.rate.burst(),
            self.rate.per_second(),
            b.map_or(-1.0, |b| b.capacity),
            b.map_or(0.0, |b| b.throttle_cost),
            b.map_or(0.0, |b| b.transient_cost),
            b.map_or(0.0, |b| b.success_refill),
            f64::from(u8::from(self.learn)),
        ]);
    }

    /// The settings a slot holds, if they make an allowance.
    // Never inlined: one copy, not one per transaction (1 KB of wasm).
    #[inline(never)]
    fn load(words: &[f64; WORDS]) -> Option<Settings> {
        let w = &words[CONFIG..STATE];
        let budget = (w[2] >= 0.0).then_some(RefillingConfig {
            capacity: w[2],
            throttle_cost: w[3],
            transient_cost: w[4],
            success_refill: w[5],
        });
        let rate = Rate::new(w[0], w[1]).ok()?;
        Some(Settings {
            rate,
            budget,
            learn: w[6] == 1.0,
        })
    }
}

/// Whether the state in `words` holds nothing worth keeping at `now` (shared clock): its gate
/// may give the slot to another key.
pub fn vacant(words: &mut [f64; WORDS], now: Millis) -> bool {
    if words[READY] != 1.0 {
        return true;
    }
    let Some(settings) = Settings::load(words) else {
        return true;
    };
    !Order(&mut words[ORDER_AT..]).claimed() && state(words, settings).idle(now)
}

/// Brings the state of a slot a thread kept apart (`from`) into the slot the threads share now
/// (`into`), at `now` on the shared clock: a fresh slot takes it as it is; otherwise what was
/// spent in either is spent (see [`MemoryAuthority::absorb`]). The caller empties `from` as it
/// takes it, so nothing is counted twice.
pub(crate) fn merge(into: &mut [f64; WORDS], from: &[f64; WORDS], now: Millis) {
    let Some(theirs) = Settings::load(from).filter(|_| from[READY] == 1.0) else {
        return;
    };
    let held = match Settings::load(into) {
        Some(held) if into[READY] == 1.0 => held,
        _ => {
            into[..ORDER_AT].copy_from_slice(&from[..ORDER_AT]);
            return;
        }
    };
    let mut mine = state(into, held);
    mine.absorb(now, &mut state(from, theirs));
    into[STATE..ORDER_AT].copy_from_slice(&mine.save());
}

/// Makes a fresh slot the gate's: its settings and a full bucket (full as of any time: the
/// refill is capped at the burst).
fn init(words: &mut [f64; WORDS], settings: Settings) {
    words.fill(0.0);
    settings.save(words);
    let fresh = MemoryAuthority::new(settings.rate, settings.budget, 0.0);
    words[STATE..ORDER_AT].copy_from_slice(&fresh.save());
    words[READY] = 1.0;
}

fn state(words: &[f64; WORDS], settings: Settings) -> MemoryAuthority {
    let mut saved = [0.0; MemoryAuthority::WORDS];
    saved.copy_from_slice(&words[STATE..ORDER_AT]);
    MemoryAuthority::load(settings.rate, settings.budget, saved)
}

/// A gate's authority in a slot shared with the process's other threads.
pub struct ThreadAuthority {
    slot: Box<dyn Slot>,
    settings: Settings,
    /// This thread's number (1 to [`MAX_THREAD`]): it names the thread's claim and keeps its
    /// admission numbers apart from other threads'.
    thread: u32,
    /// Added to this thread's clock, it gives the clock the threads share.
    offset: Millis,
    /// Standing back (on this thread's clock) for a head of another thread that came first.
    yield_until: Millis,
    /// Successes' refunds to the retry budget not yet told: they ride along with this thread's
    /// next transaction (a success costs none of its own).
    refund: f64,
}

impl ThreadAuthority {
    /// Joins the gate in `slot` as thread `thread`, whose clock is `offset` behind the shared
    /// one, bringing `settings`. A retry budget is added to a slot without one. When the slot
    /// already enforces another allowance or budget, the answer is the settings it holds.
    pub fn join(
        mut slot: Box<dyn Slot>,
        settings: Settings,
        thread: u32,
        offset: Millis,
    ) -> Result<ThreadAuthority, Settings> {
        let mut agreed = Ok(settings);
        let agree = &mut |words: &mut [f64; WORDS]| {
            let held = match Settings::load(words) {
                Some(held) if words[READY] == 1.0 => held,
                _ => {
                    init(words, settings);
                    agreed = Ok(settings);
                    return true;
                }
            };
            let bring_budget = held.budget.is_none() && settings.budget.is_some();
            agreed = match (held.budget, settings.budget) {
                _ if held.learn != settings.learn => Err(held),
                // A learned allowance is whatever the threads have learned so far.
                _ if held.rate != settings.rate && !settings.learn => Err(held),
                (Some(a), Some(b)) if a != b => Err(held),
                _ if bring_budget => Ok(Settings {
                    rate: held.rate,
                    ..settings
                }),
                _ => Ok(held),
            };
            if bring_budget && agreed.is_ok() {
                settings.save(words);
            }
            bring_budget && agreed.is_ok()
        };
        slot.transact(agree, false);
        let settings = agreed?;
        Ok(ThreadAuthority {
            slot,
            settings,
            thread: thread.clamp(1, MAX_THREAD),
            offset,
            yield_until: f64::NEG_INFINITY,
            refund: 0.0,
        })
    }

    /// The settings the threads share.
    pub fn settings(&self) -> Settings {
        self.settings
    }

    /// Runs `f` on the state at `now` (this thread's clock), saving it when `f` says it changed.
    fn with<R>(
        &mut self,
        now: Millis,
        f: impl FnMut(&mut MemoryAuthority, &mut Order, Millis) -> (R, bool),
    ) -> R {
        self.transact(now, f, false)
            .expect("a transaction that is not an admission runs")
    }

    /// [`with`](Self::with), or `None` when the slot asks an admission to wait a moment.
    fn transact<R>(
        &mut self,
        now: Millis,
        mut f: impl FnMut(&mut MemoryAuthority, &mut Order, Millis) -> (R, bool),
        admission: bool,
    ) -> Option<R> {
        let mut out = None;
        let step = &mut |a: &mut MemoryAuthority, c: &mut Order, t: Millis| {
            let (r, changed) = f(a, c, t);
            out = Some(r);
            changed
        };
        self.run(now, step, admission);
        out
    }

    /// The one body of every transaction (not generic, so the module holds one copy): loads the
    /// state from the slot's words, lets `f` work on it, saves it when `f` says it changed.
    // Never inlined: LLVM copied it into each of its callers (2 KB of wasm).
    #[inline(never)]
    fn run(
        &mut self,
        now: Millis,
        f: &mut dyn FnMut(&mut MemoryAuthority, &mut Order, Millis) -> bool,
        admission: bool,
    ) {
        let shared_now = now + self.offset;
        let settings = self.settings;
        let refund = std::mem::take(&mut self.refund);
        let mut told = false;
        let words = &mut |words: &mut [f64; WORDS]| {
            // A slot given back fresh (its thread moved it) starts as the first thread's did.
            let fresh = words[READY] != 1.0;
            if fresh {
                init(words, settings);
            }
            // The slot's settings: a budget another thread brought since is kept, not lost.
            let settings = Settings::load(words).unwrap_or(settings);
            let mut authority = state(words, settings);
            told = refund > 0.0;
            if told {
                authority.credit(shared_now, refund);
            }
            let (head, order) = words.split_at_mut(ORDER_AT);
            let changed = f(&mut authority, &mut Order(order), shared_now) || told;
            if changed {
                head[STATE..].copy_from_slice(&authority.save());
                if settings.learn {
                    let rate = authority.rate();
                    head[CONFIG..CONFIG + 2].copy_from_slice(&[rate.burst(), rate.per_second()]);
                }
            }
            changed || fresh
        };
        self.slot.transact(words, admission);
        if !told {
            // The slot did not run it (an admission asked to wait a moment): the next does.
            self.refund += refund;
        }
    }

    fn salted(&self, id: AdmissionId) -> AdmissionId {
        id + (u64::from(self.thread) << 40)
    }
}

impl Transitions for ThreadAuthority {
    fn apply(&mut self, now: Millis, op: &Op) -> Answer {
        let op = match *op {
            Op::Admit {
                id,
                want,
                seen,
                account,
                head,
                credits,
            } => Op::Admit {
                id: self.salted(id),
                want,
                seen,
                account,
                head,
                credits,
            },
            Op::Resume { id } => Op::Resume {
                id: self.salted(id),
            },
            ref op => op.clone(),
        };
        self.with(now, |a, _, t| (a.apply(t, &op), true))
    }
}

impl Immediate for ThreadAuthority {
    /// A token goes to the head that goes first among the threads' queues (see
    /// `Order::admit`); a claim not renewed within one token interval (at most
    /// `order::GRACE_MS`) of its time lapses: its thread died, or its queue emptied.
    fn admit(
        &mut self,
        now: Millis,
        id: AdmissionId,
        turn: Turn,
        account: bool,
        credits: Option<Spend>,
    ) -> Answer {
        self.admit_in_order(now, id, turn, account, credits).0
    }

    fn admit_in_order(
        &mut self,
        now: Millis,
        id: AdmissionId,
        turn: Turn,
        account: bool,
        credits: Option<Spend>,
    ) -> (Answer, Option<Shares>) {
        let ask = Ask {
            who: f64::from(self.thread),
            turn: Turn {
                since: turn.since + self.offset,
                ..turn
            },
            id: self.salted(id),
            want: 1,
            seen: None,
            account,
            credits,
        };
        let mut shares = None;
        let timing = order::timing(self.settings.rate);
        let answer = self.transact(
            now,
            |a, order, t| {
                let answer = order.admit(a, t, &ask, timing);
                shares = Some(order.shares());
                (answer, true)
            },
            true,
        );
        // Not asked: the slot waits for this thread's event loop to turn.
        let answer = answer.unwrap_or((Answer::Wait(1.0), true));
        match answer {
            (Answer::Wait(ms), true) => self.yield_until = now + ms,
            _ => self.yield_until = f64::NEG_INFINITY,
        }
        (answer.0, shares)
    }

    fn followed(&mut self) -> Option<Rate> {
        Some(Immediate::rate(self))
    }

    fn credits(&mut self, now: Millis) -> (f64, f64, f64) {
        self.with(now, |a, _, _| (a.shared_credits().figures(), false))
    }

    /// Not while the order held the token for another thread's head that came first: by `at`
    /// it was not this head's to take.
    fn ready_by(&mut self, now: Millis, at: Millis) -> bool {
        if self.yield_until > at {
            return false;
        }
        let at = at + self.offset;
        self.with(now, |a, _, t| (a.ready_by(t, at), false))
    }
    fn predict(&mut self, now: Millis, ahead: usize) -> Millis {
        let offset = self.offset;
        // Now exactly when it is now: the shared clock's large numbers must not round a
        // token that is there into a wait.
        let at = self.with(now, |a, _, t| match a.predict(t, ahead) {
            at if at <= t => (now, false),
            at => (at - offset, false),
        });
        at.max(self.yield_until)
    }

    fn cooldown_until(&mut self) -> Millis {
        Immediate::standing(self).0
    }

    fn slow(&mut self) -> bool {
        self.with(0.0, |a, _, _| (a.slow(), false))
    }

    fn budget_left(&mut self) -> Option<f64> {
        self.with(0.0, |a, _, _| (a.budget_left(), false))
    }

    /// One hold of the slot rather than three, reading only the words it needs (a refund
    /// not yet told rides along with a transaction, as always).
    fn standing(&mut self) -> (Millis, bool, Option<f64>) {
        let offset = self.offset;
        let look = |a: &MemoryAuthority| {
            let until = a.cooldown_until();
            let until = if until > 0.0 { until - offset } else { 0.0 };
            (until, a.slow(), a.budget_left())
        };
        if self.refund > 0.0 {
            return self.with(0.0, |a, _, _| (look(a), false));
        }
        let settings = self.settings;
        let mut seen = None;
        self.slot.read(STANDING, &mut |part| {
            let mut words = [0.0; WORDS];
            words[..STANDING].copy_from_slice(part);
            // A fresh slot reads as the first transaction would make it.
            if words[READY] != 1.0 {
                init(&mut words, settings);
            }
            let settings = Settings::load(&words).unwrap_or(settings);
            seen = Some(look(&state(&words, settings)));
        });
        seen.expect("a slot's read runs")
    }

    fn idle(&mut self, now: Millis) -> bool {
        self.with(now, |a, _, t| (a.idle(t), false))
    }

    fn cap_budget(&mut self, left: f64) {
        self.with(0.0, |a, _, _| {
            let before = a.budget_left();
            a.cap_budget(left);
            ((), a.budget_left() != before)
        })
    }

    fn rate(&mut self) -> Rate {
        self.with(0.0, |a, _, _| (a.rate(), false))
    }

    /// The estimate is the threads' together: it is saved with the slot's settings, where
    /// every thread's next transaction finds it.
    fn tune(&mut self, now: Millis, rate: Rate, count: Option<(Count, f64)>) {
        self.settings.rate = rate;
        self.with(now, |a, order, t| {
            if rate.per_second() > a.rate().per_second() {
                order.hasten(t + rate.ms_per_token());
            }
            a.tune(t, rate, count);
            ((), true)
        });
    }

    fn credit(&mut self, _now: Millis, refund: f64) {
        self.refund += refund;
    }

    fn install_budget(&mut self, config: RefillingConfig) {
        if self.settings.budget.is_some() {
            return;
        }
        self.settings.budget = Some(config);
        let settings = self.settings;
        let install = &mut |words: &mut [f64; WORDS]| match Settings::load(words) {
            Some(held) if held.budget.is_none() => {
                settings.save(words);
                true
            }
            _ => false,
        };
        self.slot.transact(install, false);
    }
}

//! The rules between wrappers that share a credential: one allowance per credential, one place
//! its state lives, one retry budget (a wrapper that does not retry uses none and joins any
//! gate; the first retrying one gives a budget-less gate its budget). A wrapper that disagrees
//! is refused with a message that names both sides and what to do.

use super::profile::{Keeping, Profile};
use super::scope::Scope;
use crate::core::authority::threads::Settings;
use crate::core::gate::Gate;
use crate::core::rules::allowance::{Allowance, Rate};
use crate::core::rules::budget::RefillingConfig;

/// How a [`Gates`](super::Gates) words things: numbers and stores.
pub struct Words<'a> {
    /// `n` as the messages write it.
    pub number: &'a dyn Fn(f64) -> String,
    /// Each store's identity, by [`StoreId`](super::profile::StoreId).
    pub stores: &'a [String],
}

impl Words<'_> {
    fn keeping(&self, keeping: Keeping) -> String {
        match keeping {
            Keeping::Memory { threads: true } => "memory shared by the process's threads".into(),
            Keeping::Memory { threads: false } => "this thread's memory (threads: false)".into(),
            Keeping::Store(id) => self.stores.get(id).cloned().unwrap_or_default(),
        }
    }

    fn rate(&self, rate: Rate) -> String {
        let n = self.number;
        format!(
            "{{ burst: {}, perSecond: {} }}",
            n(rate.burst()),
            n(rate.per_second())
        )
    }

    /// What a gate does with the allowance ("already ...").
    fn allowance(&self, allowance: Allowance) -> String {
        match allowance {
            Allowance::Fixed(rate) => format!("enforces {}", self.rate(rate)),
            Allowance::Learned(None) => "learns the allowance".into(),
            Allowance::Learned(Some(rate)) => {
                format!("learns the allowance below {}", self.rate(rate))
            }
        }
    }

    /// The allowance a wrapper asks for ("asks for ...").
    fn wanted(&self, allowance: Allowance) -> String {
        match allowance {
            Allowance::Fixed(rate) => self.rate(rate),
            Allowance::Learned(None) => {
                "an allowance learned from the responses (rate: 'auto')".into()
            }
            Allowance::Learned(Some(rate)) => {
                format!("an allowance learned below {}", self.rate(rate))
            }
        }
    }

    fn budget(&self, budget: Option<RefillingConfig>) -> String {
        let n = self.number;
        match budget {
            None => "no shared retry budget".into(),
            Some(b) => format!(
                "a retry budget of {} (throttle {}, transient {}, success refill {})",
                n(b.capacity),
                n(b.throttle_cost),
                n(b.transient_cost),
                n(b.success_refill)
            ),
        }
    }
}

/// A scope shortened for messages: enough to tell two keys apart in a log.
pub fn short(scope: &Scope) -> &str {
    let name = scope.as_str();
    name.get(.."key:".len() + 8).unwrap_or(name)
}

/// "The gate for credential … `has`; this wrapper asks for `wants`. `advice`": one template
/// for every way two wrappers can disagree about a credential's gate.
fn mismatch(scope: &Scope, has: &str, wants: &str, advice: &str) -> String {
    format!(
        "The gate for credential {} {has}; this wrapper asks for {wants}. {advice}",
        short(scope)
    )
}

/// Whether `profile` agrees with `gate`, made for `keeping`, as `scope`'s gate; the message
/// says how it does not. A retrying wrapper brings its budget to a gate that has none.
pub fn check(
    scope: &Scope,
    gate: &mut Gate,
    keeping: Keeping,
    profile: &Profile,
    words: &Words,
) -> Result<(), String> {
    if keeping != profile.keeping {
        return Err(mismatch(
            scope,
            &format!("keeps its state in {}", words.keeping(keeping)),
            &words.keeping(profile.keeping),
            "One credential has one gate: use the same store.",
        ));
    }
    match (gate.budget_config(), profile.budget) {
        (None, Some(wanted)) => gate.install_budget(wanted),
        (Some(has), Some(wanted)) if has != wanted => {
            return Err(mismatch(
                scope,
                &format!("already has {}", words.budget(Some(has))),
                &words.budget(Some(wanted)),
                "Wrappers sharing a credential share its retry budget: configure \
                 `retry.budget` the same way in each.",
            ));
        }
        _ => {}
    }
    let allowance = gate.allowance();
    if allowance != profile.allowance {
        return Err(mismatch(
            scope,
            &format!("already {}", words.allowance(allowance)),
            &words.wanted(profile.allowance),
            "One credential has one allowance: configure every wrapper that uses it the \
             same way.",
        ));
    }
    Ok(())
}

/// Another thread's gate for `scope` holds `theirs`, which `profile` disagrees with.
pub fn thread_mismatch(
    scope: &Scope,
    theirs: Settings,
    profile: &Profile,
    words: &Words,
) -> String {
    let learns = profile.learns();
    if theirs.learn != learns || (!learns && Allowance::Fixed(theirs.rate) != profile.allowance) {
        let has = match theirs.learn {
            true => "already learns the allowance".into(),
            false => format!("already enforces {}", words.rate(theirs.rate)),
        };
        return mismatch(
            scope,
            &format!("{has} in another thread"),
            &words.wanted(profile.allowance),
            "One credential has one allowance in the whole process: configure every wrapper \
             in every thread the same way.",
        );
    }
    mismatch(
        scope,
        &format!(
            "already has {} in another thread",
            words.budget(theirs.budget)
        ),
        &words.budget(profile.budget),
        "Wrappers sharing a credential share its retry budget in every thread: configure \
         `retry.budget` the same way in each.",
    )
}

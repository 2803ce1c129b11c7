//! The rules between wrappers that share a credential: one allowance per credential, one place
//! its state lives, one retry budget (the one each wrapper brings, `Profile::budget_used`:
//! the first that brings one gives a budget-less gate its budget), one spread of its quota. A
//! wrapper that disagrees is refused with a [`Mismatch`], whose message names both sides and
//! what to do.

use super::profile::{Keeping, Profile};
use super::scope::Scope;
use crate::core::authority::threads::Settings;
use crate::core::gate::Gate;
use crate::core::rules::allowance::{Allowance, Rate};
use crate::core::rules::budget::RefillingConfig;
use crate::core::rules::credits::Spread;

/// How a wrapper disagrees with the gate its credential has.
#[derive(Debug, Clone, PartialEq)]
pub struct Mismatch {
    scope: Scope,
    kind: Kind,
}

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    /// The gate keeps its state elsewhere (each side worded).
    Keeping(String, String),
    /// Another retry budget.
    Budget(Option<RefillingConfig>, Option<RefillingConfig>),
    /// Another allowance.
    Allowance(Allowance, Allowance),
    /// Another thread's gate holds another allowance.
    ThreadAllowance(Settings, Allowance),
    /// Another thread's gate holds another retry budget.
    ThreadBudget(Option<RefillingConfig>, Option<RefillingConfig>),
    /// Another spread, or none.
    Spread(Option<Spread>, Option<Spread>),
}

impl Mismatch {
    /// What the caller is told, numbers written by `number`: "The gate for credential …
    /// `has`; this wrapper asks for `wants`. `advice`", one template for every way two wrappers
    /// can disagree.
    pub fn message(&self, number: &dyn Fn(f64) -> String) -> String {
        let w = Words { number };
        let (has, wants, advice) = match &self.kind {
            Kind::Keeping(has, wants) => (
                format!("keeps its state in {has}"),
                wants.clone(),
                "One credential has one gate: use the same store.",
            ),
            Kind::Budget(has, wants) => (
                format!("already has {}", w.budget(*has)),
                w.budget(*wants),
                "Wrappers sharing a credential share its retry budget: configure \
                 `retry.budget` the same way in each.",
            ),
            Kind::Allowance(has, wants) => (
                format!("already {}", w.allowance(*has)),
                w.wanted(*wants),
                "One credential has one allowance: configure every wrapper that uses it the \
                 same way.",
            ),
            Kind::ThreadAllowance(theirs, wants) => {
                let has = match theirs.learn {
                    true => "already learns the allowance".into(),
                    false => format!("already enforces {}", w.rate(theirs.rate)),
                };
                (
                    format!("{has} in another thread"),
                    w.wanted(*wants),
                    "One credential has one allowance in the whole process: configure every \
                     wrapper in every thread the same way.",
                )
            }
            Kind::Spread(has, wants) => (
                match has {
                    Some(_) => format!("already spreads its quota ({})", w.spread(*has)),
                    None => "does not spread its quota".into(),
                },
                w.spread(*wants),
                "One credential has one spread: configure `quota` the same way in every \
                 wrapper that uses it.",
            ),
            Kind::ThreadBudget(has, wants) => (
                format!("already has {} in another thread", w.budget(*has)),
                w.budget(*wants),
                "Wrappers sharing a credential share its retry budget in every thread: \
                 configure `retry.budget` the same way in each.",
            ),
        };
        format!(
            "The gate for credential {} {has}; this wrapper asks for {wants}. {advice}",
            short(&self.scope)
        )
    }
}

/// Numbers, rates, allowances and budgets as the messages word them.
struct Words<'a> {
    number: &'a dyn Fn(f64) -> String,
}

impl Words<'_> {
    // Never inlined: words a refusal, a cold path (smaller gzipped).
    #[inline(never)]
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

    fn spread(&self, spread: Option<Spread>) -> String {
        let n = self.number;
        match spread {
            None => "no spread".into(),
            Some(s) => format!(
                "quota.spread with reserve {}, burstMs {}, refreshMs {}",
                n(s.reserve),
                n(s.burst_ms),
                n(s.refresh_ms)
            ),
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

/// Where a gate keeps its state, as a mismatch names it (`stores`: each store's identity).
fn keeping_words(keeping: Keeping, stores: &[String]) -> String {
    match keeping {
        Keeping::Memory { threads: true } => "memory shared by the process's threads".into(),
        Keeping::Memory { threads: false } => "this thread's memory (threads: false)".into(),
        Keeping::Store(id) => stores.get(id).cloned().unwrap_or_default(),
    }
}

/// Whether `profile` agrees with `gate`, made for `keeping`, as `scope`'s gate. A retrying
/// wrapper brings its budget to a gate that has none.
pub(crate) fn check(
    scope: &Scope,
    gate: &mut Gate,
    keeping: Keeping,
    profile: &Profile,
    stores: &[String],
) -> Result<(), Mismatch> {
    let refuse = |kind| {
        Err(Mismatch {
            scope: scope.clone(),
            kind,
        })
    };
    let same = match (keeping, profile.keeping) {
        (Keeping::Store(a), Keeping::Store(b)) => stores.get(a) == stores.get(b),
        (a, b) => a == b,
    };
    if !same {
        let (has, wants) = (
            keeping_words(keeping, stores),
            keeping_words(profile.keeping, stores),
        );
        return refuse(Kind::Keeping(has, wants));
    }
    match (gate.budget_config(), profile.budget_used()) {
        (None, Some(wanted)) => gate.install_budget(wanted),
        (Some(has), Some(wanted)) if has != wanted => {
            return refuse(Kind::Budget(Some(has), Some(wanted)));
        }
        _ => {}
    }
    let allowance = gate.allowance();
    if allowance != profile.allowance {
        return refuse(Kind::Allowance(allowance, profile.allowance));
    }
    let wanted = profile.spread.as_ref().map(|(spread, _)| *spread);
    if gate.spread() != wanted {
        return refuse(Kind::Spread(gate.spread(), wanted));
    }
    Ok(())
}

/// Another thread's gate for `scope` holds `theirs`, which `profile` disagrees with.
pub(crate) fn thread_mismatch(scope: &Scope, theirs: Settings, profile: &Profile) -> Mismatch {
    let learns = profile.learns();
    let kind = if theirs.learn != learns
        || (!learns && Allowance::Fixed(theirs.rate) != profile.allowance)
    {
        Kind::ThreadAllowance(theirs, profile.allowance)
    } else {
        Kind::ThreadBudget(theirs.budget, profile.budget_used())
    };
    Mismatch {
        scope: scope.clone(),
        kind,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mismatch_names_both_sides_and_what_to_do() {
        let scope = Scope::of(Some("k"), None);
        let m = Mismatch {
            scope: scope.clone(),
            kind: Kind::Allowance(Allowance::Fixed(Rate::ARTICLE), Allowance::Learned(None)),
        };
        let text = m.message(&|n| n.to_string());
        assert!(text.starts_with(&format!("The gate for credential {}", short(&scope))));
        assert!(
            text.contains("already enforces { burst: 2, perSecond: 2 }"),
            "{text}"
        );
        assert!(
            text.contains("asks for an allowance learned from the responses"),
            "{text}"
        );
        assert!(!text.contains('k') || !text.contains("key:k"), "no raw key");
    }
}

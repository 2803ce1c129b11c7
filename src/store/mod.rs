//! Where a gate's state lives when several processes share one allowance: a Redis hash per
//! credential, changed only by `gate.lua`, which runs the core's rules (bucket, anchored
//! refill, cooldown, retry budget, quota) atomically on Redis's clock. This module is the contract
//! with that script: its text, its keys, its arguments and its answers. No I/O here.

use crate::core::bucket::MAX_PAUSE_MS;
use crate::core::config::Rate;
use crate::core::decimal;
use crate::core::scope::Scope;
use crate::core::Millis;

/// The script, loaded once per client with `SCRIPT LOAD` and run with `EVALSHA`: `gate.lua`
/// without its comments (see `build.rs`).
pub const GATE_SCRIPT: &str = include_str!(concat!(env!("OUT_DIR"), "/gate.lua"));

/// The gate's Redis key. The scope sits in a hash tag, so every key of one gate lands on the
/// same Redis Cluster slot.
pub fn key(prefix: &str, scope: &Scope) -> String {
    format!("{prefix}:{{{}}}:gate", scope.as_str())
}

/// One operation on a gate.
#[derive(Debug, Clone, PartialEq)]
pub enum Op<'a> {
    /// May the request with this id go now?
    Admit(&'a str),
    /// Extend the cooldown by this many ms from now (never shorten it).
    Defer(Millis),
    /// The response to this request came back: if its admission anchored the refill, the
    /// refill restarts.
    Resume(&'a str),
    /// Spend a retry's cost from the shared budget, after crediting the refunds of the
    /// successes seen since the last charge.
    Charge {
        /// The retry's cost.
        cost: f64,
        /// Refunds owed to the budget.
        refund: f64,
    },
    /// Close admissions for this many ms (the quota is spent), or reopen with 0.
    Quota(Millis),
}

/// The script's arguments (after the key) for `op` on a gate with `rate` and an optional
/// budget capacity, each number written by `number` (any shortest round-trip writer: Lua's
/// `tonumber` reads them all). `now` is `None` in production (Redis's own clock).
pub fn args(
    op: &Op<'_>,
    rate: Rate,
    budget: Option<f64>,
    now: Option<Millis>,
    number: impl Fn(f64) -> String,
) -> Vec<String> {
    let (name, extra) = match op {
        Op::Admit(id) => ("admit", vec![id.to_string()]),
        Op::Defer(ms) => ("defer", vec![number(*ms)]),
        Op::Resume(id) => ("resume", vec![id.to_string()]),
        Op::Charge { cost, refund } => ("charge", vec![number(*cost), number(*refund)]),
        Op::Quota(ms) => ("quota", vec![number(*ms)]),
    };
    let mut args = vec![
        name.to_string(),
        now.map_or(String::new(), &number),
        number(rate.burst()),
        number(rate.ms_per_token()),
        number(MAX_PAUSE_MS),
        budget.map_or(String::new(), &number),
    ];
    args.extend(extra);
    args
}

/// The script's answer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Answer {
    /// Admitted; report the response with [`Op::Resume`] when `anchor`.
    Admitted {
        /// This admission paused the refill until its response.
        anchor: bool,
        /// Milliseconds until the next token (0: one is there now).
        next_ms: Millis,
    },
    /// Not yet: ask again in this many ms.
    Wait(Millis),
    /// The quota is spent for this many ms more.
    Exhausted(Millis),
    /// The budget paid for the retry.
    Charged,
    /// The budget could not pay.
    Refused,
    /// Done.
    Ok,
}

/// Reads `{code, number, number}`; `None` for anything the script never says.
pub fn answer(code: &str, value: &str, extra: &str) -> Option<Answer> {
    let n = decimal::parse(value)?;
    Some(match code {
        "admitted" => Answer::Admitted {
            anchor: n == 1.0,
            next_ms: decimal::parse(extra)?,
        },
        "wait" => Answer::Wait(n),
        "exhausted" => Answer::Exhausted(n),
        "charged" => Answer::Charged,
        "refused" => Answer::Refused,
        "ok" => Answer::Ok,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_hash_tag_per_scope() {
        let key = key("og", &Scope::of(Some("k"), None));
        assert!(
            key.starts_with("og:{key:") && key.ends_with("}:gate"),
            "{key}"
        );
        assert_eq!(key.matches('{').count(), 1);
    }

    #[test]
    fn arguments_follow_the_scripts_layout() {
        let rate = Rate::new(2.0, 2.0).unwrap();
        let text = |n: f64| n.to_string();
        let a = args(&Op::Admit("p-1"), rate, Some(500.0), Some(10.0), text);
        assert_eq!(a, ["admit", "10", "2", "500", "1000", "500", "p-1"]);
        let d = args(&Op::Defer(1000.0), rate, None, None, text);
        assert_eq!(d, ["defer", "", "2", "500", "1000", "", "1000"]);
    }

    #[test]
    fn reads_every_answer_and_refuses_garbage() {
        assert_eq!(
            answer("admitted", "1", "500"),
            Some(Answer::Admitted {
                anchor: true,
                next_ms: 500.0
            })
        );
        assert_eq!(answer("wait", "250", "0"), Some(Answer::Wait(250.0)));
        assert_eq!(answer("exhausted", "9", "0"), Some(Answer::Exhausted(9.0)));
        assert_eq!(answer("refused", "0", "0"), Some(Answer::Refused));
        assert_eq!(answer("nonsense", "0", "0"), None);
        assert_eq!(answer("wait", "soon", "0"), None);
        assert_eq!(answer("admitted", "0", ""), None);
    }

    #[test]
    fn the_script_knows_every_operation() {
        for op in ["'admit'", "'defer'", "'resume'", "'charge'", "'quota'"] {
            assert!(GATE_SCRIPT.contains(op), "{op}");
        }
    }
}

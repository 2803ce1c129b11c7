//! The Redis encoding of the admission authority: `gate.lua` runs the same transitions as
//! [`MemoryAuthority`](crate::core::authority::memory::MemoryAuthority), atomically, on Redis's clock, in one
//! hash per credential. This module is the contract with that script: its text, its keys, its
//! arguments and its answers. No I/O here.

pub mod cache;

use crate::core::authority::credits::CreditView;
use crate::core::authority::fair::{self, Fair, Shares};
use crate::core::authority::order;
use crate::core::authority::{AdmissionId, Answer, Op, Seen};
use crate::core::gate::store_link::StoreReply;
use crate::core::gates::fleet::Shared;
use crate::core::gates::scope::Scope;
use crate::core::parse::decimal;
use crate::core::rules::allowance::Rate;
use crate::core::rules::bucket::Count;
use crate::core::rules::bucket::MAX_PAUSE_MS;
use crate::core::rules::credits::Spread;
use crate::core::Millis;

/// The script, loaded once per client with `SCRIPT LOAD` and run with `EVALSHA`: `gate.lua`
/// without its comments (see `build.rs`).
pub const GATE_SCRIPT: &str = include_str!(concat!(env!("OUT_DIR"), "/gate.lua"));

/// What the learning gates of a credential share across a fleet (`learned.lua`), loaded and
/// run as the gate script is.
pub const LEARNED_SCRIPT: &str = include_str!(concat!(env!("OUT_DIR"), "/learned.lua"));

/// The key of what a credential's learning gates share: the credential's scope in a hash tag.
pub fn learned_key(prefix: &str, credential: &Scope) -> String {
    format!("{prefix}:{{{}}}:learned", credential.as_str())
}

/// A fact as a field and a value of the shared hash.
pub fn field(fact: &Shared, number: &dyn Fn(f64) -> String) -> (String, String) {
    match fact {
        Shared::First(limiter) => ("first".into(), limiter.clone()),
        Shared::Route(route, limiter) => (format!("r:{route}"), limiter.clone()),
        Shared::Estimate(scope, rate) => (
            format!("e:{scope}"),
            format!("{} {}", number(rate.burst()), number(rate.per_second())),
        ),
    }
}

/// The arguments of `learned.lua` that put `facts` in the shared hash.
pub fn put(facts: &[Shared], number: &dyn Fn(f64) -> String) -> Vec<String> {
    let mut args = vec!["put".to_string()];
    for fact in facts {
        let (field, value) = field(fact, number);
        args.extend([field, value]);
    }
    args
}

/// The facts of the shared hash as `learned.lua`'s `get` gives it: fields and values in turn.
pub fn read_all(flat: &[String]) -> Vec<Shared> {
    let pairs = flat.chunks_exact(2);
    pairs.filter_map(|pair| read(&pair[0], &pair[1])).collect()
}

/// The fact a field and value of the shared hash hold; `None` for anything else.
pub fn read(field: &str, value: &str) -> Option<Shared> {
    if field == "first" {
        return Some(Shared::First(value.to_owned()));
    }
    if let Some(route) = field.strip_prefix("r:") {
        return Some(Shared::Route(route.to_owned(), value.to_owned()));
    }
    let scope = field.strip_prefix("e:")?;
    let (burst, per_second) = value.split_once(' ')?;
    let number = |text: &str| decimal::parse(text).filter(|n| n.is_finite());
    let rate = Rate::new(number(burst)?, number(per_second)?).ok()?;
    Some(Shared::Estimate(scope.to_owned(), rate))
}

/// The gate's Redis key. The scope sits in a hash tag, so every key of one gate lands on the
/// same Redis Cluster slot.
pub fn key(prefix: &str, scope: &Scope) -> String {
    format!("{prefix}:{{{}}}:gate", scope.as_str())
}

/// An admission's name in Redis: the process's id and the admission's number, so one
/// process's anchor is never mistaken for another's.
pub fn admission_name(process: &str, id: AdmissionId) -> String {
    let mut name = String::with_capacity(process.len() + 21);
    name.push_str(process);
    name.push('-');
    name.push_str(&id.to_string());
    name
}

/// The number a process's claims go by in the order between the fleet's queues (see
/// `Order`): its id's FNV-1a hash, in 52 bits, not 0.
pub fn claimant(process: &str) -> f64 {
    let hash = process.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    ((hash >> 12) + 1) as f64
}

/// The fair order's clock and lanes as the script's answer gives them (its eighth element);
/// `None` for anything else.
pub fn shares(text: &str) -> Option<Shares> {
    let mut words = [0.0; fair::WORDS];
    let mut numbers = text.split(' ');
    for word in &mut words {
        *word = decimal::parse(numbers.next()?).filter(|n| n.is_finite() && *n >= 0.0)?;
    }
    numbers.next().is_none().then(|| Fair(&mut words).shares())
}

/// The script's arguments (after the key) for `op` on a gate with `rate` and an optional budget
/// capacity. Numbers are written by `number` (any shortest round-trip writer: Lua's `tonumber`
/// reads them all). `now` is `None` in production (Redis's own clock). `process` names this
/// process's admissions.
pub fn args(
    op: &Op,
    rate: Rate,
    budget: Option<f64>,
    now: Option<Millis>,
    process: &str,
    number: &dyn Fn(f64) -> String,
) -> Vec<String> {
    let maybe = |n: Option<f64>| n.map_or(String::new(), number);
    let (name, extra) = match op {
        Op::Admit {
            id,
            want,
            seen,
            account,
            head,
            credits,
        } => {
            let (kind, value, at, age) = match seen {
                Some(Seen::Remaining(r)) => (
                    number(r.limit as f64),
                    number(r.remaining as f64),
                    maybe(r.heard),
                    number(r.age_ms),
                ),
                Some(Seen::Count(Count::Exactly(n), at)) => {
                    ("is".into(), number(*n), number(*at), String::new())
                }
                Some(Seen::Count(Count::AtMost(n), at)) => {
                    ("max".into(), number(*n), number(*at), String::new())
                }
                None => (String::new(), String::new(), String::new(), String::new()),
            };
            let want = number(f64::from(*want));
            let account = if *account { "1" } else { "" }.to_owned();
            let name = admission_name(process, *id);
            let mut extra = vec![name, kind, value, want, at, age, account];
            if let Some(head) = head {
                let (lane, weight) = head
                    .lane
                    .map_or((0.0, 1.0), |(id, w)| (f64::from(id) + 1.0, w));
                let (grace, again) = order::timing(rate);
                let who = claimant(process);
                let waiting = f64::from(head.waiting);
                extra
                    .extend([who, head.waited_ms, lane, weight, grace, again, waiting].map(number));
            }
            if let Some(spend) = credits {
                extra.resize(14, String::new());
                let flag = |on: bool| if on { "1" } else { "" }.to_owned();
                extra.extend([number(spend.cost), flag(spend.reserve)]);
                extra.extend(spread_args(&spend.spread, number));
                extra.push(flag(spend.stated));
            }
            ("admit", extra)
        }
        Op::Resume { id } => ("resume", vec![admission_name(process, *id)]),
        Op::Feedback {
            cooldown_ms,
            remaining,
        } => (
            "feedback",
            vec![
                maybe(*cooldown_ms),
                maybe(remaining.map(|r| r.limit as f64)),
                maybe(remaining.map(|r| r.remaining as f64)),
                maybe(remaining.and_then(|r| r.heard)),
                maybe(remaining.map(|r| r.age_ms)),
            ],
        ),
        Op::ClearCooldown => ("clear", vec![]),
        Op::Charge { cost, refund } => ("charge", vec![number(*cost), number(*refund)]),
        Op::Quota { ms } => ("quota", vec![number(*ms)]),
        Op::Spent { spread, credits } => {
            let mut extra = spread_args(spread, number).to_vec();
            extra.push(number(*credits));
            ("spent", extra)
        }
        Op::Read { spread, reading } => {
            let mut extra = spread_args(spread, number).to_vec();
            extra.extend([
                maybe(reading.map(|r| r.used)),
                maybe(reading.map(|r| r.limit)),
                maybe(reading.map(|r| r.end_ms)),
            ]);
            ("read", extra)
        }
    };
    let mut args = vec![
        name.to_string(),
        maybe(now),
        number(rate.burst()),
        number(rate.ms_per_token()),
        number(MAX_PAUSE_MS),
        maybe(budget),
    ];
    args.extend(extra);
    args
}

/// The spread's settings as the script takes them: reserve, burst and refresh (ms).
fn spread_args(spread: &Spread, number: &dyn Fn(f64) -> String) -> [String; 3] {
    [spread.reserve, spread.burst_ms, spread.refresh_ms].map(number)
}

/// Reads the script's `{code, number, number, number, number}`; `None` for anything it never
/// says. `count` is how many an admission took and `seq` the first one's number (anything for
/// other answers).
pub fn answer(code: &str, value: &str, extra: &str, count: &str, seq: &str) -> Option<Answer> {
    let n = decimal::parse(value).filter(|n| n.is_finite())?;
    let flag = || match extra {
        "1" => Some(true),
        "0" => Some(false),
        _ => None,
    };
    Some(match code {
        "admitted" => Answer::Admitted {
            anchor: match value {
                "1" => true,
                "0" => false,
                _ => return None,
            },
            next_ms: decimal::parse(extra).filter(|n| n.is_finite())?,
            admissions: count.parse().ok().filter(|&n| n >= 1)?,
            seq: decimal::parse(seq).filter(|n| n.is_finite() && *n >= 0.0)?,
        },
        "wait" => Answer::Wait(n),
        "exhausted" => Answer::Exhausted(n),
        "cooldown" => Answer::Cooldown {
            cooldown_ms: n,
            slow: flag()?,
        },
        "resumed" => Answer::Resumed(n),
        "charged" => Answer::Charged(n),
        "refused" => Answer::Refused(n),
        "quota" => Answer::QuotaSet(n),
        "read" => Answer::Read,
        "credits" => Answer::Credits {
            used: n,
            limit: decimal::parse(extra).filter(|n| n.is_finite())?,
            per_ms: decimal::parse(count).filter(|n| n.is_finite())?,
        },
        _ => return None,
    })
}

/// The gate script's reply, its nine fields as text: the answer, the rate the store held
/// before the operation, the fair order after it and what it said of the shared spread.
/// `None` for an answer it never gives.
pub fn reply(fields: &[String; 9]) -> Option<StoreReply> {
    let [code, value, extra, count, seq, burst, ms_per_token, order, credits] = fields;
    Some(StoreReply {
        answer: answer(code, value, extra, count, seq)?,
        stored: stored_rate(burst, ms_per_token),
        shares: shares(order),
        credits: credit_view(credits),
    })
}

/// The shared spread's figures as the script's answer gives them (its ninth element): used,
/// limit, credits per ms, ms until the period ends, ms until another call of the cost asked
/// could have its credits (-1: none was asked about), and the scale of costs not stated. `None` for anything else (the
/// empty field of an answer that said nothing of it).
pub fn credit_view(text: &str) -> Option<CreditView> {
    let mut numbers = text
        .split(' ')
        .map(|t| decimal::parse(t).filter(|n| n.is_finite()));
    let mut next = || numbers.next().flatten();
    let view = CreditView {
        used: next()?,
        limit: next()?,
        per_ms: next()?,
        end_ms: next()?,
        next_ms: Some(next()?).filter(|n| *n >= 0.0),
        scale: next()?,
    };
    numbers.next().is_none().then_some(view)
}

/// The rate the script says the store held before the operation (its burst and milliseconds
/// per token); `None` for anything that is not one.
pub fn stored_rate(burst: &str, ms_per_token: &str) -> Option<Rate> {
    let number = |text: &str| decimal::parse(text).filter(|n| n.is_finite() && *n > 0.0);
    Rate::new(number(burst)?, 1000.0 / number(ms_per_token)?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::authority::Remaining;

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
        let admit = Op::Admit {
            credits: None,
            id: 1,
            want: 3,
            seen: None,
            account: true,
            head: None,
        };
        let a = args(&admit, rate, Some(500.0), Some(10.0), "p", &text);
        assert_eq!(
            a,
            ["admit", "10", "2", "500", "1000", "500", "p-1", "", "", "3", "", "", "1"]
        );
        let counted = Remaining {
            limit: 10,
            remaining: 0,
            heard: Some(41.0),
            age_ms: 620.5,
        };
        let admit = Op::Admit {
            credits: None,
            id: 1,
            want: 3,
            seen: Some(Seen::Remaining(counted)),
            account: false,
            head: None,
        };
        assert_eq!(
            args(&admit, rate, None, None, "p", &text)[6..],
            ["p-1", "10", "0", "3", "41", "620.5", ""]
        );
        let feedback = Op::Feedback {
            cooldown_ms: Some(1000.0),
            remaining: Some(Remaining {
                heard: None,
                ..counted
            }),
        };
        let o = args(&feedback, rate, None, None, "p", &text);
        assert_eq!(
            o,
            ["feedback", "", "2", "500", "1000", "", "1000", "10", "0", "", "620.5"]
        );
        let bare = Op::Feedback {
            cooldown_ms: None,
            remaining: None,
        };
        assert_eq!(
            args(&bare, rate, None, None, "p", &text)[6..],
            ["", "", "", "", ""]
        );
    }

    #[test]
    fn reads_every_answer_and_refuses_garbage() {
        assert_eq!(
            answer("admitted", "1", "500", "1", "41"),
            Some(Answer::Admitted {
                anchor: true,
                next_ms: 500.0,
                admissions: 1,
                seq: 41.0
            })
        );
        assert_eq!(
            answer("wait", "250", "0", "1", "0"),
            Some(Answer::Wait(250.0))
        );
        assert_eq!(
            answer("exhausted", "9", "0", "1", "0"),
            Some(Answer::Exhausted(9.0))
        );
        assert_eq!(
            answer("cooldown", "0", "1", "1", "0"),
            Some(Answer::Cooldown {
                cooldown_ms: 0.0,
                slow: true
            })
        );
        assert_eq!(
            answer("refused", "0", "0", "1", "0"),
            Some(Answer::Refused(0.0))
        );
        assert_eq!(answer("nonsense", "0", "0", "1", "0"), None);
        assert_eq!(answer("wait", "soon", "0", "1", "0"), None);
        assert_eq!(answer("wait", "inf", "0", "1", "0"), None);
        assert_eq!(answer("admitted", "0", "", "1", "0"), None);
        assert_eq!(answer("admitted", "2", "0", "1", "0"), None);
        assert_eq!(answer("cooldown", "0", "yes", "1", "0"), None);
        // How many an admission took: a whole number, at least one.
        assert!(matches!(
            answer("admitted", "0", "0", "7", "0"),
            Some(Answer::Admitted { admissions: 7, .. })
        ));
        for count in ["0", "1.5", "-1", "", "many"] {
            assert_eq!(answer("admitted", "0", "0", count, "0"), None, "{count}");
        }
    }

    #[test]
    fn shared_facts_read_back_as_written() {
        let text = |n: f64| n.to_string();
        for fact in [
            Shared::First("snapshot".into()),
            Shared::Route("GET /*/events/*".into(), "events".into()),
            Shared::Estimate("key:ab#events".into(), Rate::new(10.0, 9.5).unwrap()),
        ] {
            let (field, value) = field(&fact, &text);
            assert_eq!(read(&field, &value), Some(fact));
        }
        assert_eq!(read("e:x", "0 1"), None, "not an allowance");
        assert_eq!(read("e:x", "2"), None);
        assert_eq!(read("other", "x"), None);
        let key = learned_key("og", &Scope::of(Some("k"), None));
        assert!(
            key.starts_with("og:{key:") && key.ends_with("}:learned"),
            "{key}"
        );
        assert!(LEARNED_SCRIPT.contains("HGETALL") && !LEARNED_SCRIPT.contains("--"));
    }

    #[test]
    fn the_script_knows_every_operation() {
        for op in [
            "'admit'",
            "'resume'",
            "'feedback'",
            "'clear'",
            "'charge'",
            "'quota'",
        ] {
            assert!(GATE_SCRIPT.contains(op), "{op}");
        }
    }
}

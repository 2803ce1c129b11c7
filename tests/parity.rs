//! Parity of the two admission authorities: random sequences of operations run through the
//! store authority (the memory authority, and the order between processes' lines) and through
//! `gate.lua` on a real `redis-server` (started for the test by `tests/redis_support/`, on a
//! free loopback port), with the same virtual clock, must give identical answers, number for
//! number, and keep the same order. The Redis side runs the script synchronously.
//!
//! Both tests are `#[ignore]`d, so that `cargo test` on a machine without Redis still runs
//! everything else and says they did not run; `scripts/test.sh` runs them with
//! `cargo test --test parity -- --ignored`, and there a missing `redis-server` fails them.
#![cfg(not(target_arch = "wasm32"))]

mod redis_support;

use odds_gate::core::authority::credits::{CreditView, Reading, Spend};
use odds_gate::core::authority::fair::Shares;
use odds_gate::core::authority::memory::MemoryAuthority;
use odds_gate::core::authority::store::StoreAuthority;
use odds_gate::core::authority::{Answer, Head, Op, Remaining, Seen, Transitions};
use odds_gate::core::rules::allowance::Rate;
use odds_gate::core::rules::bucket::Count;
use odds_gate::core::rules::budget::RefillingConfig;
use odds_gate::core::rules::credits::Spread;
use odds_gate::core::Millis;
use odds_gate::store::{answer, args, claimant, credit_view, shares, GATE_SCRIPT};
use proptest::prelude::*;
use redis_support::{Connection, Reply, Server};

/// `gate.lua` on Redis as [`Transitions`]: each operation is one `EVALSHA`, on the caller's
/// clock.
struct RedisAuthority<'a> {
    connection: &'a mut Connection,
    sha: String,
    key: String,
    rate: Rate,
    budget: Option<f64>,
}

impl RedisAuthority<'_> {
    /// Runs `op` for `process`: the answer, the fair order and what of the shared spread the
    /// answer gives.
    fn apply_for(
        &mut self,
        now: Millis,
        process: &str,
        op: &Op,
    ) -> (Answer, Shares, Option<CreditView>) {
        let text = |n: f64| n.to_string();
        let argv = args(op, self.rate, self.budget, Some(now), process, &text);
        let mut parts = vec!["EVALSHA", &self.sha, "1", &self.key];
        parts.extend(argv.iter().map(String::as_str));
        match self.connection.command(&parts) {
            Reply::Array(items) => {
                let field = |i: usize| match &items[i] {
                    Reply::Bulk(s) => s.clone(),
                    other => panic!("unexpected reply field {other:?}"),
                };
                let answer = answer(&field(0), &field(1), &field(2), &field(3), &field(4))
                    .unwrap_or_else(|| panic!("unreadable answer {items:?}"));
                let shares = shares(&field(7)).unwrap_or_else(|| panic!("no order {items:?}"));
                let view = credit_view(&field(8));
                assert!(view.is_some() || field(8).is_empty(), "{items:?}");
                (answer, shares, view)
            }
            other => panic!("the script failed on {op:?}: {other:?}"),
        }
    }

    /// The order the hash keeps, as numbers.
    fn order(&mut self) -> Vec<f64> {
        match self.connection.command(&["HGET", &self.key, "order"]) {
            Reply::Bulk(s) => s.split(' ').map(|n| n.parse().unwrap()).collect(),
            other => panic!("no order field: {other:?}"),
        }
    }
}

fn load(connection: &mut Connection) -> String {
    connection.load(GATE_SCRIPT)
}

/// The processes that ask in order: their names, as their ids go to the script.
const PROCESSES: [&str; 3] = ["p", "q", "r"];

/// A period's end that readings of one period share (a sequence lasts 3 minutes at most):
/// learning from a delta needs two readings of the same period.
const PERIOD_END: Millis = 10_000_000.0;

/// An admission's head: which process asks, how long its head has waited, its lane, how many
/// wait in its line.
type Asking = (usize, Millis, Option<(u32, f64)>, u32);

#[derive(Debug, Clone)]
enum Step {
    /// An admission for this many waiting requests, after what a response said; an account
    /// call's (past a spent quota) when true; with a call's credits (its cost, whether it
    /// draws on the reserve, whether its cost is stated) where the sequence spreads its quota.
    Admit(
        u32,
        Option<Counted>,
        bool,
        Option<Asking>,
        Option<(f64, bool, bool)>,
    ),
    /// A `/usage` reading's answer (used, limit, ms to the period's end; none: the period
    /// ends at [`PERIOD_END`], as for every reading that says so), or none usable.
    Read(Option<(f64, f64, Option<Millis>)>),
    /// Credits a process spent on its own while the store was down, told when it is back.
    Spent(f64),
    /// An admission with a learning gate's count: exactly (or at most) this many tokens, as
    /// of the request admitted this many admissions back.
    Counted(bool, f64, usize),
    /// Resume the admission this many admissions back.
    Resume(usize),
    Feedback(Option<Millis>, Option<Counted>),
    Clear,
    Charge(f64, f64),
    Quota(Millis),
    /// A learning gate follows a new allowance, perhaps with the server's count of tokens; no
    /// operation of its own (see [`compare`]).
    Tune(Rate, Option<Count>),
}

fn step() -> impl Strategy<Value = Step> {
    let seen = prop::option::of((
        prop::sample::select(vec![1u64, 2, 5, 10, 20]),
        0u64..12,
        prop::option::of(0usize..5),
        prop_oneof![
            prop::sample::select(vec![0.0, 0.5, 20.0, 499.5, 2_000.0]),
            0.0..3_000.0f64
        ],
    ));
    let count = |exactly, n| match exactly {
        true => Count::Exactly(n),
        false => Count::AtMost(n),
    };
    let counts = prop::sample::select(vec![0.0, 0.5, 1.0, 3.0, 40.0]);
    // Half the admissions ask in order, as one of three processes, in one of six lanes (weights
    // among them that cost a fraction of a unit, and ones past 2^-21 and 2^32) or at the front.
    let lane = prop::option::of((
        0u32..6,
        prop::sample::select(vec![1.0, 9.0, 0.3, 1e-9, 7e9, 2.5, 7.0]),
    ));
    let asking = prop::option::of((
        0..PROCESSES.len(),
        prop::sample::select(vec![0.0, 0.0, 5.0, 250.0, 1_000.5]),
        lane,
        1u32..5,
    ));
    // A call's credits (costs above the bucket's cap and below a credit among them; enough
    // asked at no stated cost between two readings for the scale to learn, and stated costs
    // beside them).
    let credits = prop::option::of((
        prop::sample::select(vec![1.0, 1.0, 0.5, 5.0, 12.0, 40.0]),
        prop::bool::weighted(0.3),
        prop::bool::weighted(0.3),
    ));
    let rate = (
        prop::sample::select(vec![1.0, 2.0, 5.0, 20.0]),
        prop::sample::select(vec![0.5, 1.0, 2.0, 10.0, 1000.0]),
    )
        .prop_map(|(burst, per_second)| Rate::new(burst, per_second).unwrap());
    prop_oneof![
        6 => (prop::sample::select(vec![1u32, 1, 2, 3, 64]), seen.clone(), prop::bool::weighted(0.2), asking, credits)
            .prop_map(|(want, seen, account, head, credits)| Step::Admit(want, seen, account, head, credits)),
        2 => prop::option::of((
                prop::sample::select(vec![0.0, 3.0, 50.0, 94.0, 99.5, 100.0, 400.0]),
                prop::sample::select(vec![100.0, 1000.0]),
                prop::option::weighted(
                    0.4,
                    prop::sample::select(vec![0.0, 500.0, 20_000.0, 3_600_000.0]),
                ),
            ))
            .prop_map(Step::Read),
        2 => (any::<bool>(), counts.clone(), 0usize..5)
            .prop_map(|(exactly, n, back)| Step::Counted(exactly, n, back)),
        2 => (0usize..4).prop_map(Step::Resume),
        2 => (prop::option::of(0.0..5_000.0f64), seen).prop_map(|(c, r)| Step::Feedback(c, r)),
        1 => Just(Step::Clear),
        // Rare: told spending restarts the scale's count, which the floors below need to learn.
        1 => prop::option::weighted(0.1, prop::sample::select(vec![1.0, 7.5, 300.0]))
            .prop_map(|spent| spent.map_or(Step::Clear, Step::Spent)),
        2 => (prop::sample::select(vec![0.0, 5.0, 10.0]), prop::sample::select(vec![0.0, 1.0, 5.0, 10.0]))
            .prop_map(|(cost, refund)| Step::Charge(cost, refund)),
        1 => prop::sample::select(vec![0.0, 0.0, 800.0, 5_000.0]).prop_map(Step::Quota),
        3 => (rate, prop::option::of((any::<bool>(), counts)))
            .prop_map(move |(rate, told)| Step::Tune(rate, told.map(|(e, n)| count(e, n)))),
    ]
}

/// A remaining count of a limit, the highest number heard of when it came (this many
/// admissions back; none: told as it came), and its request's age.
type Counted = (u64, u64, Option<usize>, Millis);

fn remaining(seen: Option<Counted>, numbers: &[f64]) -> Option<Remaining> {
    seen.map(|(limit, remaining, back, age_ms)| Remaining {
        limit,
        remaining,
        heard: back.map(|back| numbers.iter().rev().nth(back).copied().unwrap_or(0.0)),
        age_ms,
    })
}

/// What one sequence exercised.
#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    /// Operations run through both authorities.
    ops: usize,
    /// Operations that brought the store a rate other than the one it last refilled at.
    retuned: usize,
    /// Waits checked against [`MemoryAuthority::predict`].
    predicted: usize,
    /// Admissions asked in order.
    ordered: usize,
    /// Of those, asked while another process held a claim.
    contested: usize,
    /// Admissions that took a call's credits with its token.
    spent: usize,
    /// Admissions that claimed a `/usage` reading.
    claimed: usize,
    /// Readings applied.
    read: usize,
    /// Of those, readings that changed the scale of costs not stated.
    scaled: usize,
    /// Answers that said another call's credits come later (a [`CreditView`]'s `next_ms`).
    viewed: usize,
    /// Credits spent alone, told.
    told_spent: usize,
}

/// Runs `steps` (each after a pause) through both authorities, for a gate starting at `rate`;
/// every answer, or the first difference.
///
/// A rate change goes to the store as production's store path sends it (the store link's
/// `Authority::tune`): nothing is sent at the change; the new rate is what every later
/// EVALSHA passes, so the store hears of it with the next operation of any kind, at that
/// operation's time. The script then refills at the rate it last refilled at up to that time,
/// and switches (`TokenBucket::retune`, tokens clamped to the new burst). So the memory side
/// here calls `tune(now, rate, None)` at that next operation's `now`, not at the change: from
/// the change to the next operation the bucket refills at the old rate, on both sides. A count
/// that came with the change waits in the gate's one slot for the next admission
/// (`Seen::Count`), which a later word (an admission's own remaining count or count) replaces.
/// A hash the store does not hold (never used, or expired once idle) is a full bucket at the
/// rate it is first called with, so the memory authority is made at the first operation, with
/// the rate then.
fn compare(
    connection: &mut Connection,
    sha: &str,
    key: &str,
    rate: Rate,
    budget: Option<f64>,
    spread: Option<Spread>,
    steps: &[(Millis, Step)],
) -> Result<(Vec<Answer>, Tally), String> {
    let config = budget.map(|capacity| RefillingConfig {
        capacity,
        ..RefillingConfig::DEFAULT
    });
    let mut kept: Option<StoreAuthority> = None;
    let mut redis = RedisAuthority {
        connection,
        sha: sha.to_string(),
        key: key.to_string(),
        rate,
        budget,
    };
    let mut told: Option<(Count, f64)> = None;
    let (mut now, mut admitted, mut answers) = (1_000.25, Vec::new(), Vec::new());
    // The numbers of the requests admitted so far (what a count is as of).
    let mut numbers: Vec<f64> = Vec::new();
    let number =
        |numbers: &Vec<f64>, back: usize| numbers.iter().rev().nth(back).copied().unwrap_or(0.0);
    let mut tally = Tally::default();
    for (i, (pause, step)) in steps.iter().enumerate() {
        now += pause;
        let op = match step {
            Step::Tune(rate, count) => {
                redis.rate = *rate;
                if let Some(count) = count {
                    told = Some((*count, number(&numbers, 0)));
                }
                continue;
            }
            Step::Admit(want, seen, account, asking, credits) => Op::Admit {
                id: i as u64,
                credits: spread
                    .zip(*credits)
                    .map(|(spread, (cost, reserve, stated))| Spend {
                        cost,
                        stated,
                        reserve,
                        spread,
                    }),
                want: *want,
                account: *account,
                head: asking.map(|(_, waited_ms, lane, waiting)| Head {
                    waited_ms,
                    lane,
                    waiting,
                }),
                seen: match remaining(*seen, &numbers) {
                    Some(remaining) => {
                        told = None;
                        Some(Seen::Remaining(remaining))
                    }
                    None => told.take().map(|(count, at)| Seen::Count(count, at)),
                },
            },
            Step::Counted(exactly, n, back) => {
                told = None;
                let count = match exactly {
                    true => Count::Exactly(*n),
                    false => Count::AtMost(*n),
                };
                Op::Admit {
                    id: i as u64,
                    want: 1,
                    seen: Some(Seen::Count(count, number(&numbers, *back))),
                    account: false,
                    head: None,
                    credits: None,
                }
            }
            Step::Read(reading) => match spread {
                Some(spread) => Op::Read {
                    spread,
                    reading: reading.map(|(used, limit, end_ms)| Reading {
                        used,
                        limit,
                        end_ms: end_ms.unwrap_or(PERIOD_END - now),
                    }),
                },
                None => continue,
            },
            Step::Spent(credits) => match spread {
                Some(spread) => Op::Spent {
                    spread,
                    credits: *credits,
                },
                None => continue,
            },
            Step::Resume(back) => Op::Resume {
                id: admitted
                    .iter()
                    .rev()
                    .nth(*back)
                    .map_or(u64::MAX, |&(id, _)| id),
            },
            Step::Feedback(cooldown_ms, seen) => Op::Feedback {
                cooldown_ms: *cooldown_ms,
                remaining: remaining(*seen, &numbers),
            },
            Step::Clear => Op::ClearCooldown,
            Step::Charge(cost, refund) => Op::Charge {
                cost: *cost,
                refund: *refund,
            },
            Step::Quota(ms) => Op::Quota { ms: *ms },
        };
        let store = kept.get_or_insert_with(|| StoreAuthority::new(redis.rate, config, now));
        if store.memory.rate() != redis.rate {
            store.follow(now, redis.rate);
            tally.retuned += 1;
        }
        // What the memory authority predicts just before an admission with nothing to take in
        // first (a count or remaining changes the bucket before the admission decides), and a
        // copy to try it on; out of order (in order, a wait may be for another process's head).
        let before = matches!(
            op,
            Op::Admit {
                seen: None,
                head: None,
                credits: None,
                ..
            }
        )
        .then(|| (store.memory.predict(now, 0), store.memory.clone()));
        // An admission's name in Redis is its process's: a resume names the one that admitted.
        let process = match step {
            Step::Admit(_, _, _, Some((p, ..)), _) => PROCESSES[*p],
            Step::Resume(back) => admitted.iter().rev().nth(*back).map_or("p", |&(_, p)| p),
            _ => PROCESSES[0],
        };
        let who = claimant(process);
        let contested = store.order()[14..]
            .chunks_exact(4)
            .any(|c| c[0] != 0.0 && c[0] != who);
        let scale = store.memory.shared_credits().scale();
        let a = store.apply_for(now, who, redis.rate, &op);
        let view = store.credit_view(now, &op);
        let (b, order, said) = redis.apply_for(now, process, &op);
        if a != b || view != said {
            return Err(format!(
                "step {i} at {now}: {op:?}: memory {a:?} {view:?}, redis {b:?} {said:?}"
            ));
        }
        tally.viewed += usize::from(view.is_some_and(|v| v.next_ms.is_some_and(|ms| ms > 0.0)));
        if order != store.shares() || redis.order() != store.order() {
            return Err(format!(
                "step {i} at {now}: {op:?}: the order differs: memory {:?}, redis {:?}",
                store.order(),
                redis.order()
            ));
        }
        match (&op, a) {
            (
                Op::Admit {
                    credits: Some(_), ..
                },
                Answer::Admitted { .. },
            ) => tally.spent += 1,
            (
                Op::Admit {
                    credits: Some(_), ..
                },
                Answer::Read,
            ) => tally.claimed += 1,
            (Op::Spent { .. }, _) => tally.told_spent += 1,
            (Op::Read { .. }, _) => {
                tally.read += 1;
                tally.scaled += usize::from(store.memory.shared_credits().scale() != scale);
            }
            _ => {}
        }
        if let Op::Admit { head: Some(_), .. } = op {
            tally.ordered += 1;
            tally.contested += usize::from(contested);
        }
        if let (Some((predicted, mut copy)), Answer::Wait(ms)) = (before, a) {
            check_prediction(now, ms, predicted, &mut copy, &op)
                .map_err(|e| format!("step {i} at {now}: {op:?} answered Wait({ms}): {e}"))?;
            tally.predicted += 1;
        }
        if let (
            Op::Admit { id, .. },
            Answer::Admitted {
                seq, admissions, ..
            },
        ) = (&op, a)
        {
            admitted.push((*id, process));
            numbers.extend((0..admissions).map(|k| seq + f64::from(k)));
        }
        answers.push(a);
        tally.ops += 1;
    }
    Ok((answers, tally))
}

/// An admission at `now` answered `Wait(ms)`, and `predict(now, 0)` said `predicted` just
/// before it, in a state `copy` keeps. The script rounds a wait up to a whole ms, at least 1,
/// so the prediction is never a whole ms before the answer's time; when the bucket is the
/// reason (no cooldown) it is never after it either (the cooldown's wait says nothing of the
/// tokens: the prediction can be later). And unless the refill is paused (a lower bound
/// then), the prediction is a time the admission succeeds, nothing else changing.
fn check_prediction(
    now: Millis,
    ms: Millis,
    predicted: Millis,
    copy: &mut MemoryAuthority,
    op: &Op,
) -> Result<(), String> {
    if predicted <= now + ms - 1.0 {
        return Err(format!("predicted {predicted}, a whole ms early"));
    }
    let cooldown = now < copy.cooldown_until();
    if !cooldown && predicted > now + ms {
        return Err(format!("predicted {predicted}, after the bucket's wait"));
    }
    let [_, _, paused, ..] = copy.save();
    if !paused.is_finite() {
        let then = copy.apply(predicted, op);
        if !matches!(then, Answer::Admitted { .. }) {
            return Err(format!(
                "predicted {predicted}, but then it answers {then:?}"
            ));
        }
    }
    Ok(())
}

/// The review's example: a gate at burst 1, 1/s whose learned rate becomes 10/s. The bucket
/// refills at 1/s until the store hears of 10/s, with the next operation.
#[test]
#[ignore = "needs redis-server"]
fn a_rate_change_reaches_the_store_with_the_next_operation() {
    let server = Server::start();
    let mut connection = Connection::open(server.port);
    let sha = load(&mut connection);
    let (slow, fast) = (Rate::new(1.0, 1.0).unwrap(), Rate::new(1.0, 10.0).unwrap());
    let start = [
        (0.0, Step::Admit(1, None, false, None, None)),
        (0.0, Step::Resume(0)),
    ];
    // Changed at 500 ms, told at 500 ms: half a token at 1/s, the other half at 10/s.
    // Changed at 500 ms, told at 900 ms: 0.9 of a token at 1/s, the rest at 10/s.
    for (i, (told_after, wait)) in [(0.0, 50.0), (400.0, 10.0)].into_iter().enumerate() {
        let mut steps = start.to_vec();
        steps.push((500.0, Step::Tune(fast, None)));
        steps.push((told_after, Step::Admit(1, None, false, None, None)));
        let key = format!("og:{{parity-example-{i}}}:gate");
        let (answers, _) = compare(&mut connection, &sha, &key, slow, None, None, &steps).unwrap();
        assert_eq!(answers.last(), Some(&Answer::Wait(wait)), "{steps:?}");
    }
}

/// A shared spread learns what calls of no stated cost cost, in Lua as in memory: 20 credits
/// asked at no stated cost and 7 stated, then a reading that counts 67: the 20 cost 60 (a
/// scale of 3), all of it the callers' own (none left to others: the refill is the spread's).
#[test]
#[ignore = "needs redis-server"]
fn a_reading_teaches_the_scale_in_the_script_as_in_memory() {
    let server = Server::start();
    let mut connection = Connection::open(server.port);
    let sha = load(&mut connection);
    let rate = Rate::new(10.0, 1000.0).unwrap();
    let credits = |cost, stated| Step::Admit(1, None, false, None, Some((cost, false, stated)));
    let mut steps = vec![
        (0.0, credits(1.0, false)),
        (5.0, Step::Read(Some((0.0, 100_000.0, None)))),
    ];
    steps.extend((0..4).map(|_| (10.0, credits(5.0, false))));
    steps.push((10.0, credits(7.0, true)));
    steps.push((Spread::DEFAULT.refresh_ms, credits(1.0, false)));
    steps.push((5.0, Step::Read(Some((67.0, 100_000.0, None)))));
    let key = "og:{parity-scale}:gate";
    let spread = Some(Spread::DEFAULT);
    let (answers, tally) = compare(&mut connection, &sha, key, rate, None, spread, &steps).unwrap();
    assert_eq!(tally.scaled, 1, "{answers:?}");
    assert_eq!((answers[0], answers[7]), (Answer::Read, Answer::Read));
    let now = 1_000.25 + steps.iter().map(|(pause, _)| pause).sum::<f64>();
    let spread = 95_000.0 - 67.0;
    match answers[8] {
        Answer::Credits { used, per_ms, .. } => {
            assert_eq!(used, 67.0);
            let alone = spread / (PERIOD_END - now);
            assert!((per_ms - alone).abs() < 1e-12, "{per_ms} {alone}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
#[ignore = "needs redis-server"]
fn the_lua_script_and_the_memory_authority_give_the_same_answers() {
    let server = Server::start();
    let connection = std::cell::RefCell::new(Connection::open(server.port));
    let sha = load(&mut connection.borrow_mut());
    let scenario = (
        (
            1u32..6,
            prop::sample::select(vec![0.5, 2.0, 3.0, 10.0, 1000.0]),
        ),
        prop::option::of(prop::sample::select(vec![10.0, 30.0])),
        prop::option::of((
            prop::sample::select(vec![0.0, 0.05, 0.5]),
            prop::sample::select(vec![1_000.0, 60_000.0]),
            prop::sample::select(vec![500.0, 5_000.0, 900_000.0]),
        )),
        prop::collection::vec(
            (
                prop_oneof![Just(0.0), 0.0..50.0f64, 0.0..3_000.0f64, 0.5..1.5f64],
                step(),
            ),
            1..60,
        ),
    );
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(800));
    let (cases, total) = (
        std::cell::Cell::new(0),
        std::cell::Cell::new(Tally::default()),
    );
    runner
        .run(&scenario, |((burst, per_second), budget, spread, steps)| {
            let spread = spread.map(|(reserve, burst_ms, refresh_ms)| Spread {
                reserve,
                burst_ms,
                refresh_ms,
            });
            cases.set(cases.get() + 1);
            let key = format!("og:{{parity-{}}}:gate", cases.get());
            let rate = Rate::new(f64::from(burst), per_second).unwrap();
            let mut connection = connection.borrow_mut();
            let (_, done) = compare(&mut connection, &sha, &key, rate, budget, spread, &steps)
                .map_err(TestCaseError::fail)?;
            let sum = total.get();
            total.set(Tally {
                ops: sum.ops + done.ops,
                retuned: sum.retuned + done.retuned,
                predicted: sum.predicted + done.predicted,
                ordered: sum.ordered + done.ordered,
                contested: sum.contested + done.contested,
                spent: sum.spent + done.spent,
                claimed: sum.claimed + done.claimed,
                read: sum.read + done.read,
                scaled: sum.scaled + done.scaled,
                viewed: sum.viewed + done.viewed,
                told_spent: sum.told_spent + done.told_spent,
            });
            Ok(())
        })
        .unwrap();
    let total = total.get();
    eprintln!(
        "{} sequences, {} operations ({} brought a new rate, {} waits checked against \
         predict, {} admissions in order, {} of them while another process held a claim; {} \
         took credits, {} claimed a reading, {} readings, {} of them changed the scale; {} \
         answers said credit comes later, {} told credits spent alone): identical answers, \
         order and credit figures",
        cases.get(),
        total.ops,
        total.retuned,
        total.predicted,
        total.ordered,
        total.contested,
        total.spent,
        total.claimed,
        total.read,
        total.scaled,
        total.viewed,
        total.told_spent
    );
    // Floors that say each kind was exercised: waits checked against predict ran 470 to 550
    // across random runs since the credit draws joined the mix (more than 500 failed runs).
    assert!(total.ops > 1_000 && total.retuned > 500 && total.predicted > 350);
    assert!(total.ordered > 1_000 && total.contested > 500);
    assert!(total.spent > 100 && total.claimed > 200 && total.read > 500);
    // 586 in one run: answers that said another call's credits come later.
    assert!(total.viewed > 300, "{}", total.viewed);
    assert!(total.told_spent > 20, "{}", total.told_spent);
    // 4 to 14 seen across random runs: a scale is learned from readings of one period with
    // 10 credits asked at no stated cost between them; the example above checks its value.
    assert!(total.scaled > 2, "{}", total.scaled);
}

//! Parity of the two admission authorities: random sequences of operations run through the
//! memory authority and through `gate.lua` on a real `redis-server` (started here, on a free
//! loopback port), with the same virtual clock, must give identical answers, number for number.
//! The Redis side implements the same [`Authority`] trait, by running the script synchronously.
#![cfg(not(target_arch = "wasm32"))]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use odds_gate::core::authority::memory::MemoryAuthority;
use odds_gate::core::authority::{Answer, Authority, Op, Remaining, Seen};
use odds_gate::core::rules::allowance::Rate;
use odds_gate::core::rules::bucket::Count;
use odds_gate::core::rules::budget::RefillingConfig;
use odds_gate::core::Millis;
use odds_gate::store::{answer, args, GATE_SCRIPT};
use proptest::prelude::*;

/// A throwaway `redis-server`, stopped on drop.
struct Server {
    child: Child,
    port: u16,
}

impl Server {
    fn start() -> Option<Server> {
        let port = TcpListener::bind("127.0.0.1:0")
            .ok()?
            .local_addr()
            .ok()?
            .port();
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let server = Server { child, port };
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "redis-server did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(server)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Just enough RESP to load the script and run it.
struct Connection {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

#[derive(Debug)]
enum Reply {
    Bulk(String),
    Array(Vec<Reply>),
}

impl Connection {
    fn open(port: u16) -> Connection {
        let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect to redis-server");
        stream.set_nodelay(true).unwrap();
        Connection {
            reader: BufReader::new(stream.try_clone().unwrap()),
            writer: stream,
        }
    }

    fn command(&mut self, parts: &[&str]) -> Reply {
        let mut out = format!("*{}\r\n", parts.len());
        for part in parts {
            out.push_str(&format!("${}\r\n{part}\r\n", part.len()));
        }
        self.writer.write_all(out.as_bytes()).unwrap();
        self.reply()
    }

    fn reply(&mut self) -> Reply {
        let mut line = String::new();
        self.reader.read_line(&mut line).unwrap();
        let (kind, rest) = line.trim_end().split_at(1);
        match kind {
            "$" => {
                let len: usize = rest.parse().unwrap();
                let mut data = vec![0; len + 2];
                self.reader.read_exact(&mut data).unwrap();
                Reply::Bulk(String::from_utf8_lossy(&data[..len]).into_owned())
            }
            "*" => {
                let n: usize = rest.parse().unwrap();
                Reply::Array((0..n).map(|_| self.reply()).collect())
            }
            _ => panic!("redis answered {line:?}"),
        }
    }
}

/// `gate.lua` on Redis as an [`Authority`]: each operation is one `EVALSHA`, on the caller's
/// clock.
struct RedisAuthority<'a> {
    connection: &'a mut Connection,
    sha: String,
    key: String,
    rate: Rate,
    budget: Option<f64>,
}

impl Authority for RedisAuthority<'_> {
    fn apply(&mut self, now: Millis, op: &Op) -> Answer {
        let text = |n: f64| n.to_string();
        let argv = args(op, self.rate, self.budget, Some(now), "p", &text);
        let mut parts = vec!["EVALSHA", &self.sha, "1", &self.key];
        parts.extend(argv.iter().map(String::as_str));
        match self.connection.command(&parts) {
            Reply::Array(items) => {
                let field = |i: usize| match &items[i] {
                    Reply::Bulk(s) => s.clone(),
                    other => panic!("unexpected reply field {other:?}"),
                };
                answer(&field(0), &field(1), &field(2), &field(3))
                    .unwrap_or_else(|| panic!("unreadable answer {items:?}"))
            }
            other => panic!("the script failed on {op:?}: {other:?}"),
        }
    }
}

fn load(connection: &mut Connection) -> String {
    match connection.command(&["SCRIPT", "LOAD", GATE_SCRIPT]) {
        Reply::Bulk(sha) => sha,
        other => panic!("SCRIPT LOAD failed: {other:?}"),
    }
}

#[derive(Debug, Clone)]
enum Step {
    /// An admission for this many waiting requests, after what a response said.
    Admit(u32, Option<(u64, u64)>),
    /// An admission with a learning gate's count: exactly (or at most) this many tokens.
    Counted(bool, f64),
    /// Resume the admission this many admissions back.
    Resume(usize),
    Observe(Option<Millis>, Option<(u64, u64)>),
    Clear,
    Charge(f64, f64),
    Quota(Millis),
}

fn step() -> impl Strategy<Value = Step> {
    let seen = prop::option::of((prop::sample::select(vec![1u64, 2, 5, 10, 20]), 0u64..12));
    prop_oneof![
        6 => (prop::sample::select(vec![1u32, 1, 2, 3, 64]), seen.clone())
            .prop_map(|(want, seen)| Step::Admit(want, seen)),
        2 => (any::<bool>(), prop::sample::select(vec![0.0, 0.5, 1.0, 3.0, 40.0]))
            .prop_map(|(exactly, n)| Step::Counted(exactly, n)),
        2 => (0usize..4).prop_map(Step::Resume),
        2 => (prop::option::of(0.0..5_000.0f64), seen).prop_map(|(c, r)| Step::Observe(c, r)),
        1 => Just(Step::Clear),
        2 => (prop::sample::select(vec![0.0, 5.0, 10.0]), prop::sample::select(vec![0.0, 1.0, 5.0, 10.0]))
            .prop_map(|(cost, refund)| Step::Charge(cost, refund)),
        1 => prop::sample::select(vec![0.0, 0.0, 800.0, 5_000.0]).prop_map(Step::Quota),
    ]
}

fn remaining(seen: Option<(u64, u64)>) -> Option<Remaining> {
    seen.map(|(limit, remaining)| Remaining { limit, remaining })
}

/// Runs `steps` (each after a pause) through both authorities; the first difference, if any.
fn compare(
    connection: &mut Connection,
    sha: &str,
    key: &str,
    rate: Rate,
    budget: Option<f64>,
    steps: &[(Millis, Step)],
) -> Result<usize, String> {
    let config = budget.map(|capacity| RefillingConfig {
        capacity,
        ..RefillingConfig::DEFAULT
    });
    let start = 1_000.25;
    let mut memory = MemoryAuthority::new(rate, config, start);
    let mut redis = RedisAuthority {
        connection,
        sha: sha.to_string(),
        key: key.to_string(),
        rate,
        budget,
    };
    let (mut now, mut admitted) = (start, Vec::new());
    for (i, (pause, step)) in steps.iter().enumerate() {
        now += pause;
        let op = match step {
            Step::Admit(want, seen) => Op::Admit {
                id: i as u64,
                want: *want,
                seen: remaining(*seen).map(Seen::Remaining),
            },
            Step::Counted(exactly, n) => Op::Admit {
                id: i as u64,
                want: 1,
                seen: Some(Seen::Count(match exactly {
                    true => Count::Exactly(*n),
                    false => Count::AtMost(*n),
                })),
            },
            Step::Resume(back) => Op::Resume {
                id: admitted
                    .iter()
                    .rev()
                    .nth(*back)
                    .copied()
                    .unwrap_or(u64::MAX),
            },
            Step::Observe(cooldown_ms, seen) => Op::Observe {
                cooldown_ms: *cooldown_ms,
                remaining: remaining(*seen),
            },
            Step::Clear => Op::ClearCooldown,
            Step::Charge(cost, refund) => Op::Charge {
                cost: *cost,
                refund: *refund,
            },
            Step::Quota(ms) => Op::Quota { ms: *ms },
        };
        let (a, b) = (memory.apply(now, &op), redis.apply(now, &op));
        if a != b {
            return Err(format!(
                "step {i} at {now}: {op:?}: memory {a:?}, redis {b:?}"
            ));
        }
        if let (Op::Admit { id, .. }, Answer::Admitted { .. }) = (&op, a) {
            admitted.push(*id);
        }
    }
    Ok(steps.len())
}

#[test]
fn the_lua_script_and_the_memory_authority_give_the_same_answers() {
    let Some(server) = Server::start() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must have redis-server (scripts/setup.sh installs it)"
        );
        eprintln!("skipped: no redis-server on PATH");
        return;
    };
    let connection = std::cell::RefCell::new(Connection::open(server.port));
    let sha = load(&mut connection.borrow_mut());
    let scenario = (
        (
            1u32..6,
            prop::sample::select(vec![0.5, 2.0, 3.0, 10.0, 1000.0]),
        ),
        prop::option::of(prop::sample::select(vec![10.0, 30.0])),
        prop::collection::vec(
            (
                prop_oneof![Just(0.0), 0.0..50.0f64, 0.0..3_000.0f64, 0.5..1.5f64],
                step(),
            ),
            1..60,
        ),
    );
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(600));
    let (cases, ops) = (std::cell::Cell::new(0), std::cell::Cell::new(0));
    runner
        .run(&scenario, |((burst, per_second), budget, steps)| {
            cases.set(cases.get() + 1);
            let key = format!("og:{{parity-{}}}:gate", cases.get());
            let rate = Rate::new(f64::from(burst), per_second).unwrap();
            let mut connection = connection.borrow_mut();
            let done = compare(&mut connection, &sha, &key, rate, budget, &steps)
                .map_err(TestCaseError::fail)?;
            ops.set(ops.get() + done);
            Ok(())
        })
        .unwrap();
    eprintln!(
        "{} sequences, {} operations: identical answers",
        cases.get(),
        ops.get()
    );
    assert!(ops.get() > 1_000);
}

//! What the parity tests share to run the store's scripts on a real Redis: a throwaway
//! `redis-server` on a free loopback port, and just enough RESP to load a script and run it.
//! One copy, so every parity suite starts its server the same careful way.
#![allow(dead_code)] // each suite uses its own subset

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A throwaway `redis-server`, stopped on drop.
pub struct Server {
    child: Child,
    pub port: u16,
}

impl Server {
    /// Starts one; a test asked to run never passes without it.
    pub fn start() -> Server {
        // One start at a time: a port just freed can be handed out again, and two servers
        // told the same port would leave both tests on one redis-server, which the first to
        // finish stops under the other.
        static STARTING: Mutex<()> = Mutex::new(());
        let _one = STARTING.lock().unwrap_or_else(|e| e.into_inner());
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free loopback port")
            .port();
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot run redis-server ({e}): scripts/setup.sh puts one on PATH")
            });
        let mut server = Server { child, port };
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "redis-server did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        // Listening, and ours: a server that could not take the port has exited.
        assert!(
            matches!(server.child.try_wait(), Ok(None)),
            "redis-server exited"
        );
        server
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Just enough RESP to load a script and run it.
pub struct Connection {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

/// A RESP2 reply.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    Bulk(String),
    Array(Vec<Reply>),
    Integer(i64),
    /// A nil bulk or array (Lua's `false`, a missing field).
    Nil,
    /// A status (`+OK`).
    Status(String),
    /// An error (`-ERR ...`): a script that failed.
    Error(String),
}

impl Connection {
    pub fn open(port: u16) -> Connection {
        let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect to redis-server");
        stream.set_nodelay(true).unwrap();
        Connection {
            reader: BufReader::new(stream.try_clone().unwrap()),
            writer: stream,
        }
    }

    pub fn command(&mut self, parts: &[&str]) -> Reply {
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
            "$" if rest == "-1" => Reply::Nil,
            "$" => {
                let len: usize = rest.parse().unwrap();
                let mut data = vec![0; len + 2];
                self.reader.read_exact(&mut data).unwrap();
                Reply::Bulk(String::from_utf8_lossy(&data[..len]).into_owned())
            }
            "*" if rest == "-1" => Reply::Nil,
            "*" => {
                let n: usize = rest.parse().unwrap();
                Reply::Array((0..n).map(|_| self.reply()).collect())
            }
            ":" => Reply::Integer(rest.parse().unwrap()),
            "+" => Reply::Status(rest.to_owned()),
            "-" => Reply::Error(rest.to_owned()),
            _ => panic!("redis answered {line:?}"),
        }
    }

    /// Loads `script`: its SHA1, for [`Connection::eval`].
    pub fn load(&mut self, script: &str) -> String {
        match self.command(&["SCRIPT", "LOAD", script]) {
            Reply::Bulk(sha) => sha,
            other => panic!("SCRIPT LOAD failed: {other:?}"),
        }
    }

    /// Runs the script loaded as `sha` on `key` with `args`, as production does (`EVALSHA`).
    pub fn eval(&mut self, sha: &str, key: &str, args: &[String]) -> Reply {
        let mut parts = vec!["EVALSHA", sha, "1", key];
        parts.extend(args.iter().map(String::as_str));
        self.command(&parts)
    }
}

impl Reply {
    /// An array of bulk strings as its strings, a nil among them as "" (as the bindings read a
    /// script's reply); panics naming the reply otherwise.
    #[track_caller]
    pub fn strings(&self) -> Vec<String> {
        let item = |reply: &Reply| match reply {
            Reply::Bulk(text) => text.clone(),
            Reply::Nil => String::new(),
            other => panic!("not a string: {other:?} in {self:?}"),
        };
        match self {
            Reply::Array(items) => items.iter().map(item).collect(),
            other => panic!("not an array: {other:?}"),
        }
    }
}

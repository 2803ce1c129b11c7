//! The contract with `cache.lua`, the fleet's shared cache: its text, keys, arguments and
//! answers. What they mean is the core's (`rules::shared_cache`).

use crate::core::gates::scope::RequestKey;
use crate::core::parse::decimal;
use crate::core::rules::shared_cache::{self, Asked, CLAIM_MS};
use crate::core::Millis;

/// The script, loaded and run as the gate's is.
pub const CACHE_SCRIPT: &str = include_str!(concat!(env!("OUT_DIR"), "/cache.lua"));

/// The Redis key of a request's entry and claim: the prefix and its shared name (the
/// credential's scope in a hash tag, as the gate's key).
pub fn cache_key(prefix: &str, key: &RequestKey) -> String {
    format!("{prefix}:{}", shared_name(key))
}

/// The shared name of a request (`rules::shared_cache::name`).
pub fn shared_name((scope, url, identity): &RequestKey) -> String {
    shared_cache::name(scope.as_str(), url, identity)
}

/// The arguments of `get`: `process` asks, and claims the fetch for [`CLAIM_MS`] when nobody
/// holds it and no fresh entry is there.
pub fn get(process: &str, number: &dyn Fn(f64) -> String) -> Vec<String> {
    vec!["get".into(), process.into(), number(CLAIM_MS)]
}

/// What `put` stores beside its status: the status text, the headers (JSON), the body
/// (base64) and the `Age` it came with.
pub type Stored = [String; 4];

/// The arguments of `put`: `process` stores an entry of `status` fresh for `fresh_ms`, kept as
/// long as it may answer stale after (`stale_for_ms`).
pub fn put(
    process: &str,
    (fresh_ms, stale_for_ms): (Millis, Millis),
    status: u16,
    entry: Stored,
    number: &dyn Fn(f64) -> String,
) -> Vec<String> {
    let keep_ms = shared_cache::keep_ms(fresh_ms, stale_for_ms);
    let mut args = vec![
        "put".into(),
        process.into(),
        number(fresh_ms),
        number(keep_ms),
        status.to_string(),
    ];
    args.extend(entry);
    args
}

/// The arguments of `release`: `process` gives up its claim.
pub fn release(process: &str) -> Vec<String> {
    vec!["release".into(), process.into()]
}

/// `get`'s answer (its first two fields), understood; with a fresh entry, also how long ago it
/// was put (its third).
pub fn reply(fields: &[String]) -> (Asked, Millis) {
    let number = |i: usize| {
        let text = fields.get(i).map_or("", String::as_str);
        decimal::parse(text).unwrap_or(f64::NAN)
    };
    let code = fields.first().map_or("", String::as_str);
    let asked = shared_cache::answer(code, number(1));
    let since = match asked {
        Asked::Fresh { .. } if fields.len() >= 8 => number(2),
        Asked::Fresh { .. } => return (Asked::Alone, 0.0),
        _ => 0.0,
    };
    (
        asked,
        if since.is_finite() {
            since.max(0.0)
        } else {
            0.0
        },
    )
}

/// `get`'s answer for `cache.js`: its numbers, `[code, ms]` (see [`Asked::code`]) and with a
/// fresh entry `ms since put` and the status too; then, with a fresh entry, what `put` stored
/// beside its status ([`Stored`]).
pub fn reply_words(fields: &[String]) -> (Vec<f64>, &[String]) {
    let (asked, since) = reply(fields);
    let mut numbers = asked.code().to_vec();
    if let Asked::Fresh { .. } = asked {
        numbers.push(since);
        numbers.push(fields[3].parse::<f64>().unwrap_or(0.0));
        return (numbers, &fields[4..8]);
    }
    (numbers, &[])
}

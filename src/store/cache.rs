//! The contract with `cache.lua`, the fleet's shared cache: its text, keys, arguments and
//! answers. What they mean is the core's (`rules::shared_cache`).

use crate::core::gates::scope::RequestKey;
use crate::core::parse::decimal;
use crate::core::rules::shared_cache::{self, Asked, LEASE_MS};
use crate::core::Millis;

/// The script, loaded and run as the gate's is.
pub const CACHE_SCRIPT: &str = include_str!(concat!(env!("OUT_DIR"), "/cache.lua"));

/// The Redis key of a request's entry and claim: the prefix and its shared name (the
/// credential's scope in a hash tag, as the gate's key).
pub fn cache_key(prefix: &str, key: &RequestKey) -> String {
    format!("{prefix}:{}", shared_name(key))
}

/// The shared name of a request (`rules::shared_cache::name`).
pub fn shared_name((scope, url, accept): &RequestKey) -> String {
    shared_cache::name(scope.as_str(), url, accept)
}

/// The arguments of `get`: `process` asks, and claims the fetch for [`LEASE_MS`] when nobody
/// holds it and no fresh entry is there.
pub fn get(process: &str, number: &dyn Fn(f64) -> String) -> Vec<String> {
    vec!["get".into(), process.into(), number(LEASE_MS)]
}

/// What `put` stores besides its times: the status, its text, the headers (JSON), the body
/// (base64) and the `Age` it came with.
pub type Stored = [String; 5];

/// The arguments of `put`: `process` stores an entry fresh for `fresh_ms`, kept `keep_ms`.
pub fn put(
    process: &str,
    fresh_ms: Millis,
    keep_ms: Millis,
    entry: Stored,
    number: &dyn Fn(f64) -> String,
) -> Vec<String> {
    let mut args = vec![
        "put".into(),
        process.into(),
        number(fresh_ms),
        number(keep_ms),
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

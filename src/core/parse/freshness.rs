//! How long a response may be answered again without asking the server (RFC 9111), from its
//! headers: `Cache-Control` (`no-store`, `no-cache`, `max-age`), `Expires` against `Date`, and
//! `Age`. A pure function of the header values and the wall clock.
//!
//! Rules, one per line:
//! - `no-store` anywhere in `Cache-Control`: never kept;
//! - `no-cache`: kept for nobody (it must be asked again each time; we send no conditional
//!   requests), so a lifetime of 0: calls in flight still share one request;
//! - `max-age=N` (N ASCII digits, optionally quoted): N seconds; of several the first, and an
//!   invalid one makes the response stale (0), as RFC 9111 section 4.2.1 asks;
//! - otherwise `Expires`, an HTTP-date, less `Date` (the wall clock when `Date` is missing or
//!   invalid); an invalid `Expires` (such as `0`) is already stale;
//! - `Age` (seconds) is taken off what the headers gave: time the answer spent in caches before
//!   it came here;
//! - no header says: `None`, and the caller falls back to the body's `ttl_seconds` or its
//!   default.
//!
//! Directive names are case-insensitive; a directive we do not use (`private`, `public`,
//! `must-revalidate`, ...) changes nothing.

use crate::core::parse::http_date::parse_http_date;
use crate::core::Millis;

/// What a response's headers say of keeping it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Freshness {
    /// `no-store`: never kept.
    NoStore,
    /// Fresh for this long from now (0: stale at once), after `Age`.
    For(Millis),
    /// No header says.
    Unsaid,
}

/// The response headers `freshness` reads, as given (`None` when absent).
#[derive(Debug, Clone, Copy, Default)]
pub struct CacheHeaders<'a> {
    /// `Cache-Control`.
    pub cache_control: Option<&'a str>,
    /// `Expires`.
    pub expires: Option<&'a str>,
    /// `Date`.
    pub date: Option<&'a str>,
    /// `Age`.
    pub age: Option<&'a str>,
}

/// The freshness the headers give a response received at `wall_now` (Unix ms).
pub(crate) fn freshness(h: CacheHeaders<'_>, wall_now: Millis) -> Freshness {
    let mut max_age = None;
    let mut no_cache = false;
    for directive in h.cache_control.unwrap_or("").split(',') {
        let (name, value) = match directive.split_once('=') {
            Some((name, value)) => (name.trim(), Some(value.trim())),
            None => (directive.trim(), None),
        };
        if name.eq_ignore_ascii_case("no-store") {
            return Freshness::NoStore;
        } else if name.eq_ignore_ascii_case("no-cache") {
            no_cache = true;
        } else if name.eq_ignore_ascii_case("max-age") && max_age.is_none() {
            max_age = Some(value.and_then(seconds).unwrap_or(0.0));
        }
    }
    let lifetime = if no_cache {
        Some(0.0)
    } else if max_age.is_some() {
        max_age
    } else if let Some(expires) = h.expires {
        let date = h.date.and_then(|d| parse_http_date(d, wall_now));
        let expires = parse_http_date(expires, wall_now);
        Some(expires.map_or(0.0, |e| (e - date.unwrap_or(wall_now)).max(0.0)))
    } else {
        None
    };
    let age = age_ms(h.age);
    match lifetime {
        Some(ms) => Freshness::For((ms - age).max(0.0)),
        None => Freshness::Unsaid,
    }
}

/// An `Age` header's value in ms: 0 when absent or not delta-seconds.
pub(crate) fn age_ms(age: Option<&str>) -> Millis {
    age.and_then(seconds).unwrap_or(0.0)
}

/// Delta-seconds (ASCII digits, optionally quoted) in ms; a value too large to matter is
/// capped at a year rather than refused.
fn seconds(text: &str) -> Option<Millis> {
    const YEAR_S: u64 = 365 * 86_400;
    let text = text.trim();
    let text = text
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .unwrap_or(text);
    if text.is_empty() {
        return None;
    }
    let mut s: u64 = 0;
    for b in text.bytes() {
        if !b.is_ascii_digit() {
            return None;
        }
        s = (s * 10 + u64::from(b - b'0')).min(YEAR_S);
    }
    Some(s as f64 * 1_000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: Millis = 784_111_777_000.0; // Sun, 06 Nov 1994 08:49:37 GMT

    fn cc(value: &str) -> Freshness {
        freshness(
            CacheHeaders {
                cache_control: Some(value),
                ..CacheHeaders::default()
            },
            NOW,
        )
    }

    #[test]
    fn cache_control_decides_first() {
        assert_eq!(cc("max-age=5"), Freshness::For(5_000.0));
        assert_eq!(cc("public, MAX-AGE=\"7\""), Freshness::For(7_000.0));
        assert_eq!(cc("max-age=5, no-store"), Freshness::NoStore);
        assert_eq!(cc("no-cache, max-age=60"), Freshness::For(0.0));
        assert_eq!(cc("max-age=5, max-age=60"), Freshness::For(5_000.0));
        assert_eq!(cc("max-age=-1"), Freshness::For(0.0));
        assert_eq!(cc("max-age=1.5"), Freshness::For(0.0));
        assert_eq!(cc("private"), Freshness::Unsaid);
        assert_eq!(
            cc("max-age=99999999999999"),
            Freshness::For(31_536_000_000.0)
        );
    }

    #[test]
    fn expires_counts_from_the_servers_date_and_age_is_taken_off() {
        let h = CacheHeaders {
            expires: Some("Sun, 06 Nov 1994 08:50:37 GMT"),
            date: Some("Sun, 06 Nov 1994 08:49:47 GMT"),
            age: Some("20"),
            ..CacheHeaders::default()
        };
        // 50 s from the server's Date, 20 s of it spent in caches already.
        assert_eq!(freshness(h, NOW), Freshness::For(30_000.0));
        let no_date = CacheHeaders { date: None, ..h };
        assert_eq!(freshness(no_date, NOW), Freshness::For(40_000.0));
        let invalid = CacheHeaders {
            expires: Some("0"),
            ..h
        };
        assert_eq!(freshness(invalid, NOW), Freshness::For(0.0));
        let max_age_wins = CacheHeaders {
            cache_control: Some("max-age=100"),
            ..h
        };
        assert_eq!(freshness(max_age_wins, NOW), Freshness::For(80_000.0));
    }

    #[test]
    fn nothing_said_is_unsaid_whatever_the_age() {
        let h = CacheHeaders {
            age: Some("3"),
            ..CacheHeaders::default()
        };
        assert_eq!(freshness(h, NOW), Freshness::Unsaid);
    }
}

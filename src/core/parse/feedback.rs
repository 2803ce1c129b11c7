//! What a response's headers say about the allowance. A pure function of the header values and
//! the wall clock (needed only for an HTTP-date `Retry-After`).
//!
//! Precedence and rules, one per line:
//! - `Retry-After` of ASCII digits only (optional surrounding spaces/tabs) is delay-seconds;
//! - otherwise an HTTP-date (IMF-fixdate, RFC 850, asctime) is a delay until that instant, and a
//!   date in the past is no wait;
//! - anything else, or no header, sets no cooldown: we never invent a wait;
//! - delay-seconds too large to hold exactly in milliseconds is an error, never a shorter wait;
//! - `X-RateLimit-Limit`/`-Remaining` are non-negative integers, `-Bucket` a name; each is
//!   recorded when valid and ignored when not;
//! - `X-RateLimit-Reset` is seconds until the reset, or Unix seconds when it is larger than
//!   10^9 (no window is that long, and no epoch time is that short);
//! - the IETF draft fields fill in what `X-RateLimit-*` left out: first the separate
//!   `RateLimit-Limit`/`-Remaining`/`-Reset`, then the structured `RateLimit` (`r=`, `t=`, or
//!   the older `remaining=`, `reset=`) and `RateLimit-Policy` (`q=`, or `limit=`); of several
//!   policies the first is read.

use std::fmt;

use crate::core::parse::decimal;
use crate::core::parse::http_date::parse_http_date;
use crate::core::Millis;

/// The largest delay we can hold exactly: JavaScript's `Number.MAX_SAFE_INTEGER` milliseconds.
pub const MAX_DELAY_MS: u64 = (1 << 53) - 1;

/// The largest count kept: JavaScript's `Number.MAX_SAFE_INTEGER`, so every figure that shows
/// one is a number JavaScript holds exactly. A count above it (even past 64 bits) is read as
/// this one: as good as no limit.
pub const MAX_COUNT: u64 = (1 << 53) - 1;

/// Longest bucket name kept; a longer one is cut so a hostile header cannot grow memory.
const MAX_LIMITER_LEN: usize = 64;

/// The allowance feedback carried by one response.
#[derive(Debug, Clone, Default, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize),
    serde(rename_all = "camelCase")
)]
pub struct Feedback {
    /// The wait the server asked for, in milliseconds.
    pub retry_after_ms: Option<Millis>,
    /// `X-RateLimit-Limit`: the bucket's capacity.
    pub limit: Option<u64>,
    /// `X-RateLimit-Remaining`: approximate, never a reservation.
    pub remaining: Option<u64>,
    /// Time until the window resets, in milliseconds.
    pub reset_ms: Option<Millis>,
    /// `X-RateLimit-Bucket`: the provider's name for the limiter.
    pub limiter: Option<String>,
}

/// Feedback that cannot be honoured faithfully.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FeedbackError {
    /// `Retry-After` asks for more seconds than we can represent.
    RetryAfterTooLarge,
}

impl fmt::Display for FeedbackError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FeedbackError::RetryAfterTooLarge => {
                write!(f, "Retry-After exceeds the supported delay")
            }
        }
    }
}

impl std::error::Error for FeedbackError {}

/// Whether a response with this status is one whose `Retry-After` we honour: a 429 (slow
/// down) or a 503 (come back later). On any other status it is ignored, so it can neither
/// hold the gate nor fail a successful call.
pub(crate) fn honours_retry_after(status: u16) -> bool {
    matches!(status, 429 | 503)
}

/// Every header [`parse_feedback`] reads, lower-case.
pub const FEEDBACK_HEADERS: [&str; 10] = [
    "retry-after",
    "x-ratelimit-limit",
    "ratelimit-limit",
    "x-ratelimit-remaining",
    "ratelimit-remaining",
    "x-ratelimit-reset",
    "ratelimit-reset",
    "ratelimit",
    "ratelimit-policy",
    "x-ratelimit-bucket",
];

/// Reads the feedback headers through `header` (a case-insensitive lookup by name). A `dyn`
/// lookup, so the wasm module holds one copy of the parser for all its callers.
pub fn parse_feedback(
    header: &dyn Fn(&str) -> Option<String>,
    wall_now: Millis,
) -> Result<Feedback, FeedbackError> {
    let first = |names: [&str; 2]| names.iter().find_map(|name| header(name));
    let structured = header("ratelimit").unwrap_or_default();
    let policy = header("ratelimit-policy").unwrap_or_default();
    let reset = |v: String| parse_seconds(&v).map(|s| reset_delay(s, wall_now));
    Ok(Feedback {
        retry_after_ms: match header("retry-after") {
            Some(value) => parse_retry_after(&value, wall_now)?,
            None => None,
        },
        limit: first(["x-ratelimit-limit", "ratelimit-limit"])
            .and_then(|v| parse_count(&v))
            .or_else(|| param(&policy, &["q", "limit"]).and_then(parse_count))
            .or_else(|| param(&structured, &["limit"]).and_then(parse_count)),
        remaining: first(["x-ratelimit-remaining", "ratelimit-remaining"])
            .and_then(|v| parse_count(&v))
            .or_else(|| param(&structured, &["r", "remaining"]).and_then(parse_count)),
        reset_ms: first(["x-ratelimit-reset", "ratelimit-reset"])
            .and_then(reset)
            .or_else(|| param(&structured, &["t", "reset"]).and_then(|v| reset(v.into()))),
        limiter: header("x-ratelimit-bucket").and_then(|v| parse_name(&v)),
    })
}

/// Seconds until a reset, or an epoch time in seconds, as milliseconds from now.
fn reset_delay(seconds: f64, wall_now: Millis) -> Millis {
    if seconds > 1e9 {
        (seconds * 1000.0 - wall_now).max(0.0)
    } else {
        seconds * 1000.0
    }
}

/// The first `key=value` for any of `keys` in a structured or list header, wherever it sits
/// among `,` and `;` separators.
fn param<'a>(value: &'a str, keys: &[&str]) -> Option<&'a str> {
    value.split([',', ';']).find_map(|part| {
        // A closure, not '=': a char pattern brings core's CharSearcher (0.6 KB of wasm).
        #[allow(clippy::manual_pattern_char_comparison)]
        let (key, val) = part.split_once(|c| c == '=')?;
        keys.iter()
            .any(|k| key.trim().eq_ignore_ascii_case(k))
            .then(|| val.trim().trim_matches('"'))
    })
}

/// As [`parse_feedback`], for responses that are not throttled: the rate-limit fields are read
/// only when the response carries a remaining count, so an ordinary response costs three
/// header reads (four with `Retry-After`) rather than ten.
pub fn skim_feedback(
    header: &dyn Fn(&str) -> Option<String>,
    wall_now: Millis,
) -> Result<Feedback, FeedbackError> {
    let seen = std::cell::RefCell::new(Vec::<(String, Option<String>)>::new());
    let cached = |name: &str| {
        if let Some((_, v)) = seen.borrow().iter().find(|(n, _)| n == name) {
            return v.clone();
        }
        let value = header(name);
        seen.borrow_mut().push((name.to_string(), value.clone()));
        value
    };
    let counts = ["x-ratelimit-remaining", "ratelimit-remaining", "ratelimit"];
    if counts.iter().any(|name| cached(name).is_some()) {
        return parse_feedback(&cached, wall_now);
    }
    Ok(Feedback {
        retry_after_ms: match cached("retry-after") {
            Some(value) => parse_retry_after(&value, wall_now)?,
            None => None,
        },
        ..Feedback::default()
    })
}

/// `Retry-After` as a delay in milliseconds from now, `None` when the value is not one. Several
/// values joined in one header (`1, 3`, as a proxy may join repeated headers) count as the
/// longest valid one.
pub fn parse_retry_after(value: &str, wall_now: Millis) -> Result<Option<Millis>, FeedbackError> {
    if let Some(delay) = parse_one_retry_after(value, wall_now)? {
        return Ok(Some(delay));
    }
    // An HTTP-date holds a comma of its own, so the whole value is tried first.
    let mut longest = None;
    for part in value.split(',') {
        if let Some(ms) = parse_delay_seconds(part)? {
            longest = Some(longest.map_or(ms, |l: Millis| l.max(ms)));
        }
    }
    Ok(longest)
}

fn parse_one_retry_after(value: &str, wall_now: Millis) -> Result<Option<Millis>, FeedbackError> {
    if let Some(ms) = parse_delay_seconds(value)? {
        return Ok(Some(ms));
    }
    Ok(parse_http_date(trim_ows(value), wall_now).map(|at| (at - wall_now).max(0.0)))
}

/// Delay-seconds (digits only, optional spaces around) in milliseconds.
fn parse_delay_seconds(value: &str) -> Result<Option<Millis>, FeedbackError> {
    let value = trim_ows(value);
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(None);
    }
    let ms = value
        .parse::<u64>()
        .ok()
        .and_then(|seconds| seconds.checked_mul(1000))
        .filter(|&ms| ms <= MAX_DELAY_MS)
        .ok_or(FeedbackError::RetryAfterTooLarge)?;
    Ok(Some(ms as Millis))
}

fn trim_ows(value: &str) -> &str {
    value.trim_matches(|c| c == ' ' || c == '\t')
}

fn parse_count(value: impl AsRef<str>) -> Option<u64> {
    let value = value.as_ref();
    let value = trim_ows(value);
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(value.parse().unwrap_or(u64::MAX).min(MAX_COUNT))
}

fn parse_seconds(value: &str) -> Option<f64> {
    let value = trim_ows(value);
    let digits_and_dot = value.bytes().all(|b| b.is_ascii_digit() || b == b'.');
    if value.is_empty() || !digits_and_dot {
        return None;
    }
    decimal::parse(value).filter(|s| s.is_finite())
}

fn parse_name(value: &str) -> Option<String> {
    let value = trim_ows(value);
    if value.is_empty() {
        return None;
    }
    Some(value.chars().take(MAX_LIMITER_LEN).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: Millis = 784_111_777_000.0; // Sun, 06 Nov 1994 08:49:37 GMT

    fn headers<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn reads_delay_seconds() {
        assert_eq!(parse_retry_after("30", NOW), Ok(Some(30_000.0)));
        assert_eq!(parse_retry_after(" 1\t", NOW), Ok(Some(1000.0)));
        assert_eq!(parse_retry_after("0", NOW), Ok(Some(0.0)));
        assert_eq!(parse_retry_after("007", NOW), Ok(Some(7000.0)));
    }

    #[test]
    fn of_several_joined_values_the_longest_counts() {
        assert_eq!(parse_retry_after("1, 3", NOW), Ok(Some(3000.0)));
        assert_eq!(parse_retry_after("5,later, 2", NOW), Ok(Some(5000.0)));
        assert_eq!(parse_retry_after("later, soon", NOW), Ok(None));
        assert_eq!(
            parse_retry_after("1, 99999999999999999999", NOW),
            Err(FeedbackError::RetryAfterTooLarge)
        );
        // A date's own comma does not split it.
        let date = "Sun, 06 Nov 1994 08:50:07 GMT";
        assert_eq!(parse_retry_after(date, NOW), Ok(Some(30_000.0)));
    }

    #[test]
    fn reads_http_dates_as_a_delay_from_the_wall_clock() {
        for value in [
            "Sun, 06 Nov 1994 08:50:07 GMT",
            "Sunday, 06-Nov-94 08:50:07 GMT",
            "Sun Nov  6 08:50:07 1994",
        ] {
            assert_eq!(parse_retry_after(value, NOW), Ok(Some(30_000.0)), "{value}");
        }
    }

    #[test]
    fn a_date_in_the_past_means_no_wait() {
        let value = "Sun, 06 Nov 1994 08:00:00 GMT";
        assert_eq!(parse_retry_after(value, NOW), Ok(Some(0.0)));
    }

    #[test]
    fn invalid_values_set_no_cooldown() {
        for value in ["", "later", "-1", "1.5", "+3", "1e3", "0x10", "١٢"] {
            assert_eq!(parse_retry_after(value, NOW), Ok(None), "{value:?}");
        }
    }

    #[test]
    fn an_unrepresentable_delay_is_an_error_not_a_shorter_wait() {
        for value in ["999999999999999999999", "9007199254740992", "9007199254741"] {
            assert_eq!(
                parse_retry_after(value, NOW),
                Err(FeedbackError::RetryAfterTooLarge),
                "{value}"
            );
        }
        // The largest whole number of seconds that still fits.
        assert_eq!(
            parse_retry_after("9007199254740", NOW),
            Ok(Some(9_007_199_254_740_000.0))
        );
    }

    #[test]
    fn records_the_rate_limit_headers() {
        let h = headers(&[
            ("Retry-After", "1"),
            ("X-RateLimit-Limit", "2"),
            ("X-RateLimit-Remaining", "0"),
            ("X-RateLimit-Reset", "0.5"),
            ("X-RateLimit-Bucket", "snapshot"),
        ]);
        let feedback = parse_feedback(&h, NOW).unwrap();
        assert_eq!(
            feedback,
            Feedback {
                retry_after_ms: Some(1000.0),
                limit: Some(2),
                remaining: Some(0),
                reset_ms: Some(500.0),
                limiter: Some("snapshot".into()),
            }
        );
    }

    #[test]
    fn skimming_an_ordinary_response_reads_three_headers() {
        let asked = std::cell::RefCell::new(0);
        let f = skim_feedback(
            &|_| {
                *asked.borrow_mut() += 1;
                None
            },
            NOW,
        )
        .unwrap();
        assert_eq!(f, Feedback::default());
        assert_eq!(asked.into_inner(), 4, "three counts and Retry-After");
        let pairs = [("X-RateLimit-Remaining", "1"), ("X-RateLimit-Limit", "2")];
        let f = skim_feedback(&headers(&pairs), NOW).unwrap();
        assert_eq!((f.limit, f.remaining), (Some(2), Some(1)));
    }

    #[test]
    fn reads_only_the_headers_it_lists() {
        let asked = std::cell::RefCell::new(Vec::new());
        let _ = parse_feedback(
            &|name| {
                asked.borrow_mut().push(name.to_string());
                None
            },
            NOW,
        );
        let mut asked = asked.into_inner();
        asked.sort();
        asked.dedup();
        let mut listed: Vec<String> = FEEDBACK_HEADERS.iter().map(|s| s.to_string()).collect();
        listed.sort();
        assert_eq!(asked, listed);
    }

    #[test]
    fn a_large_reset_is_an_epoch_time() {
        let now_2026 = 1_795_000_000_000.0;
        let at = (now_2026 / 1000.0 + 30.0).to_string();
        let pairs = [("X-RateLimit-Reset", at.as_str())];
        let feedback = parse_feedback(&headers(&pairs), now_2026).unwrap();
        assert_eq!(feedback.reset_ms, Some(30_000.0));
    }

    #[test]
    fn reads_the_ietf_draft_fields() {
        let structured = [
            ("RateLimit", "\"default\";r=5;t=30, \"burst\";r=1;t=1"),
            ("RateLimit-Policy", "\"default\";q=100;w=60"),
        ];
        let f = parse_feedback(&headers(&structured), NOW).unwrap();
        assert_eq!(
            (f.limit, f.remaining, f.reset_ms),
            (Some(100), Some(5), Some(30_000.0))
        );
        let older = [("RateLimit", "limit=10, remaining=0, reset=2")];
        let f = parse_feedback(&headers(&older), NOW).unwrap();
        assert_eq!(
            (f.limit, f.remaining, f.reset_ms),
            (Some(10), Some(0), Some(2_000.0))
        );
        let separate = [
            ("RateLimit-Limit", "7"),
            ("RateLimit-Remaining", "3"),
            ("RateLimit-Reset", "4"),
        ];
        let f = parse_feedback(&headers(&separate), NOW).unwrap();
        assert_eq!(
            (f.limit, f.remaining, f.reset_ms),
            (Some(7), Some(3), Some(4_000.0))
        );
    }

    #[test]
    fn x_ratelimit_wins_over_the_ietf_fields() {
        let both = [("X-RateLimit-Remaining", "9"), ("RateLimit", "r=1")];
        let f = parse_feedback(&headers(&both), NOW).unwrap();
        assert_eq!(f.remaining, Some(9));
    }

    #[test]
    fn ignores_malformed_rate_limit_headers() {
        let long = "b".repeat(500);
        let pairs = [
            ("X-RateLimit-Limit", "two"),
            ("X-RateLimit-Remaining", "-1"),
            ("X-RateLimit-Reset", "soon"),
            ("X-RateLimit-Bucket", long.as_str()),
        ];
        let feedback = parse_feedback(&headers(&pairs), NOW).unwrap();
        assert_eq!(feedback.limit, None);
        assert_eq!(feedback.remaining, None);
        assert_eq!(feedback.reset_ms, None);
        assert_eq!(feedback.limiter.map(|b| b.len()), Some(MAX_LIMITER_LEN));
        assert_eq!(feedback.retry_after_ms, None);
    }
}

//! Fuzzing every reader of outside input: a panic aborts the wasm instance (and every gate in the
//! process with it), so each must take anything without panicking and give its documented
//! result. Headers (`Retry-After` in all its forms, `X-RateLimit-*`, `RateLimit` and
//! `RateLimit-Policy`), `/usage` bodies, quota bodies, options, URLs and method names, and the
//! Redis script's replies.
#![cfg(not(target_arch = "wasm32"))]

use odds_gate::core::gate::store_link::{OnFailure, StoreSettings};
use odds_gate::core::gates::scope::{sendable, Scope};
use odds_gate::core::parse::feedback::{
    parse_feedback, parse_retry_after, skim_feedback, MAX_COUNT, MAX_DELAY_MS,
};
use odds_gate::core::parse::http_date::parse_http_date;
use odds_gate::core::rules::allowance::{Rate, MIN_PER_SECOND};
use odds_gate::core::rules::backoff::Backoff;
use odds_gate::core::rules::budget::RefillingConfig;
use odds_gate::core::rules::classify::{valid_method, RetryRules};
use odds_gate::core::rules::policy::RetryPolicy;
use odds_gate::core::rules::quota::{looks_exhausted, usage_url_for, valid_usage_url, Usage};
use odds_gate::store::answer;
use proptest::prelude::*;

const LONG_DAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];
const DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// Days from 1970-01-01 to a civil date (Howard Hinnant's algorithm, independent of the parser).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn value_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        ".{0,40}",
        "[0-9 ,;=\"a-z]{0,30}",
        "[0-9]{1,30}",
        "-?[0-9]{0,5}\\.?[0-9]{0,5}(e[0-9]{1,3})?",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    /// All three HTTP-date forms give the same instant; the weekday is taken as written.
    #[test]
    fn the_three_http_date_forms_agree(
        year in 1970i64..2099, month in 1i64..=12, day in 1i64..=28,
        h in 0i64..24, mi in 0i64..60, s in 0i64..60,
    ) {
        let days = days_from_civil(year, month, day);
        let at = ((days * 86_400 + h * 3600 + mi * 60 + s) * 1000) as f64;
        let weekday = (days + 3).rem_euclid(7) as usize; // 1970-01-01 was a Thursday
        let mon = MONTHS[(month - 1) as usize];
        let imf = format!("{}, {day:02} {mon} {year} {h:02}:{mi:02}:{s:02} GMT", DAYS[weekday]);
        let asctime = format!("{} {mon} {day:>2} {h:02}:{mi:02}:{s:02} {year}", DAYS[weekday]);
        let rfc850 = format!("{}, {day:02}-{mon}-{:02} {h:02}:{mi:02}:{s:02} GMT", LONG_DAYS[weekday], year % 100);
        // RFC 850's two-digit year is placed within 50 years of now.
        let now = at;
        for value in [&imf, &asctime, &rfc850] {
            prop_assert_eq!(parse_http_date(value, now), Some(at), "{}", value);
            prop_assert_eq!(parse_retry_after(value, now - 5_000.0), Ok(Some(5_000.0)), "{}", value);
        }
    }

    /// Any header values: no panic, and every number read is what the header said.
    #[test]
    fn rate_limit_fields_are_read_exactly_or_not_at_all(
        values in prop::collection::vec(value_strategy(), 10), now in -1e15f64..1e15,
    ) {
        let names = ["retry-after", "x-ratelimit-limit", "ratelimit-limit", "x-ratelimit-remaining",
            "ratelimit-remaining", "x-ratelimit-reset", "ratelimit-reset", "ratelimit",
            "ratelimit-policy", "x-ratelimit-bucket"];
        let header = |name: &str| names.iter().position(|n| *n == name).map(|i| values[i].clone());
        for parsed in [parse_feedback(&header, now), skim_feedback(&header, now)] {
            let Ok(f) = parsed else { continue };
            if let Some(ms) = f.retry_after_ms {
                prop_assert!(ms.is_finite() && ms >= 0.0 && ms <= MAX_DELAY_MS as f64);
            }
            if let Some(reset) = f.reset_ms {
                prop_assert!(reset.is_finite() && reset >= 0.0);
            }
            if let Some(bucket) = &f.limiter {
                prop_assert!(!bucket.is_empty() && bucket.chars().count() <= 64);
            }
            // A plain integer in X-RateLimit-Limit is the limit, exactly, up to the largest
            // count JavaScript holds (past it, that count).
            let plain = values[1].trim_matches([' ', '\t']);
            if !plain.is_empty() && plain.bytes().all(|b| b.is_ascii_digit()) {
                let n = plain.parse::<u64>().unwrap_or(u64::MAX).min(MAX_COUNT);
                prop_assert_eq!(f.limit, Some(n));
            }
        }
    }

    /// The structured fields: `r=` and `q=` are read as the remaining count and the limit.
    #[test]
    fn structured_fields_give_their_numbers(r in 0u64..10_000, q in 1u64..10_000, t in 0u64..3600, junk in "[a-z]{0,6}") {
        let structured = format!("\"{junk}\";r={r};t={t}");
        let policy = format!("\"{junk}\";q={q};w=60");
        let header = |name: &str| match name {
            "ratelimit" => Some(structured.clone()),
            "ratelimit-policy" => Some(policy.clone()),
            _ => None,
        };
        let f = parse_feedback(&header, 0.0).unwrap();
        prop_assert_eq!((f.remaining, f.limit, f.reset_ms), (Some(r), Some(q), Some(t as f64 * 1000.0)));
    }

    /// `/usage` numbers of any kind: exhausted exactly when a limit of 0 or more is reached.
    #[test]
    fn usage_bodies_are_judged_by_their_numbers(
        used in prop_oneof![any::<f64>(), -10.0..1e6f64], limit in prop_oneof![any::<f64>(), -10.0..1e6f64],
        key in 0usize..3,
    ) {
        let pairs = [("api_credits_used", "api_credits_limit"), ("used", "limit"), ("request_count", "request_limit")];
        let (u, l) = pairs[key];
        let usage = Usage::from_fields(|k| if k == u { Some(used) } else if k == l { Some(limit) } else { None }, None);
        let usage = usage.expect("a pair was there");
        prop_assert_eq!(usage.exhausted(), limit >= 0.0 && used >= limit);
    }

    /// Quota bodies: any text, no panic; naming the quota or credits is recognised in any case.
    #[test]
    fn quota_bodies_are_read_without_fuss(code in ".{0,40}", detail in ".{0,80}", word in "[qQ][uU][oO][tT][aA]|[cC][rR][eE][dD][iI][tT][sS]|[mM][oO][nN][tT][hH][lL][yY]") {
        let _ = looks_exhausted(Some(&code), Some(&detail));
        let saying = format!("{detail} {word} {code}");
        prop_assert!(looks_exhausted(None, Some(&saying)));
    }

    /// Options: every number either passes with its bounds holding, or is refused naming the
    /// field; never a panic, never a silent default.
    #[test]
    fn options_pass_within_bounds_or_are_refused_by_name(a in any::<f64>(), b in any::<f64>(), n in any::<u32>()) {
        match Rate::new(a, b) {
            Ok(rate) => prop_assert!(rate.burst() >= 1.0 && rate.per_second() >= MIN_PER_SECOND && rate.ms_per_token().is_finite()),
            Err(e) => prop_assert!(e.to_string().contains("rate.")),
        }
        match Backoff::new(a, b) {
            Ok(backoff) => prop_assert!(backoff.base_ms() > 0.0 && backoff.cap_ms() >= backoff.base_ms()),
            Err(e) => prop_assert!(e.to_string().contains("retry.")),
        }
        let budget = RefillingConfig { capacity: a, throttle_cost: b, ..RefillingConfig::DEFAULT };
        if let Err(e) = budget.validate() {
            prop_assert!(e.to_string().contains("retry.budget."));
        }
        let policy = RetryPolicy { max_attempts: n, time_budget_ms: a, attempt_timeout_ms: b, ..RetryPolicy::default() };
        match policy.validate() {
            Ok(p) => prop_assert!(p.max_attempts >= 1 && p.time_budget_ms.is_finite() && p.attempt_timeout_ms.is_finite()),
            Err(e) => prop_assert!(e.to_string().contains("retry.")),
        }
        let store = StoreSettings { timeout_ms: a, retry_ms: b, on_failure: OnFailure::Local, local_share: a };
        if let Ok(s) = store.validate() {
            prop_assert!(s.timeout_ms > 0.0 && s.local_share > 0.0 && s.local_share <= 1.0);
            prop_assert!(s.local_rate(Rate::ARTICLE).burst() >= 1.0);
        }
        let statuses = vec![(n % 700) as u16];
        if let Ok(rules) = RetryRules::new(statuses, vec!["GET".into()]) {
            prop_assert!(rules.statuses().iter().all(|&s| s == 408 || s == 425 || s == 429 || (500..600).contains(&s)));
        }
    }

    /// URLs, method names and credentials: any text, no panic, and the answers hold together.
    #[test]
    fn urls_methods_and_credentials_of_any_text(text in ".{0,60}", path in "(/[a-z]{1,8}){0,3}") {
        let _ = usage_url_for(&text);
        let _ = valid_usage_url(&text);
        if valid_method(&text) {
            prop_assert!(text.is_ascii() && !text.contains(' '));
        }
        let url = format!("https://api.example.test/v1/events{path}");
        prop_assert_eq!(usage_url_for(&url), Some("https://api.example.test/v1/usage".to_string()));
        prop_assert!(valid_usage_url(&url));
        prop_assert_eq!(sendable(&text), !text.contains(['\r', '\n', '\0']));
        let scope = Scope::of(Some(&text), None);
        prop_assert!(text.trim().len() < 4 || !scope.as_str().contains(text.trim()));
    }

    /// The Redis script's replies: anything at all, no panic; an answer read holds finite numbers.
    #[test]
    fn redis_replies_of_any_shape(code in prop_oneof![Just("admitted".to_string()), Just("wait".to_string()), ".{0,12}".prop_map(String::from)],
        value in ".{0,20}", extra in ".{0,20}", count in ".{0,6}", seq in ".{0,12}") {
        if let Some(answer) = answer(&code, &value, &extra, &count, &seq) {
            let text = format!("{answer:?}");
            prop_assert!(!text.contains("NaN") && !text.contains("inf"), "{}", text);
        }
    }
}

//! Property tests of the header parser: it never panics, and it never yields a shorter wait than
//! the header asks for.
#![cfg(not(target_arch = "wasm32"))]

use odds_gate::core::parse::feedback::{
    parse_feedback, parse_retry_after, FeedbackError, MAX_COUNT, MAX_DELAY_MS,
};
use odds_gate::core::parse::http_date::parse_http_date;
use proptest::prelude::*;

const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// Formats Unix seconds as an IMF-fixdate, independently of the parser under test.
fn imf_fixdate(unix_seconds: i64) -> String {
    let days = unix_seconds.div_euclid(86_400);
    let secs = unix_seconds.rem_euclid(86_400);
    // Civil date by walking years and months: slow, obviously correct.
    let (mut year, mut left) = (1970, days);
    loop {
        let len = if is_leap(year) { 366 } else { 365 };
        if left < len {
            break;
        }
        left -= len;
        year += 1;
    }
    let mut month = 0;
    loop {
        let len = month_len(year, month);
        if left < len {
            break;
        }
        left -= len;
        month += 1;
    }
    format!(
        "{}, {:02} {} {} {:02}:{:02}:{:02} GMT",
        DAYS[days.rem_euclid(7) as usize],
        left + 1,
        MONTHS[month],
        year,
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

fn is_leap(y: i64) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

fn month_len(y: i64, m: usize) -> i64 {
    [
        31,
        if is_leap(y) { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ][m]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn never_panics_on_any_header_values(
        retry_after in ".{0,40}", limit in ".{0,12}", remaining in ".{0,12}",
        reset in ".{0,12}", bucket in ".{0,80}", now in -1e15f64..1e15,
    ) {
        let values = [retry_after, limit, remaining, reset, bucket];
        let names = ["retry-after", "x-ratelimit-limit", "x-ratelimit-remaining",
                     "x-ratelimit-reset", "x-ratelimit-bucket"];
        let _ = parse_feedback(
            &|name| names.iter().position(|n| *n == name).map(|i| values[i].clone()),
            now,
        );
    }

    #[test]
    fn never_panics_on_date_shaped_noise(value in "[A-Za-z]{3,9},? [0-9 ]{1,2}[ -][A-Za-z]{3}[ -][0-9]{2,4} [0-9:]{8} ?(GMT)?") {
        let _ = parse_retry_after(&value, 0.0);
    }

    #[test]
    fn delay_seconds_are_exact_or_refused(seconds in any::<u64>(), pad in "[ \t]{0,2}") {
        let value = format!("{pad}{seconds}{pad}");
        match parse_retry_after(&value, 0.0) {
            Ok(Some(ms)) => prop_assert_eq!(ms, seconds as f64 * 1000.0),
            Ok(None) => prop_assert!(false, "digits were ignored"),
            Err(FeedbackError::RetryAfterTooLarge) => {
                prop_assert!(u128::from(seconds) * 1000 > u128::from(MAX_DELAY_MS))
            }
        }
    }

    #[test]
    fn every_count_is_one_javascript_holds_exactly(
        limit in "[0-9]{1,40}", remaining in "[0-9]{1,40}",
    ) {
        let values = [limit.clone(), remaining.clone()];
        let names = ["x-ratelimit-limit", "x-ratelimit-remaining"];
        let feedback = parse_feedback(
            &|name| names.iter().position(|n| *n == name).map(|i| values[i].clone()),
            0.0,
        ).unwrap();
        for (count, digits) in [(feedback.limit, &limit), (feedback.remaining, &remaining)] {
            let count = count.expect("digits are a count");
            prop_assert!(count <= MAX_COUNT);
            // Exact below the cap; the cap above it (even past 64 bits).
            let exact = digits.parse::<u128>().unwrap_or(u128::MAX).min(u128::from(MAX_COUNT));
            prop_assert_eq!(u128::from(count), exact);
        }
    }

    #[test]
    fn long_digit_strings_are_refused_not_shortened(digits in "[1-9][0-9]{20,60}") {
        prop_assert_eq!(parse_retry_after(&digits, 0.0), Err(FeedbackError::RetryAfterTooLarge));
    }

    #[test]
    fn an_http_date_waits_until_that_instant(
        target in 0i64..4_102_444_800, now_ms in 0f64..4_102_444_800_000.0,
    ) {
        let value = imf_fixdate(target);
        prop_assert_eq!(parse_http_date(&value, now_ms), Some(target as f64 * 1000.0), "{}", value);
        let delay = parse_retry_after(&value, now_ms).unwrap().unwrap();
        prop_assert!(delay >= target as f64 * 1000.0 - now_ms, "{} waits {}", value, delay);
        prop_assert!(delay >= 0.0);
    }
}

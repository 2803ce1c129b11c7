//! HTTP-date (RFC 9110 section 5.6.7) to Unix milliseconds: the preferred IMF-fixdate and the
//! two obsolete forms a recipient must still accept. Anything else is `None`.

use crate::core::Millis;

const DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
const LONG_DAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];
const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// Parses an HTTP-date into Unix milliseconds. `wall_now` is needed only to place the RFC 850
/// form's two-digit year.
pub fn parse_http_date(value: &str, wall_now: Millis) -> Option<Millis> {
    imf_fixdate(value)
        .or_else(|| rfc850(value, wall_now))
        .or_else(|| asctime(value))
}

/// `Sun, 06 Nov 1994 08:49:37 GMT`
fn imf_fixdate(s: &str) -> Option<Millis> {
    let mut c = Cursor(s);
    c.name(&DAYS)?;
    c.lit(", ")?;
    let day = c.digits(2)?;
    c.lit(" ")?;
    let month = c.name(&MONTHS)? + 1;
    c.lit(" ")?;
    let year = c.digits(4)?;
    c.lit(" ")?;
    let (h, m, sec) = c.time()?;
    c.lit(" GMT")?;
    c.end()?;
    to_millis(year, month, day, h, m, sec)
}

/// `Sunday, 06-Nov-94 08:49:37 GMT`
fn rfc850(s: &str, wall_now: Millis) -> Option<Millis> {
    let mut c = Cursor(s);
    c.name(&LONG_DAYS)?;
    c.lit(", ")?;
    let day = c.digits(2)?;
    c.lit("-")?;
    let month = c.name(&MONTHS)? + 1;
    c.lit("-")?;
    let yy = c.digits(2)?;
    c.lit(" ")?;
    let (h, m, sec) = c.time()?;
    c.lit(" GMT")?;
    c.end()?;
    to_millis(two_digit_year(yy, wall_now), month, day, h, m, sec)
}

/// `Sun Nov  6 08:49:37 1994`
fn asctime(s: &str) -> Option<Millis> {
    let mut c = Cursor(s);
    c.name(&DAYS)?;
    c.lit(" ")?;
    let month = c.name(&MONTHS)? + 1;
    c.lit(" ")?;
    let day = if c.lit(" ").is_some() {
        c.digits(1)?
    } else {
        c.digits(2)?
    };
    c.lit(" ")?;
    let (h, m, sec) = c.time()?;
    c.lit(" ")?;
    let year = c.digits(4)?;
    c.end()?;
    to_millis(year, month, day, h, m, sec)
}

/// RFC 9110: a two-digit year that would be more than 50 years in the future is the most recent
/// past year with those digits.
fn two_digit_year(yy: i64, wall_now: Millis) -> i64 {
    let this_year = civil_year((wall_now / 86_400_000.0).floor() as i64);
    let century = this_year - this_year.rem_euclid(100);
    let year = century + yy;
    if year > this_year + 50 {
        year - 100
    } else {
        year
    }
}

fn to_millis(year: i64, month: i64, day: i64, h: i64, m: i64, s: i64) -> Option<Millis> {
    let valid = (1..=12).contains(&month)
        && day >= 1
        && day <= days_in_month(year, month)
        && h <= 23
        && m <= 59
        && s <= 60; // a leap second is a valid time of day
    if !valid {
        return None;
    }
    let seconds = days_from_civil(year, month, day) * 86_400 + h * 3600 + m * 60 + s;
    Some(seconds as Millis * 1000.0)
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
pub(super) fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The year in which a day (counted from 1970-01-01) falls.
fn civil_year(days: i64) -> i64 {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    yoe + era * 400 + i64::from(month <= 2)
}

/// A forward-only reader over the value; each step returns `None` on a mismatch.
struct Cursor<'a>(&'a str);

impl Cursor<'_> {
    fn lit(&mut self, expected: &str) -> Option<()> {
        self.0 = self.0.strip_prefix(expected)?;
        Some(())
    }

    /// Exactly `n` ASCII digits.
    fn digits(&mut self, n: usize) -> Option<i64> {
        let (head, rest) = self.0.split_at_checked(n)?;
        if !head.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        self.0 = rest;
        head.parse().ok()
    }

    /// One of `names` (case as the RFC writes them), returned as its index.
    fn name(&mut self, names: &[&str]) -> Option<i64> {
        let (index, rest) = names
            .iter()
            .enumerate()
            .find_map(|(i, name)| Some((i, self.0.strip_prefix(name)?)))?;
        self.0 = rest;
        Some(index as i64)
    }

    /// `HH:MM:SS`
    fn time(&mut self) -> Option<(i64, i64, i64)> {
        let h = self.digits(2)?;
        self.lit(":")?;
        let m = self.digits(2)?;
        self.lit(":")?;
        let s = self.digits(2)?;
        Some((h, m, s))
    }

    fn end(&self) -> Option<()> {
        self.0.is_empty().then_some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 1994-11-06T08:49:37Z, the RFC's example.
    const RFC_EXAMPLE: Millis = 784_111_777_000.0;
    const NOW_2026: Millis = 1_795_000_000_000.0;

    #[test]
    fn reads_all_three_forms_of_the_rfc_example() {
        for value in [
            "Sun, 06 Nov 1994 08:49:37 GMT",
            "Sunday, 06-Nov-94 08:49:37 GMT",
            "Sun Nov  6 08:49:37 1994",
        ] {
            assert_eq!(
                parse_http_date(value, NOW_2026),
                Some(RFC_EXAMPLE),
                "{value}"
            );
        }
    }

    #[test]
    fn places_a_two_digit_year_no_more_than_fifty_years_ahead() {
        let in_2030 = parse_http_date("Tuesday, 01-Jan-30 00:00:00 GMT", NOW_2026).unwrap();
        assert_eq!(in_2030, 1_893_456_000_000.0);
        let in_1980 = parse_http_date("Tuesday, 01-Jan-80 00:00:00 GMT", NOW_2026).unwrap();
        assert_eq!(in_1980, 315_532_800_000.0);
    }

    #[test]
    fn refuses_impossible_dates_and_near_misses() {
        for value in [
            "",
            "Sun, 31 Feb 2026 00:00:00 GMT",
            "Sun, 06 Nov 1994 24:00:00 GMT",
            "Sun, 06 Nov 1994 08:49:37 UTC",
            "Sun, 6 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 08:49:37 GMT ",
            "Sun Nov 6 08:49:37 1994",
            "Sunday, 06 Nov 1994 08:49:37 GMT",
            "Xyz, 06 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 08:49 GMT",
            "1994-11-06T08:49:37Z",
        ] {
            assert_eq!(parse_http_date(value, NOW_2026), None, "{value:?}");
        }
    }

    #[test]
    fn accepts_leap_days_only_in_leap_years() {
        assert!(parse_http_date("Thu, 29 Feb 2024 00:00:00 GMT", NOW_2026).is_some());
        assert!(parse_http_date("Thu, 29 Feb 2025 00:00:00 GMT", NOW_2026).is_none());
        assert!(parse_http_date("Thu, 29 Feb 2000 00:00:00 GMT", NOW_2026).is_some());
        assert!(parse_http_date("Thu, 29 Feb 2100 00:00:00 GMT", NOW_2026).is_none());
    }

    #[test]
    fn civil_year_round_trips() {
        for year in [1969, 1970, 1999, 2000, 2024, 2026, 2100] {
            for (month, day) in [(1, 1), (2, 28), (12, 31)] {
                assert_eq!(civil_year(days_from_civil(year, month, day)), year);
            }
        }
    }
}

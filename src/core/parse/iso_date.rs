//! An ISO 8601 time, as `/usage` gives its `period_end_utc` (`2027-01-01T00:00:00Z`), to Unix
//! milliseconds: the date-time format JavaScript's `Date.parse` defines (RFC 3339's profile of
//! ISO 8601), with the leniencies V8 shows for it: a space or a lower-case `t` between date and
//! time, a lower-case `z`, an offset without its colon, a fraction of any length (cut to
//! milliseconds), `24:00` for the end of a day, and a day past the month's end carried into the
//! next (`04-31` is May 1st). A date alone is UTC; so is a time without an offset, which
//! `Date.parse` would take as the machine's local time (the field says UTC). Anything else is
//! `None`.

use super::http_date::days_from_civil;
use crate::core::Millis;

/// The furthest a JavaScript `Date` reaches either side of 1970, in ms.
const MAX_TIME: i64 = 8_640_000_000_000_000;

/// Parses an ISO 8601 date or date-time into Unix milliseconds.
pub(crate) fn parse_iso_date(text: &str) -> Option<Millis> {
    let mut c = Cursor(text.as_bytes());
    let year = match c.one(b"+-") {
        Some(sign) => {
            let year = c.digits(6)?;
            if sign == b'-' && year == 0 {
                return None;
            }
            if sign == b'-' {
                -year
            } else {
                year
            }
        }
        None => c.digits(4)?,
    };
    let (mut month, mut day) = (1, 1);
    let mut full = false;
    if c.one(b"-").is_some() {
        month = c.digits(2)?;
        if c.one(b"-").is_some() {
            day = c.digits(2)?;
            full = true;
        }
    }
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    let mut ms = 0;
    if full && c.one(b"Tt ").is_some() {
        let hours = c.digits(2)?;
        c.one(b":")?;
        let minutes = c.digits(2)?;
        let seconds = match c.one(b":") {
            Some(_) => c.digits(2)?,
            None => 0,
        };
        let fraction = match c.one(b".") {
            Some(_) => c.fraction()?,
            None => 0,
        };
        let end_of_day = hours == 24 && minutes == 0 && seconds == 0 && fraction == 0;
        if (hours > 23 && !end_of_day) || minutes > 59 || seconds > 59 {
            return None;
        }
        ms = ((hours * 60 + minutes) * 60 + seconds) * 1000 + fraction;
        ms -= c.offset()? * 60_000;
    }
    if !c.0.is_empty() {
        return None;
    }
    let t = days_from_civil(year, month, day) * 86_400_000 + ms;
    (t.abs() <= MAX_TIME).then_some(t as Millis)
}

/// What is left to read.
struct Cursor<'a>(&'a [u8]);

impl Cursor<'_> {
    /// One of `bytes`, taken.
    fn one(&mut self, bytes: &[u8]) -> Option<u8> {
        let (&b, rest) = self.0.split_first()?;
        bytes.contains(&b).then(|| {
            self.0 = rest;
            b
        })
    }

    /// Exactly `n` digits, as a number.
    fn digits(&mut self, n: usize) -> Option<i64> {
        let head = self.0.get(..n)?;
        if !head.iter().all(u8::is_ascii_digit) {
            return None;
        }
        self.0 = &self.0[n..];
        Some(head.iter().fold(0, |v, &d| v * 10 + i64::from(d - b'0')))
    }

    /// A second's fraction (one digit at least) in whole milliseconds, the rest cut off.
    fn fraction(&mut self) -> Option<i64> {
        let n = self.0.iter().take_while(|b| b.is_ascii_digit()).count();
        if n == 0 {
            return None;
        }
        let (digits, rest) = self.0.split_at(n);
        self.0 = rest;
        let ms = (digits.iter().chain(b"00")).take(3);
        Some(ms.fold(0, |v, &d| v * 10 + i64::from(d - b'0')))
    }

    /// The offset from UTC in minutes: `Z`, `±HH:MM` or `±HHMM`; none is UTC.
    fn offset(&mut self) -> Option<i64> {
        if self.one(b"Zz").is_some() {
            return Some(0);
        }
        let Some(sign) = self.one(b"+-") else {
            return Some(0);
        };
        let hours = self.digits(2)?;
        self.one(b":");
        let minutes = self.digits(2)?;
        if hours > 23 || minutes > 59 {
            return None;
        }
        let offset = hours * 60 + minutes;
        Some(if sign == b'-' { -offset } else { offset })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each value as `Date.parse` in Node 20 read it (on a machine whose local time is UTC).
    const READ: [(&str, Option<f64>); 32] = [
        ("2027-01-01T00:00:00Z", Some(1798761600000.0)),
        ("2027-01-01T00:00:00.000Z", Some(1798761600000.0)),
        ("2027-01-01T00:00:00.5Z", Some(1798761600500.0)),
        ("2027-01-01T00:00:00.123456Z", Some(1798761600123.0)),
        ("2027-01-01T00:00:00.999999Z", Some(1798761600999.0)),
        ("2027-01-01T00:00:00+00:00", Some(1798761600000.0)),
        ("2027-01-01T00:00:00+0100", Some(1798758000000.0)),
        ("2027-01-01T00:00:00-05:30", Some(1798781400000.0)),
        ("2027-01-01T00:00:00+23:59", Some(1798675260000.0)),
        ("2027-01-01T00:00:00.000+01:00", Some(1798758000000.0)),
        ("2027-01-01", Some(1798761600000.0)),
        ("2027-01", Some(1798761600000.0)),
        ("2027", Some(1798761600000.0)),
        ("2027-01-01T00:00", Some(1798761600000.0)),
        ("2027-01-01 00:00:00Z", Some(1798761600000.0)),
        ("2027-01-01t00:00:00z", Some(1798761600000.0)),
        ("2027-01-01T00:00:00", Some(1798761600000.0)),
        ("+002027-01-01T00:00:00Z", Some(1798761600000.0)),
        ("-000001-01-01T00:00:00Z", Some(-62198755200000.0)),
        ("+275760-09-13T00:00:00Z", Some(8640000000000000.0)),
        ("2027-01-01T24:00:00Z", Some(1798848000000.0)),
        ("2027-04-31", Some(1809129600000.0)),
        ("+275760-09-13T00:00:00.001Z", None),
        ("-000000-01-01T00:00:00Z", None),
        ("2027-13-01T00:00:00Z", None),
        ("2027-01-32", None),
        ("2027-01-01T24:00:01Z", None),
        ("2027-01-01T23:59:60Z", None),
        ("2027-01-01T00:00:00+12:60", None),
        ("2027-01-01T00:00:00.Z", None),
        ("  2027-01-01T00:00:00Z", None),
        ("2027-01-01T00:00:00+00", None),
    ];

    #[test]
    fn reads_what_date_parse_reads_of_the_iso_format() {
        for (text, expected) in READ {
            assert_eq!(parse_iso_date(text), expected, "{text:?}");
        }
    }

    #[test]
    fn anything_else_is_none() {
        for text in [
            "",
            "garbage",
            "2027-01-01T00Z",
            "2027-01-01T1:00:00Z",
            "27-01-01",
        ] {
            assert_eq!(parse_iso_date(text), None, "{text:?}");
        }
    }
}

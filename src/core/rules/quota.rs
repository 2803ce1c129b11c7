//! Monthly-quota exhaustion: a 429 that waiting cannot fix. Recognised from the 429 body's
//! `code`/`detail`, or from 429s that keep coming without `Retry-After`; confirmed by one
//! `GET /usage` for the whole gate; then terminal until the period ends or the caller resets.

use crate::core::parse::iso_date::parse_iso_date;
use crate::core::rules::allowance::ConfigError;
use crate::core::rules::backoff::Backoff;
use crate::core::rules::classify::not_refused;
use crate::core::Millis;

/// The `x-odds-gate` value on a spent quota's 429 given again to later callers: the mark the
/// call path sets and the cache reads as the gate's refusal.
pub const GIVEN_AGAIN: &str = "quota-exhausted";

/// The `QuotaExhaustedError`'s message, with the period's end (ISO 8601) when known.
pub fn exhausted_message(period_end: Option<&str>) -> String {
    let until = period_end.map_or("until reset".to_string(), |end| format!("until {end}"));
    format!("The API key's monthly quota is spent ({until}); calls fail fast instead of waiting")
}

/// Consecutive 429s without `Retry-After` that make us suspect the quota rather than the rate.
pub(crate) const SUSPICIOUS_RUN: u32 = 3;

/// Whether a 429 body's `code` or `detail` speaks of the monthly quota rather than the rate.
pub fn looks_exhausted(code: Option<&str>, detail: Option<&str>) -> bool {
    let mentions = |text: &str, words: &[&str]| {
        let text = text.to_ascii_lowercase().into_bytes();
        words.iter().any(|w| find(&text, w).is_some())
    };
    code.is_some_and(|c| mentions(c, &["quota", "credit", "exhaust"]))
        || detail.is_some_and(|d| mentions(d, &["quota", "credits", "monthly"]))
}

/// Where a gate's probe asks `GET /usage`: the `usageUrl` option when given (`given`), else
/// the address next to the request's (see [`usage_url_for`]).
pub fn probe_url(given: Option<&str>, request_url: &str) -> Option<String> {
    given
        .map(str::to_owned)
        .or_else(|| usage_url_for(request_url))
}

/// The `/usage` address next to an API request's: the part of the URL before the first known
/// route (`/events`, `/bets`, `/usage`, `/limits`), plus `/usage`. `None` for other URLs.
pub fn usage_url_for(request_url: &str) -> Option<String> {
    let url = request_url.as_bytes();
    let after_scheme = find(url, "://")? + 3;
    let path_start = after_scheme + find(url.get(after_scheme..)?, "/")?;
    let end = url
        .iter()
        .position(|&b| b == b'?' || b == b'#')
        .unwrap_or(url.len());
    let path = url.get(path_start..end)?;
    let at = ["/events", "/bets", "/usage", "/limits"]
        .iter()
        .filter_map(|route| {
            (0..path.len()).find(|&i| {
                path[i..].starts_with(route.as_bytes())
                    && matches!(path.get(i + route.len()), None | Some(b'/'))
            })
        })
        .min()?;
    Some(format!("{}/usage", request_url.get(..path_start + at)?))
}

/// Whether a request asks about the account rather than spend it: `GET` of a path ending in
/// `/usage` or `/limits`.
pub(crate) fn asks_account(method: &str, url: &str) -> bool {
    let path = url.split(['?', '#']).next().unwrap_or_default();
    let path = path.trim_end_matches('/');
    method.eq_ignore_ascii_case("GET") && (path.ends_with("/usage") || path.ends_with("/limits"))
}

/// `usageUrl` as given, when it can be a `/usage` address ([`valid_usage_url`]). The error
/// says what was wrong with it, never the URL itself (it may carry a key).
pub fn usage_url(given: Option<String>) -> Result<Option<String>, ConfigError> {
    let Some(url) = given.as_deref().filter(|url| !valid_usage_url(url)) else {
        return Ok(given);
    };
    let absolute = url.starts_with("https://") || url.starts_with("http://");
    Err(ConfigError::Shape(match absolute {
        false => "Expected `usageUrl` to be an absolute http: or https: URL, got one that does not start with http:// or https://",
        true => "Expected `usageUrl` to be an absolute http: or https: URL, got one with no host, or with a space or control character",
    }))
}

/// Whether `url` can be a `/usage` address: absolute `http:` or `https:`, with a host, no
/// spaces or control characters.
pub fn valid_usage_url(url: &str) -> bool {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"));
    let Some(rest) = rest else {
        return false;
    };
    let host_end = rest
        .bytes()
        .position(|b| matches!(b, b'/' | b'?' | b'#'))
        .unwrap_or(rest.len());
    host_end > 0 && url.bytes().all(|b| b > b' ' && b != 0x7f)
}

/// Where `needle` first occurs in `haystack`: a plain byte search, so the module carries no
/// two-way string searcher (and no panicking string slices) for these few short texts.
fn find(haystack: &[u8], needle: &str) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|w| w == needle.as_bytes())
}

/// What `GET /usage` reported.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Usage {
    /// Credits (or requests) used this period.
    pub used: f64,
    /// The period's allowance.
    pub limit: f64,
    /// When the period ends, on the gate's clock, when the API said.
    pub period_end: Option<Millis>,
}

impl Usage {
    /// Reads `/usage` fields through `number`: `api_credits_used`/`api_credits_limit`, or the
    /// legacy `used`/`limit` and `request_count`/`request_limit`. `None` when no pair is there.
    pub fn from_fields(
        number: impl Fn(&str) -> Option<f64>,
        period_end: Option<Millis>,
    ) -> Option<Usage> {
        [
            ("api_credits_used", "api_credits_limit"),
            ("used", "limit"),
            ("request_count", "request_limit"),
        ]
        .iter()
        .find_map(|(used, limit)| {
            Some(Usage {
                used: number(used)?,
                limit: number(limit)?,
                period_end,
            })
        })
    }

    /// Reads `/usage`'s JSON: its numbers through `number` (see
    /// [`from_fields`](Self::from_fields)), and `period_end_utc` through `text` (an ISO 8601
    /// time, see `parse_iso_date`), moved from Unix time onto the gate's clock by `from_wall`.
    pub fn read(
        number: impl Fn(&str) -> Option<f64>,
        text: impl Fn(&str) -> Option<String>,
        from_wall: impl FnOnce(Millis) -> Millis,
    ) -> Option<Usage> {
        let period_end = text("period_end_utc").and_then(|t| parse_iso_date(&t));
        Usage::from_fields(number, period_end.map(from_wall))
    }

    /// The quota is spent: used at or above the limit, a limit of 0 included (a plan with no
    /// credit this period). A negative or missing limit says nothing.
    pub fn exhausted(&self) -> bool {
        self.limit >= 0.0 && self.used >= self.limit
    }
}

/// The gate's view of the quota.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum QuotaState {
    /// Nothing suggests the quota is spent.
    Open,
    /// One `/usage` probe is in flight; nobody starts another.
    Probing,
    /// Spent: calls fail fast until `until` (or until reset, when the period end is unknown).
    Exhausted {
        /// The period's end on the gate's clock, if known.
        until: Option<Millis>,
    },
}

/// Watches 429s and holds the quota state. Probes are single-flight and spaced: after an
/// answer that did not confirm exhaustion (or no answer), no new probe starts for the backoff's
/// ceiling (2 s, doubling with each such answer, up to 60 s), however many 429s come meanwhile.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct QuotaWatch {
    state: QuotaState,
    bare_429s: u32,
    /// Probes in a row that did not confirm exhaustion.
    inconclusive: u32,
    /// No probe starts before this time.
    next_probe_at: Millis,
}

impl Default for QuotaWatch {
    fn default() -> Self {
        QuotaWatch {
            state: QuotaState::Open,
            bare_429s: 0,
            inconclusive: 0,
            next_probe_at: f64::NEG_INFINITY,
        }
    }
}

impl QuotaWatch {
    /// The state at `now`; an exhaustion whose period has ended reopens.
    pub(crate) fn state(&mut self, now: Millis) -> QuotaState {
        if let QuotaState::Exhausted { until: Some(until) } = self.state {
            if now >= until {
                self.state = QuotaState::Open;
            }
        }
        self.state
    }

    /// Records a response's status at `now`. Returns true when a probe should start now: 429s
    /// without `Retry-After` keep coming, no probe is running, and the last answer no longer
    /// stands.
    pub(crate) fn observe(&mut self, now: Millis, status: u16, has_retry_after: bool) -> bool {
        if status != 429 || has_retry_after {
            self.bare_429s = 0;
            return false;
        }
        self.bare_429s += 1;
        self.bare_429s >= SUSPICIOUS_RUN && self.suspect(now)
    }

    /// A 429's body spoke of the quota. Returns true when a probe should start now.
    pub(crate) fn suspect(&mut self, now: Millis) -> bool {
        if self.state(now) != QuotaState::Open || now < self.next_probe_at {
            return false;
        }
        self.state = QuotaState::Probing;
        true
    }

    /// The probe's answer at `now`: `Some` usage when `/usage` answered, `None` when it failed
    /// (the ordinary bounded retries carry on, and a later 429 may probe again, not sooner
    /// than the spacing).
    pub(crate) fn probed(&mut self, now: Millis, usage: Option<Usage>) -> QuotaState {
        self.bare_429s = 0;
        self.state = match usage {
            Some(u) if u.exhausted() => {
                self.inconclusive = 0;
                QuotaState::Exhausted {
                    until: u.period_end,
                }
            }
            _ => {
                self.next_probe_at = now + Backoff::DEFAULT.ceiling(self.inconclusive);
                self.inconclusive += 1;
                QuotaState::Open
            }
        };
        self.state
    }

    /// Exhaustion confirmed elsewhere (another process, through the shared store) until `until`.
    pub(crate) fn close(&mut self, until: Option<Millis>) {
        self.state = QuotaState::Exhausted { until };
    }

    /// The caller says the quota is back (a new plan, a top-up).
    pub(crate) fn reset(&mut self) {
        *self = QuotaWatch::default();
    }

    /// Whether nothing here is worth keeping (as a new watch would be).
    pub(crate) fn idle(&mut self, now: Millis) -> bool {
        self.state(now) == QuotaState::Open && self.bare_429s == 0 && now >= self.next_probe_at
    }
}

/// The 429 a gate keeps to give again to the calls a spent quota refuses (the SDK then raises
/// its own error, as for any answer), in place of a `QuotaExhaustedError`: of the 429s whose
/// bodies were read whole, the latest that names the quota, and until one does, the first. It
/// no longer stands once a call that spends the quota gets an answer that is no refusal (the
/// quota took that one), or the quota is declared back; it goes with its gate. The driver holds
/// the answer itself; this says which, and when it goes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct QuotaAnswer {
    kept: bool,
}

impl QuotaAnswer {
    /// A 429 read whole, whose body names the quota or not: whether it is kept now, in place
    /// of any kept before.
    pub(crate) fn offer(&mut self, names_quota: bool) -> bool {
        let keep = names_quota || !self.kept;
        self.kept |= keep;
        keep
    }

    /// A call got an answer with `status`: whether the kept answer goes now (the call spends
    /// the quota and the answer is no refusal).
    pub(crate) fn answered(&mut self, spends_quota: bool, status: u16) -> bool {
        spends_quota && not_refused(status) && self.reset()
    }

    /// The quota is declared back: whether a kept answer goes now.
    pub(crate) fn reset(&mut self) -> bool {
        std::mem::take(&mut self.kept)
    }

    /// Whether an answer is kept, to be given again.
    pub(crate) fn kept(&self) -> bool {
        self.kept
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_usage_url_given_must_be_absolute_http() {
        assert_eq!(usage_url(None), Ok(None));
        let url = "https://api.odds-api.net/v1/usage".to_string();
        assert_eq!(usage_url(Some(url.clone())), Ok(Some(url)));
        let refused = usage_url(Some("/usage".into())).unwrap_err();
        assert!(refused.is_shape(), "{refused}");
    }

    #[test]
    fn the_first_429_is_kept_until_one_names_the_quota_then_the_latest_that_does() {
        let mut answer = QuotaAnswer::default();
        assert!(!answer.kept());
        assert!(answer.offer(false), "the first, whatever it says");
        assert!(!answer.offer(false), "not a second that names nothing");
        assert!(answer.offer(true), "one that names the quota replaces it");
        assert!(answer.offer(true), "and the latest of those");
        assert!(!answer.offer(false));
        assert!(answer.kept());
    }

    #[test]
    fn a_kept_answer_goes_when_the_quota_takes_an_answer_or_is_declared_back() {
        let mut answer = QuotaAnswer::default();
        assert!(!answer.answered(true, 200), "nothing kept, nothing goes");
        answer.offer(true);
        // A refusal, or an answer to a call that spends no quota (the probe, `/usage`), says
        // nothing of the quota.
        for (spends, status) in [(true, 429), (true, 404), (true, 503), (false, 200)] {
            assert!(!answer.answered(spends, status), "{spends} {status}");
        }
        assert!(answer.kept());
        // No refusal, a status-less one included.
        assert!(answer.answered(true, 0));
        assert!(!answer.kept());
        answer.offer(false);
        assert!(answer.answered(true, 304));
        answer.offer(false);
        assert!(answer.reset());
        assert!(!answer.reset(), "once");
    }

    #[test]
    fn account_calls_are_gets_of_usage_and_limits() {
        let base = "https://api.odds-api.net/v1";
        for (method, path, account) in [
            ("GET", "/usage", true),
            ("get", "/limits/?x=1", true),
            ("GET", "/usage#top", true),
            ("POST", "/usage", false),
            ("GET", "/events/usage-stats", false),
            ("GET", "/events/e1/odds/snapshot", false),
        ] {
            assert_eq!(
                asks_account(method, &format!("{base}{path}")),
                account,
                "{method} {path}"
            );
        }
    }

    #[test]
    fn finds_usage_beside_any_known_route() {
        let base = "https://api.odds-api.net/v1";
        for path in [
            "/events/e1/odds/snapshot?x=1",
            "/events",
            "/bets/snapshot",
            "/limits",
        ] {
            assert_eq!(
                usage_url_for(&format!("{base}{path}")).as_deref(),
                Some("https://api.odds-api.net/v1/usage"),
                "{path}"
            );
        }
        assert_eq!(usage_url_for("http://127.0.0.1:9/v1/eventsx"), None);
        assert_eq!(usage_url_for("not a url"), None);
        // A query before any path: no route, and no out-of-order slice.
        assert_eq!(usage_url_for("http://127.0.0.1:9?next=/events"), None);
    }

    #[test]
    fn a_usage_url_is_an_absolute_http_url() {
        for good in [
            "https://api.odds-api.net/v1/usage",
            "http://127.0.0.1:9/usage",
        ] {
            assert!(valid_usage_url(good), "{good}");
        }
        for bad in [
            "not a url",
            "ftp://x/usage",
            "https://",
            "https:///usage",
            "http://a b/",
        ] {
            assert!(!valid_usage_url(bad), "{bad}");
        }
    }

    #[test]
    fn reads_current_and_legacy_usage_fields() {
        let fields = |pairs: &'static [(&'static str, f64)]| {
            move |name: &str| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| *v)
        };
        let current = Usage::from_fields(
            fields(&[("api_credits_used", 5.0), ("api_credits_limit", 5.0)]),
            None,
        );
        assert!(current.unwrap().exhausted());
        let legacy = Usage::from_fields(
            fields(&[("request_count", 1.0), ("request_limit", 9.0)]),
            None,
        );
        assert!(!legacy.unwrap().exhausted());
        assert_eq!(Usage::from_fields(fields(&[("used", 1.0)]), None), None);
    }

    #[test]
    fn reads_the_period_end_onto_the_gates_clock() {
        let number = |name: &str| (name == "used" || name == "limit").then_some(5.0);
        let end = |text: &'static str| {
            move |name: &str| (name == "period_end_utc").then(|| text.to_string())
        };
        // The gate's clock is 1000 ms behind Unix time here.
        let usage = Usage::read(number, end("1970-01-01T00:00:05Z"), |wall| wall - 1000.0);
        assert_eq!(usage.unwrap().period_end, Some(4000.0));
        let unreadable = Usage::read(number, end("soon"), |wall| wall);
        assert_eq!(unreadable.unwrap().period_end, None);
        assert_eq!(Usage::read(|_| None, end("2027"), |wall| wall), None);
    }

    #[test]
    fn recognises_quota_bodies() {
        assert!(looks_exhausted(Some("quota_exceeded"), None));
        assert!(looks_exhausted(None, Some("Monthly API credits exhausted")));
        assert!(!looks_exhausted(
            Some("rate_limited"),
            Some("Rate limit exceeded")
        ));
        assert!(!looks_exhausted(None, None));
    }

    #[test]
    fn one_probe_for_many_suspicious_429s() {
        let mut q = QuotaWatch::default();
        let starts: Vec<bool> = (0..8).map(|_| q.suspect(0.0)).collect();
        assert_eq!(starts.iter().filter(|&&s| s).count(), 1);
        assert_eq!(q.state(0.0), QuotaState::Probing);
    }

    #[test]
    fn bare_429s_in_a_row_raise_suspicion_but_retry_after_clears_it() {
        let mut q = QuotaWatch::default();
        assert!(!q.observe(0.0, 429, false));
        assert!(!q.observe(0.0, 429, true));
        assert!(!q.observe(0.0, 429, false));
        assert!(!q.observe(0.0, 429, false));
        assert!(q.observe(0.0, 429, false), "the third bare 429 in a row");
        assert!(!q.observe(0.0, 429, false), "one probe at a time");
    }

    #[test]
    fn a_confirmed_exhaustion_is_terminal_until_the_period_ends() {
        let mut q = QuotaWatch::default();
        q.suspect(0.0);
        let usage = Usage {
            used: 1000.0,
            limit: 1000.0,
            period_end: Some(5_000.0),
        };
        assert_eq!(
            q.probed(0.0, Some(usage)),
            QuotaState::Exhausted {
                until: Some(5_000.0)
            }
        );
        assert!(!q.suspect(0.0), "no second probe");
        assert_eq!(
            q.state(4_999.0),
            QuotaState::Exhausted {
                until: Some(5_000.0)
            }
        );
        assert_eq!(q.state(5_000.0), QuotaState::Open);
    }

    #[test]
    fn a_failed_or_negative_probe_reopens_and_spaces_the_next_one() {
        let mut q = QuotaWatch::default();
        assert!(q.suspect(0.0));
        assert_eq!(q.probed(0.0, None), QuotaState::Open);
        assert!(!q.suspect(1_999.0), "the answer stands for 2 s");
        assert!(q.suspect(2_000.0));
        let fine = Usage {
            used: 10.0,
            limit: 1000.0,
            period_end: None,
        };
        assert_eq!(q.probed(2_000.0, Some(fine)), QuotaState::Open);
        assert!(!q.suspect(5_999.0), "then 4 s, doubling");
        assert!(q.suspect(6_000.0));
        for n in 0..10 {
            q.probed(1e6 * f64::from(n), None);
        }
        let at = 1e6 * 9.0;
        assert!(
            !q.suspect(at + 59_999.0) && q.suspect(at + 60_000.0),
            "up to 60 s"
        );
    }

    #[test]
    fn reset_reopens_an_exhaustion_without_period_end() {
        let mut q = QuotaWatch::default();
        q.suspect(0.0);
        q.probed(
            0.0,
            Some(Usage {
                used: 2.0,
                limit: 1.0,
                period_end: None,
            }),
        );
        assert_eq!(q.state(1e15), QuotaState::Exhausted { until: None });
        q.reset();
        assert_eq!(q.state(0.0), QuotaState::Open);
    }
}

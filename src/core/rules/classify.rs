//! Which failures are worth another attempt, and which requests may be sent twice.
//!
//! Retried: 429, 502, 503, 504, a network failure, and our own per-attempt timeout. Never:
//! 400, 401, 403, 404, 422, which fail the same way every time. Only idempotent methods (GET,
//! HEAD, OPTIONS, PUT, DELETE) or a request carrying an `Idempotency-Key` are replayed; a bare
//! POST or PATCH is sent once.

use crate::core::rules::allowance::ConfigError;
use crate::core::Millis;

/// Statuses that mean "this request is wrong", not "try later": never retried, whatever the
/// configuration says.
pub(crate) const NEVER_RETRIED: [u16; 5] = [400, 401, 403, 404, 422];

/// What one attempt came to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Outcome {
    /// A response arrived (its `Retry-After`, if any, already parsed).
    Response {
        /// The HTTP status.
        status: u16,
        /// The server's requested wait, if it gave one we can honour.
        retry_after_ms: Option<Millis>,
    },
    /// The inner fetch rejected: connection refused, reset, DNS.
    Network,
    /// Our own per-attempt timeout fired.
    Timeout,
    /// The inner fetch refused the request itself (a bad URL, headers it cannot send): the
    /// same request fails the same way, so it is final.
    Invalid,
}

/// How an attempt ended, as the bindings' `attempt.js` numbers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// A response arrived (any status).
    Response,
    /// The inner fetch rejected.
    Failed,
    /// The inner fetch rejected, and the request cannot even be made.
    Invalid,
    /// Our per-attempt timeout aborted it.
    TimedOut,
    /// The caller's signal aborted it: never retried.
    CallerAborted,
}

impl Ended {
    /// `attempt.js`'s number: 0 a response, 2 timed out, 3 the caller aborted, 4 a request
    /// that cannot be made; anything else a failed fetch.
    pub fn from_code(code: u8) -> Ended {
        match code {
            0 => Ended::Response,
            2 => Ended::TimedOut,
            3 => Ended::CallerAborted,
            4 => Ended::Invalid,
            _ => Ended::Failed,
        }
    }

    /// The failure an attempt that ended without a response is (`None`: a response, or the
    /// caller's abort, which ends the call instead).
    pub fn failure(self) -> Option<Failure> {
        match self {
            Ended::Response | Ended::CallerAborted => None,
            Ended::TimedOut => Some(Failure::TimedOut),
            Ended::Failed | Ended::Invalid => Some(Failure::Rejected {
                request_valid: self == Ended::Failed,
            }),
        }
    }
}

/// How an attempt ended without a response, as the driver saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// Our per-attempt timeout aborted it.
    TimedOut,
    /// The inner fetch rejected.
    Rejected {
        /// Whether the request can be made at all (`new Request(input, init)` does not throw):
        /// when it cannot, the rejection is the request's fault, not the network's.
        request_valid: bool,
    },
}

impl Failure {
    /// An attempt that could not be sent (no fetch to call, no probe request): it counts as a
    /// network failure, and the call goes on as the policy says.
    pub const UNSENT: Failure = Failure::Rejected {
        request_valid: true,
    };

    /// What the failure counts as: a request that cannot be made (a bad URL, a malformed
    /// header) is a programming error, final and never retried; anything else is the network.
    pub fn outcome(self) -> Outcome {
        match self {
            Failure::TimedOut => Outcome::Timeout,
            Failure::Rejected {
                request_valid: false,
            } => Outcome::Invalid,
            Failure::Rejected { .. } => Outcome::Network,
        }
    }
}

/// A request's body, as far as sending it again goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body {
    /// No body.
    None,
    /// A body fetch can send any number of times (a string, bytes, a `Blob`, form data).
    Reusable,
    /// A stream (an `init.body` stream, or a `Request`'s body): each attempt sends a tee of it.
    Stream,
    /// Something fetch reads once and nothing can copy (an async iterable): sent once.
    OneShot,
}

impl Body {
    /// The kind `reads.js` names by a letter: `r` reusable, `s` a stream, `o` sent once;
    /// anything else no body.
    pub fn from_letter(letter: &str) -> Body {
        match letter {
            "r" => Body::Reusable,
            "s" => Body::Stream,
            "o" => Body::OneShot,
            _ => Body::None,
        }
    }
}

/// The retry budget charges throttling and transient failures differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// 429: the allowance is spent for now.
    Throttle,
    /// 5xx, network failure or timeout: something is unwell.
    Transient,
}

/// Whether an answer with this status took a token of the allowance: a 2xx or 3xx. Only these
/// raise a learner's estimate.
pub(crate) fn took_token(status: u16) -> bool {
    (200..400).contains(&status)
}

/// Whether an answer with this status is no refusal (below 400): a success, as the retry
/// budget's refill and the spent quota's kept answer see it. Unlike [`took_token`] it takes an
/// answer without a status (0: what a custom fetch resolved with, or a status that could not
/// be read) or a 1xx at its word: a refill or a kept answer let go costs little, an estimate
/// raised on such evidence could cost 429s. A rejection has no status and is neither.
pub(crate) fn not_refused(status: u16) -> bool {
    status < 400
}

/// Whether `method` is an HTTP method name: a token (RFC 9110), such as `GET` or `PURGE`.
pub fn valid_method(method: &str) -> bool {
    !method.is_empty()
        && method
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// The retryable sets.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize),
    serde(rename_all = "camelCase")
)]
pub struct RetryRules {
    statuses: Vec<u16>,
    methods: Vec<String>,
}

impl Default for RetryRules {
    fn default() -> Self {
        RetryRules {
            statuses: vec![429, 502, 503, 504],
            methods: ["GET", "HEAD", "OPTIONS", "PUT", "DELETE"]
                .map(String::from)
                .to_vec(),
        }
    }
}

impl RetryRules {
    /// Custom sets. Statuses must be 408, 425, 429 or 5xx; the client-error set above is
    /// refused by name. Methods are compared case-insensitively.
    pub fn new(statuses: Vec<u16>, methods: Vec<String>) -> Result<RetryRules, ConfigError> {
        for &status in &statuses {
            let allowed = matches!(status, 408 | 425 | 429 | 500..=599);
            if !allowed || NEVER_RETRIED.contains(&status) {
                return Err(ConfigError::OutOfRange {
                    field: "retry.statuses",
                    expected: "408, 425, 429 or a 5xx status (4xx client errors fail the same way every time)",
                    got: status.into(),
                });
            }
        }
        let methods = methods
            .into_iter()
            .map(|m| m.to_ascii_uppercase())
            .collect();
        Ok(RetryRules { statuses, methods })
    }

    /// The retryable statuses.
    pub fn statuses(&self) -> &[u16] {
        &self.statuses
    }

    /// The methods that may be replayed without an `Idempotency-Key`.
    pub fn methods(&self) -> &[String] {
        &self.methods
    }

    /// Whether a request may be sent more than once: an idempotent method or an
    /// `Idempotency-Key`, and a body that can be sent again.
    pub(crate) fn may_replay(&self, method: &str, has_idempotency_key: bool, body: Body) -> bool {
        body != Body::OneShot
            && (has_idempotency_key || self.methods.iter().any(|m| m.eq_ignore_ascii_case(method)))
    }

    /// The kind of a failure worth retrying, or `None` when the outcome is final.
    pub(crate) fn retryable(&self, outcome: Outcome) -> Option<Kind> {
        match outcome {
            Outcome::Response { status: 429, .. } if self.statuses.contains(&429) => {
                Some(Kind::Throttle)
            }
            Outcome::Response { status, .. } => {
                self.statuses.contains(&status).then_some(Kind::Transient)
            }
            Outcome::Network | Outcome::Timeout => Some(Kind::Transient),
            Outcome::Invalid => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(status: u16) -> Outcome {
        Outcome::Response {
            status,
            retry_after_ms: None,
        }
    }

    #[test]
    fn retries_throttles_gateway_errors_and_network_failures() {
        let rules = RetryRules::default();
        assert_eq!(rules.retryable(status(429)), Some(Kind::Throttle));
        for s in [502, 503, 504] {
            assert_eq!(rules.retryable(status(s)), Some(Kind::Transient), "{s}");
        }
        assert_eq!(rules.retryable(Outcome::Network), Some(Kind::Transient));
        assert_eq!(rules.retryable(Outcome::Timeout), Some(Kind::Transient));
    }

    #[test]
    fn never_retries_client_errors_or_success() {
        let rules = RetryRules::default();
        for s in [200, 204, 301, 400, 401, 403, 404, 422, 500, 501] {
            assert_eq!(rules.retryable(status(s)), None, "{s}");
        }
    }

    #[test]
    fn replays_only_idempotent_or_keyed_requests() {
        let rules = RetryRules::default();
        for m in ["GET", "get", "HEAD", "OPTIONS", "PUT", "DELETE"] {
            assert!(rules.may_replay(m, false, Body::None), "{m}");
        }
        assert!(!rules.may_replay("POST", false, Body::Reusable));
        assert!(!rules.may_replay("PATCH", false, Body::None));
        assert!(rules.may_replay("POST", true, Body::Stream));
        assert!(
            !rules.may_replay("PUT", true, Body::OneShot),
            "a one-shot body goes once"
        );
    }

    #[test]
    fn a_request_that_cannot_be_made_is_final_not_the_network() {
        let rejected = |request_valid| Failure::Rejected { request_valid };
        assert_eq!(rejected(false).outcome(), Outcome::Invalid);
        assert_eq!(rejected(true).outcome(), Outcome::Network);
        assert_eq!(Failure::TimedOut.outcome(), Outcome::Timeout);
        assert_eq!(RetryRules::default().retryable(Outcome::Invalid), None);
    }

    #[test]
    fn only_a_2xx_or_3xx_took_a_token_while_anything_below_400_is_no_refusal() {
        for s in [200, 204, 301, 304, 399] {
            assert!(took_token(s) && not_refused(s), "{s}");
        }
        // No status (a custom fetch's answer without one) and a 1xx: no refusal, no token.
        for s in [0, 100, 199] {
            assert!(!took_token(s) && not_refused(s), "{s}");
        }
        for s in [400, 404, 429, 500, 503] {
            assert!(!took_token(s) && !not_refused(s), "{s}");
        }
    }

    #[test]
    fn method_names_are_tokens() {
        for m in ["GET", "purge", "M-SEARCH"] {
            assert!(valid_method(m), "{m}");
        }
        for m in ["", "G E T", "GET\r\n", "GÉT", "(GET)"] {
            assert!(!valid_method(m), "{m:?}");
        }
    }

    #[test]
    fn the_sets_are_configurable_but_client_errors_are_refused() {
        let rules = RetryRules::new(vec![503], vec!["get".into()]).unwrap();
        assert_eq!(rules.retryable(status(429)), None);
        assert_eq!(rules.retryable(status(503)), Some(Kind::Transient));
        assert!(rules.may_replay("GET", false, Body::None));
        assert!(!rules.may_replay("DELETE", false, Body::None));
        for s in [400, 401, 403, 404, 422, 200, 302, 418] {
            let err = RetryRules::new(vec![s], vec![]).unwrap_err();
            assert!(err.to_string().contains("retry.statuses"), "{s}");
        }
    }
}

//! `redisStore(client, options)`'s options as given, and what they mean: the key prefix and
//! the [`StoreSettings`], the defaults filling in, each checked.

use super::{OnFailure, StoreSettings};
use crate::core::rules::allowance::ConfigError;

/// `{ prefix, timeoutMs, onFailure, localShare, retryMs }` as given (`None`: left out).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StoreGiven {
    /// What the store's keys start with.
    pub prefix: Option<String>,
    /// [`StoreSettings::timeout_ms`].
    pub timeout_ms: Option<f64>,
    /// `'local'` or `'closed'`.
    pub on_failure: Option<String>,
    /// [`StoreSettings::local_share`].
    pub local_share: Option<f64>,
    /// [`StoreSettings::retry_ms`].
    pub retry_ms: Option<f64>,
}

impl StoreGiven {
    /// The prefix (`og` where left out; braces would pick the key's Redis Cluster slot) and
    /// the settings ([`StoreSettings::DEFAULT`]'s where left out), checked.
    pub fn settings(self) -> Result<(String, StoreSettings), ConfigError> {
        let prefix = match self.prefix {
            None => "og".to_string(),
            Some(p) if !p.is_empty() && !p.contains(['{', '}']) => p,
            Some(_) => {
                return Err(ConfigError::Shape(
                    "Expected `prefix` to be a non-empty string without braces",
                ))
            }
        };
        let d = StoreSettings::DEFAULT;
        let on_failure = match self.on_failure.as_deref() {
            None => d.on_failure,
            Some("local") => OnFailure::Local,
            Some("closed") => OnFailure::Closed,
            Some(_) => {
                return Err(ConfigError::Shape(
                    "Expected `onFailure` to be 'local' or 'closed'",
                ))
            }
        };
        let settings = StoreSettings {
            timeout_ms: self.timeout_ms.unwrap_or(d.timeout_ms),
            retry_ms: self.retry_ms.unwrap_or(d.retry_ms),
            on_failure,
            local_share: self.local_share.unwrap_or(d.local_share),
        };
        Ok((prefix, settings.validate()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn left_out_the_defaults_fill_in() {
        let given = StoreGiven::default().settings();
        assert_eq!(given, Ok(("og".into(), StoreSettings::DEFAULT)));
        let closed = StoreGiven {
            prefix: Some("p".into()),
            on_failure: Some("closed".into()),
            ..StoreGiven::default()
        };
        let (prefix, settings) = closed.settings().unwrap();
        assert_eq!(
            (prefix.as_str(), settings.on_failure),
            ("p", OnFailure::Closed)
        );
    }

    #[test]
    fn a_prefix_or_fail_safe_of_the_wrong_kind_is_a_shape_error_numbers_a_range_error() {
        let refused = |given: StoreGiven| {
            let error = given.settings().unwrap_err();
            (error.is_shape(), error.to_string())
        };
        for prefix in ["", "a{b}"] {
            let given = StoreGiven {
                prefix: Some(prefix.into()),
                ..StoreGiven::default()
            };
            let expected = "Expected `prefix` to be a non-empty string without braces";
            assert_eq!(refused(given), (true, expected.into()));
        }
        let maybe = StoreGiven {
            on_failure: Some("maybe".into()),
            ..StoreGiven::default()
        };
        let expected = "Expected `onFailure` to be 'local' or 'closed'";
        assert_eq!(refused(maybe), (true, expected.into()));
        let share = StoreGiven {
            local_share: Some(2.0),
            ..StoreGiven::default()
        };
        let expected = "`localShare` must be a number greater than 0 and at most 1, got 2";
        assert_eq!(refused(share), (false, expected.into()));
    }
}

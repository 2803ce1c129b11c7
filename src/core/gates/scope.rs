//! Which allowance a request draws from: the credential it carries, known only by a hash so the
//! raw key is never kept, logged or shown.

use std::rc::Rc;

use sha2::{Digest, Sha256};

use crate::core::base::hex::hex;
use crate::core::rules::cache::cacheable;
use crate::core::rules::cache_request::CacheRequest;
use crate::core::rules::classify::Body;
use crate::core::rules::routes::OVERFLOW;

/// What makes two GETs the same for the cache: the credential (its scope, a hash), the URL and
/// a hash of `Accept` and every part of the request that carries identity.
pub type RequestKey = (Scope, String, String);

/// The cache's key of a request: a GET without a body, by its credential's scope (`api_key`,
/// `authorization`), its URL and its identity (`request`'s `Accept` and credentials, the
/// headers `key_headers` names: [`CacheRequest::identity`]); `None` for any other, never
/// cached: another method, a body, a request that asks to go upstream, or one that carries no
/// identity.
pub fn request_key(
    (api_key, authorization): (Option<&str>, Option<&str>),
    (method, body): (&str, Body),
    url: String,
    (request, key_headers): (&CacheRequest, &[String]),
) -> Option<RequestKey> {
    if !cacheable(method, body) || request.goes_upstream() {
        return None;
    }
    let identity = request.identity(&url, key_headers)?;
    Some((Scope::of(api_key, authorization), url, identity))
}

/// The name of one allowance: a short hash of the credential, safe to log and to use as a
/// store key. Shared, not copied: a gate's entry and the gates' map by scope hold one string.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Scope(Rc<str>);

impl Scope {
    /// The scope of requests that carry no credential at all.
    pub(crate) fn anonymous() -> Scope {
        Scope(Rc::from("anonymous"))
    }

    /// The scope of a credential. `X-API-Key` names the key's allowance, so it wins over an
    /// `Authorization` header when both are sent; an empty (or blank) value is no credential.
    pub fn of(api_key: Option<&str>, authorization: Option<&str>) -> Scope {
        let Some((kind, secret)) = credential(api_key, authorization) else {
            return Scope::anonymous();
        };
        let mut hash = Sha256::new();
        hash.update(b"odds-gate/v1\0");
        hash.update(kind.as_bytes());
        hash.update(b"\0");
        hash.update(secret.as_bytes());
        let digest = hash.finalize();
        // 128 bits: collisions are out of reach, and the prefix alone says nothing of the key.
        Scope(Rc::from(format!("key:{}", hex(&digest[..16]))))
    }

    /// The scope's printable name.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The scope of limiter `limiter` of this credential: its own allowance, apart from
    /// the credential's first limiter (whose scope is the credential's).
    pub fn in_limiter(&self, limiter: &str) -> Scope {
        Scope(Rc::from(format!("{}#{limiter}", self.credential().0)))
    }

    /// Whether this is the scope of a limiter beside the credential's first that counts against
    /// its [`MAX_LIMITERS`](crate::core::rules::routes::MAX_LIMITERS) (the [`OVERFLOW`] gate,
    /// past them, does not).
    pub(crate) fn capped_limiter(&self) -> bool {
        (self.0.split_once('#')).is_some_and(|(_, limiter)| limiter != OVERFLOW)
    }

    /// The credential's scope, without a limiter.
    pub(crate) fn credential(&self) -> Scope {
        match self.0.split_once('#') {
            Some((credential, _)) => Scope(Rc::from(credential)),
            None => self.clone(),
        }
    }
}

/// Whether `value` can be sent as a header value: no CR, LF or NUL (a credential holding one
/// is refused before it reaches the network, so no error anywhere repeats it).
pub fn sendable(value: &str) -> bool {
    !value.bytes().any(|b| matches!(b, b'\r' | b'\n' | 0))
}

/// Which header names the allowance, and its value, trimmed as the server would; an empty
/// value is absent (`X-API-Key: ''` beside an `Authorization` leaves the `Authorization`).
fn credential<'a>(
    api_key: Option<&'a str>,
    authorization: Option<&'a str>,
) -> Option<(&'static str, &'a str)> {
    let present = |value: Option<&'a str>| value.map(str::trim).filter(|v| !v.is_empty());
    match (present(api_key), present(authorization)) {
        (Some(key), _) => Some(("x-api-key", key)),
        (None, Some(auth)) => Some(("authorization", auth)),
        (None, None) => None,
    }
}

/// A credential's 128-bit keyed fingerprint (see [`fingerprint`]).
pub(crate) type Print = (u64, u64);

/// A keyed 128-bit fingerprint of a credential (two 64-bit lanes with keys of their own), for
/// finding the gate a wrapper already holds without a SHA-256 on every call. Equal whenever
/// [`Scope::of`] is; for two different credentials, equal only by a chance of about 2^-112
/// (each byte step is a bijection of a lane's state, so two inputs that differ stay apart unless
/// a later byte cancels the difference in both lanes). `keys` are the process's own random
/// keys, so a fingerprint says nothing of the credential anywhere else.
pub(crate) fn fingerprint(
    api_key: Option<&str>,
    authorization: Option<&str>,
    keys: (u64, u64),
) -> (u64, u64) {
    let (kind, secret) = credential(api_key, authorization).unwrap_or(("", ""));
    lanes(kind.bytes().chain([0]).chain(secret.bytes()), keys)
}

impl Scope {
    /// The scope's keyed fingerprint (as [`fingerprint`] makes one of a credential): what a
    /// forgotten gate's estimate is kept under, in 16 bytes rather than the name's 40 or more.
    pub(crate) fn print(&self, keys: (u64, u64)) -> (u64, u64) {
        lanes(self.0.bytes(), keys)
    }
}

/// Two keyed 64-bit lanes over `bytes`, each finished so every input bit reaches every output
/// bit (see [`fingerprint`]).
fn lanes(bytes: impl Iterator<Item = u8>, keys: (u64, u64)) -> (u64, u64) {
    let mut lanes = [keys.0, keys.1];
    for byte in bytes {
        for (lane, k) in lanes
            .iter_mut()
            .zip([0x517c_c1b7_2722_0a95, 0x9e37_79b9_7f4a_7c15])
        {
            *lane = (lane.rotate_left(5) ^ u64::from(byte)).wrapping_mul(k);
        }
    }
    // MurmurHash3's finaliser: every input bit reaches every output bit.
    let finish = |mut state: u64| {
        state ^= state >> 33;
        state = state.wrapping_mul(0xff51_afd7_ed55_8ccd);
        state ^= state >> 33;
        state = state.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        state ^ (state >> 33)
    };
    (finish(lanes[0]), finish(lanes[1]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_scope_names_its_credential() {
        let key = Scope::of(Some("k"), None);
        let events = key.in_limiter("events");
        assert_eq!(events.as_str(), format!("{}#events", key.as_str()));
        assert_eq!(events.credential(), key);
        assert_eq!(events.in_limiter("a#b").credential(), key);
    }

    #[test]
    fn the_same_key_is_the_same_scope() {
        assert_eq!(Scope::of(Some("k1"), None), Scope::of(Some("k1"), None));
        assert_eq!(Scope::of(Some(" k1 "), None), Scope::of(Some("k1"), None));
    }

    #[test]
    fn different_credentials_never_share() {
        let a = Scope::of(Some("k1"), None);
        let b = Scope::of(Some("k2"), None);
        let bearer = Scope::of(None, Some("k1"));
        assert_ne!(a, b);
        assert_ne!(a, bearer);
        assert_ne!(a, Scope::anonymous());
    }

    #[test]
    fn an_empty_value_is_no_credential() {
        assert_eq!(Scope::of(Some(""), None), Scope::anonymous());
        assert_eq!(Scope::of(Some("  "), Some("")), Scope::anonymous());
        let a = Scope::of(Some(""), Some("Bearer A"));
        assert_eq!(a, Scope::of(None, Some("Bearer A")));
        assert_ne!(a, Scope::of(Some(""), Some("Bearer B")));
    }

    #[test]
    fn the_api_key_wins_over_authorization() {
        assert_eq!(
            Scope::of(Some("k1"), Some("Bearer t")),
            Scope::of(Some("k1"), None)
        );
    }

    #[test]
    fn fingerprints_agree_with_scopes() {
        let print = |k, a| fingerprint(k, a, (7, 9));
        assert_eq!(
            print(Some(" k1 "), None),
            print(Some("k1"), Some("Bearer t"))
        );
        assert_ne!(print(Some("k1"), None), print(Some("k2"), None));
        assert_ne!(print(Some("k1"), None), print(None, Some("k1")));
        // An empty value is no credential, for the scope and its fingerprint alike.
        assert_eq!(print(None, None), print(Some(""), None));
        assert_eq!(
            print(Some(" "), Some("Bearer A")),
            print(None, Some("Bearer A"))
        );
        // Other keys, another process: the same credential, an unrelated fingerprint.
        assert_ne!(
            print(Some("k1"), None),
            fingerprint(Some("k1"), None, (8, 9))
        );
    }

    #[test]
    fn scope_prints_tell_limiters_and_processes_apart() {
        let key = Scope::of(Some("k1"), None);
        assert_eq!(key.print((7, 9)), key.clone().print((7, 9)));
        assert_ne!(key.print((7, 9)), key.in_limiter("events").print((7, 9)));
        assert_ne!(key.print((7, 9)), Scope::of(Some("k2"), None).print((7, 9)));
        assert_ne!(key.print((7, 9)), key.print((8, 9)));
    }

    #[test]
    fn a_credential_with_a_line_break_cannot_be_sent() {
        assert!(sendable("sk-live-123 abc"));
        for bad in ["sk\r\nX-Evil: 1", "sk\n", "sk\0"] {
            assert!(!sendable(bad), "{bad:?}");
        }
    }

    #[test]
    fn never_contains_the_raw_key() {
        let key = "super-secret-key-0123456789";
        let scope = Scope::of(Some(key), None);
        assert!(!scope.as_str().contains(key));
        assert!(!scope.as_str().contains("secret"));
        assert_eq!(scope.as_str().len(), "key:".len() + 32);
    }
}

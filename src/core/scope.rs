//! Which allowance a request draws from: the credential it carries, known only by a hash so the
//! raw key is never kept, logged or shown.

use std::hash::Hasher;

use sha2::{Digest, Sha256};

/// The name of one allowance: a short hash of the credential, safe to log and to use as a
/// store key.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Scope(String);

impl Scope {
    /// The scope of requests that carry no credential at all.
    pub fn anonymous() -> Scope {
        Scope("anonymous".to_string())
    }

    /// The scope of a credential. `X-API-Key` names the key's allowance, so it wins over an
    /// `Authorization` header when both are sent.
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
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut name = String::with_capacity(4 + 32);
        name.push_str("key:");
        for b in &digest[..16] {
            name.push(HEX[usize::from(b >> 4)] as char);
            name.push(HEX[usize::from(b & 15)] as char);
        }
        Scope(name)
    }

    /// The scope's printable name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Which header names the allowance, and its value, trimmed as the server would.
fn credential<'a>(
    api_key: Option<&'a str>,
    authorization: Option<&'a str>,
) -> Option<(&'static str, &'a str)> {
    match (api_key, authorization) {
        (Some(key), _) => Some(("x-api-key", key.trim())),
        (None, Some(auth)) => Some(("authorization", auth.trim())),
        (None, None) => None,
    }
}

/// A keyed 64-bit fingerprint of a credential, for finding the gate a wrapper already holds
/// without a SHA-256 on every call. Equal for two requests exactly when [`Scope::of`] is (but
/// for a 2^-64 chance); `keys` are the process's own random keys, so the fingerprint says
/// nothing of the key anywhere else.
pub fn fingerprint(api_key: Option<&str>, authorization: Option<&str>, keys: (u64, u64)) -> u64 {
    // SipHash-2-4 is deprecated only as a `Hasher` for maps; it is the keyed hash we want.
    #[allow(deprecated)]
    let mut hasher = std::hash::SipHasher::new_with_keys(keys.0, keys.1);
    match credential(api_key, authorization) {
        Some((kind, secret)) => {
            hasher.write(kind.as_bytes());
            hasher.write_u8(0);
            hasher.write(secret.as_bytes());
        }
        None => hasher.write_u8(1),
    }
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn the_api_key_wins_over_authorization() {
        assert_eq!(
            Scope::of(Some("k1"), Some("Bearer t")),
            Scope::of(Some("k1"), None)
        );
    }

    #[test]
    fn fingerprints_agree_with_scopes() {
        let keys = (7, 11);
        let print = |k, a| fingerprint(k, a, keys);
        assert_eq!(
            print(Some(" k1 "), None),
            print(Some("k1"), Some("Bearer t"))
        );
        assert_ne!(print(Some("k1"), None), print(Some("k2"), None));
        assert_ne!(print(Some("k1"), None), print(None, Some("k1")));
        assert_ne!(print(None, None), print(Some(""), None));
        // Other keys, another process: the same credential, an unrelated fingerprint.
        assert_ne!(
            print(Some("k1"), None),
            fingerprint(Some("k1"), None, (8, 11))
        );
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

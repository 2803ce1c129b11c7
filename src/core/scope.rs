//! Which allowance a request draws from: the credential it carries, known only by a hash so the
//! raw key is never kept, logged or shown.

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
        let (kind, secret) = match (api_key, authorization) {
            (Some(key), _) => ("x-api-key", key),
            (None, Some(auth)) => ("authorization", auth),
            (None, None) => return Scope::anonymous(),
        };
        let mut hash = Sha256::new();
        hash.update(b"odds-gate/v1\0");
        hash.update(kind.as_bytes());
        hash.update(b"\0");
        hash.update(secret.trim().as_bytes());
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
    fn never_contains_the_raw_key() {
        let key = "super-secret-key-0123456789";
        let scope = Scope::of(Some(key), None);
        assert!(!scope.as_str().contains(key));
        assert!(!scope.as_str().contains("secret"));
        assert_eq!(scope.as_str().len(), "key:".len() + 32);
    }
}

//! What a GET's own headers tell the cache (RFC 9111 for a private cache): whether the caller
//! asked to go past it (`cache: 'no-store'`, `Cache-Control: no-cache`, `Range`, a conditional
//! header), which of its parts carry identity (so an entry is only found by the same
//! credentials), and which values an answer's `Vary` selects.
//!
//! Rules, one per line:
//! - `init.cache` (or a `Request`'s `cache`) `no-store`, `no-cache` or `reload`: upstream;
//! - `Cache-Control: no-store`, `no-cache` or `max-age` (any: we keep no age per caller), or
//!   `Pragma: no-cache`: upstream;
//! - `Range`, `If-None-Match`, `If-Modified-Since`, `If-Match`, `If-Unmodified-Since`,
//!   `If-Range`: upstream (a part, or a 304, is not the whole 200 another caller gets);
//! - identity is every non-empty value of `Authorization`, `Proxy-Authorization`, `Cookie`,
//!   `X-API-Key` and the headers `cache.keyHeaders` names, and the URL's `apiKey`; an empty
//!   value is absent; a request with none is neither kept nor joined to another's;
//! - `Vary: *` is never reused; `Vary: a, b` makes the values of `a` and `b` part of the match.

use sha2::{Digest, Sha256};

use crate::core::base::hex::hex;

/// The request headers that carry identity, whatever `cache.keyHeaders` adds.
pub const IDENTITY_HEADERS: [&str; 4] = [
    "authorization",
    "proxy-authorization",
    "cookie",
    "x-api-key",
];

/// The request headers that ask for something other than the whole, current answer.
const UPSTREAM_HEADERS: [&str; 6] = [
    "range",
    "if-none-match",
    "if-modified-since",
    "if-match",
    "if-unmodified-since",
    "if-range",
];

/// What the bindings write for a request whose headers cannot be written as words (a NUL in
/// one): it is left to go upstream.
pub const UNREADABLE: &str = "\u{2}";

/// A GET's headers as the cache reads them: names in lower case, sorted, repeated names joined
/// with `, ` in the order given (as `Headers` does); and the fetch's `cache` mode.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CacheRequest {
    mode: String,
    headers: Vec<(String, String)>,
}

impl CacheRequest {
    /// A request of `mode` (`init.cache`; '' when none) with `headers` in any case and order.
    pub fn new<'a>(mode: &str, headers: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let mut all: Vec<(String, String)> = Vec::new();
        for (name, value) in headers {
            let name = name.trim().to_ascii_lowercase();
            match all.iter_mut().find(|(n, _)| *n == name) {
                Some((_, joined)) => {
                    joined.push_str(", ");
                    joined.push_str(value);
                }
                None => all.push((name, value.to_owned())),
            }
        }
        all.sort_by(|a, b| a.0.cmp(&b.0));
        CacheRequest {
            mode: mode.to_owned(),
            headers: all,
        }
    }

    /// The request the bindings wrote as `mode \0 name \0 value \0 ...` (see `reads.js`'s
    /// `cacheFacts`); `None` when the words do not pair up or are [`UNREADABLE`] (the request
    /// then goes upstream).
    pub fn parse(words: &str) -> Option<Self> {
        let mut parts = words.split('\0');
        let mode = parts.next().filter(|&m| m != UNREADABLE)?;
        let rest: Vec<&str> = parts.collect();
        if rest.len() % 2 != 0 {
            return None;
        }
        Some(CacheRequest::new(
            mode,
            rest.chunks(2).map(|pair| (pair[0], pair[1])),
        ))
    }

    /// Header `name`'s value (`name` in lower case), trimmed; `None` when absent or empty.
    pub fn header(&self, name: &str) -> Option<&str> {
        let at = self
            .headers
            .binary_search_by(|(n, _)| n.as_str().cmp(name))
            .ok()?;
        Some(self.headers[at].1.trim()).filter(|v| !v.is_empty())
    }

    /// Whether the caller asked to go past the cache (see the rules above): the request is
    /// sent as it is, never answered from an entry nor joined to another's request.
    pub fn goes_upstream(&self) -> bool {
        if matches!(self.mode.as_str(), "no-store" | "no-cache" | "reload") {
            return true;
        }
        if UPSTREAM_HEADERS.iter().any(|n| self.has(n)) {
            return true;
        }
        let directives = |name| {
            self.header(name)
                .unwrap_or("")
                .split(',')
                .map(|d| {
                    d.split('=')
                        .next()
                        .unwrap_or("")
                        .trim()
                        .to_ascii_lowercase()
                })
                .collect::<Vec<_>>()
        };
        let control = directives("cache-control");
        control
            .iter()
            .any(|d| matches!(d.as_str(), "no-store" | "no-cache" | "max-age"))
            || directives("pragma").iter().any(|d| d == "no-cache")
    }

    /// Whether header `name` was sent at all (even empty).
    fn has(&self, name: &str) -> bool {
        self.headers
            .binary_search_by(|(n, _)| n.as_str().cmp(name))
            .is_ok()
    }

    /// What identifies the request beside its gate's scope: a hash of `Accept` and every part
    /// that carries identity (see the rules above), never the values themselves; `None` when
    /// no part does, and the request is not cached. `key_headers` in lower case, sorted, once
    /// each, as `Cache::key_headers` gives them.
    pub fn identity(&self, url: &str, key_headers: &[String]) -> Option<String> {
        let mut hash = Sha256::new();
        hash.update(b"odds-gate/cache-identity/v1\0");
        hash.update(self.header("accept").unwrap_or("").as_bytes());
        let mut found = false;
        // No list made per call: `key_headers` comes sorted and deduplicated (`Cache::
        // with_key_headers`); a name among the built-in ones is read once, with them.
        let extra = key_headers.iter().map(String::as_str);
        let extra = extra.filter(|n| !IDENTITY_HEADERS.contains(n));
        for name in IDENTITY_HEADERS.iter().copied().chain(extra) {
            if let Some(value) = self.header(name) {
                found = true;
                hash.update(b"\0");
                hash.update(name.as_bytes());
                hash.update(b"\0");
                hash.update(value.as_bytes());
            }
        }
        if !(found || url_has_api_key(url)) {
            return None;
        }
        Some(hex(&hash.finalize()[..16]))
    }

    /// A hash of the values of the headers `names` (lower case), absent ones included as
    /// absent: two requests an answer's `Vary: names` treats alike have the same.
    fn selected(&self, names: &[String]) -> [u8; 16] {
        let mut hash = Sha256::new();
        hash.update(b"odds-gate/vary/v1");
        for name in names {
            hash.update(b"\0");
            hash.update(name.as_bytes());
            match self.header(name) {
                Some(value) => {
                    hash.update(b"\0=");
                    hash.update(value.as_bytes());
                }
                None => hash.update(b"\0-"),
            }
        }
        let mut out = [0; 16];
        out.copy_from_slice(&hash.finalize()[..16]);
        out
    }
}

/// Whether `url`'s query names an `apiKey` (any case) with a value.
fn url_has_api_key(url: &str) -> bool {
    let Some((_, query)) = url.split_once('?') else {
        return false;
    };
    let query = query.split('#').next().unwrap_or("");
    query.split('&').any(|pair| match pair.split_once('=') {
        Some((name, value)) => name.eq_ignore_ascii_case("apikey") && !value.is_empty(),
        None => false,
    })
}

/// What an answer's `Vary` asks of the requests it may answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Vary {
    /// No `Vary`: any request under the entry's key.
    #[default]
    Any,
    /// `Vary: *`: no other request, ever (not kept, nobody joins it).
    Never,
    /// Only requests whose values of these headers (lower case, sorted) match the one that
    /// fetched it, by a hash of those values.
    On(Vec<String>, [u8; 16]),
}

impl Vary {
    /// What an answer's `Vary` header (`None`: absent) means for the request that fetched it.
    pub fn of(header: Option<&str>, fetched_by: &CacheRequest) -> Vary {
        let mut names: Vec<String> = (header.unwrap_or("").split(','))
            .map(|n| n.trim().to_ascii_lowercase())
            .filter(|n| !n.is_empty())
            .collect();
        if names.iter().any(|n| n == "*") {
            return Vary::Never;
        }
        if names.is_empty() {
            return Vary::Any;
        }
        names.sort_unstable();
        names.dedup();
        let print = fetched_by.selected(&names);
        Vary::On(names, print)
    }

    /// Whether the answer may answer `request`.
    pub fn matches(&self, request: &CacheRequest) -> bool {
        match self {
            Vary::Any => true,
            Vary::Never => false,
            Vary::On(names, print) => request.selected(names) == *print,
        }
    }

    /// Whether the answer may be kept and shared at all (not `Vary: *`).
    pub fn keeps(&self) -> bool {
        *self != Vary::Never
    }
}

//! Never a wrong answer (#48), on the virtual clock: a kept or coalesced answer only ever reaches
//! a caller with the same credentials as the request that fetched it, in every place a request
//! carries one; an answer's `Vary` is honoured; a caller that asks to go upstream does. Each row
//! of the table is a test here; the property test draws requests with credentials in
//! random places and checks every answer against the caller's own.
#![cfg(not(target_arch = "wasm32"))]

use odds_gate::core::gates::scope::{request_key, RequestKey};
use odds_gate::core::rules::cache::{Cache, CacheConfig, Landed, Lookup};
use odds_gate::core::rules::cache_request::CacheRequest;
use odds_gate::core::rules::classify::Body;
use proptest::prelude::*;

const URL: &str = "https://api.example/v1/events/e1/odds/snapshot";

/// The key of a GET of `url` with `headers`, as the bindings make it: the gate's scope from
/// `X-API-Key` or `Authorization` (any case), the rest from the headers.
fn key_in(url: &str, headers: &[(&str, &str)], key_headers: &[String]) -> Option<RequestKey> {
    let request = CacheRequest::new("", headers.iter().copied());
    let credential = (
        request
            .header("x-api-key")
            .map(|_| header(headers, "x-api-key")),
        request
            .header("authorization")
            .map(|_| header(headers, "authorization")),
    );
    let credential = (credential.0.as_deref(), credential.1.as_deref());
    request_key(
        credential,
        ("GET", Body::None),
        url.into(),
        (&request, key_headers),
    )
}

fn header(headers: &[(&str, &str)], name: &str) -> String {
    let found = headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name));
    found.map(|(_, v)| v.to_string()).unwrap_or_default()
}

fn key(headers: &[(&str, &str)]) -> Option<RequestKey> {
    key_in(URL, headers, &[])
}

#[test]
fn an_empty_api_key_beside_authorization_is_no_credential() {
    let a = key(&[("X-API-Key", ""), ("Authorization", "Bearer A")]);
    let b = key(&[("X-API-Key", ""), ("Authorization", "Bearer B")]);
    assert!(a.is_some() && b.is_some());
    assert_ne!(a, b);
    // The gate's scope too: the `Authorization`'s, as if the empty key were not sent.
    assert_eq!(
        a.unwrap().0,
        key(&[("Authorization", "Bearer A")]).unwrap().0
    );
}

#[test]
fn the_same_api_key_with_another_authorization_or_cookie_is_another_caller() {
    let with = |name, value| key(&[("X-API-Key", "k1"), (name, value)]);
    assert_ne!(
        with("Authorization", "Bearer A"),
        with("Authorization", "Bearer B")
    );
    assert_ne!(with("Cookie", "session=A"), with("Cookie", "session=B"));
    assert_ne!(
        with("Proxy-Authorization", "Basic A"),
        with("Proxy-Authorization", "Basic B")
    );
    assert_ne!(with("Cookie", "session=A"), key(&[("X-API-Key", "k1")]));
    // An empty one is as if not sent.
    assert_eq!(with("Cookie", ""), key(&[("X-API-Key", "k1")]));
    // Header names in any case, values as the server trims them.
    assert_eq!(with("cOOKIE", " session=A "), with("Cookie", "session=A"));
}

#[test]
fn a_cookie_alone_is_a_credential() {
    let a = key(&[("Cookie", "session=A")]);
    let b = key(&[("Cookie", "session=B")]);
    assert!(a.is_some());
    assert_ne!(a, b);
}

#[test]
fn a_custom_credential_header_is_not_cached_unless_key_headers_names_it() {
    assert_eq!(key(&[("X-Odds-Key", "A")]), None);
    let named = ["x-odds-key".to_string()];
    let a = key_in(URL, &[("X-Odds-Key", "A")], &named);
    let b = key_in(URL, &[("x-odds-key", "B")], &named);
    assert!(a.is_some());
    assert_ne!(a, b);
    // Named, but not sent (or empty): still no identity, still not cached.
    assert_eq!(key_in(URL, &[("X-Odds-Key", " ")], &named), None);
    // With a key as well, the named header still tells callers apart.
    let both = |v| key_in(URL, &[("X-API-Key", "k1"), ("X-Odds-Key", v)], &named);
    assert_ne!(both("A"), both("B"));
}

#[test]
fn a_request_without_any_credential_is_neither_kept_nor_joined() {
    assert_eq!(key(&[]), None);
    assert_eq!(
        key(&[("Accept", "application/json"), ("X-API-Key", "")]),
        None
    );
    // The API's own `apiKey` in the query is one (the URL, in the key, tells them apart).
    let a = key_in(&format!("{URL}?apiKey=A"), &[], &[]);
    let b = key_in(&format!("{URL}?markets=h2h&APIKEY=B"), &[], &[]);
    assert!(a.is_some() && b.is_some());
    assert_ne!(a, b);
    assert_eq!(key_in(&format!("{URL}?apiKey="), &[], &[]), None);
}

#[test]
fn a_caller_that_asks_to_go_upstream_goes() {
    let k = ("X-API-Key", "k1");
    for asked in [
        ("Cache-Control", "no-cache"),
        ("Cache-Control", "no-store"),
        ("cache-control", "max-age=0"),
        ("Cache-Control", "private, MAX-AGE=30"),
        ("Pragma", "no-cache"),
        ("Range", "bytes=0-3"),
        ("If-None-Match", "\"v1\""),
        ("If-Modified-Since", "Mon, 07 Dec 2026 00:00:00 GMT"),
        ("If-Match", "*"),
        ("If-Unmodified-Since", "Mon, 07 Dec 2026 00:00:00 GMT"),
        ("If-Range", "\"v1\""),
    ] {
        assert_eq!(key(&[k, asked]), None, "{asked:?}");
    }
    for mode in ["no-store", "no-cache", "reload"] {
        let request = CacheRequest::new(mode, [k]);
        assert!(request.goes_upstream(), "{mode}");
    }
    for mode in ["", "default", "force-cache"] {
        assert!(!CacheRequest::new(mode, [k]).goes_upstream(), "{mode}");
    }
    assert!(key(&[k, ("Cache-Control", "max-stale=5")]).is_some());
}

#[test]
fn the_bindings_words_read_back_and_a_nul_goes_upstream() {
    let request = CacheRequest::parse("no-store\0X-API-Key\0k1\0cookie\0a=1").unwrap();
    assert!(request.goes_upstream());
    assert_eq!(request.header("cookie"), Some("a=1"));
    assert_eq!(request.header("x-api-key"), Some("k1"));
    // Repeated names join as `Headers` joins them.
    let joined = CacheRequest::parse("\0Cookie\0a=1\0cookie\0b=2").unwrap();
    assert_eq!(joined.header("cookie"), Some("a=1, b=2"));
    assert_eq!(CacheRequest::parse("\0X-API-Key"), None);
    assert_eq!(CacheRequest::parse("\u{2}"), None);
}

// --- Vary, through the cache itself ---

fn ask(headers: &[(&str, &str)]) -> CacheRequest {
    CacheRequest::new("", headers.iter().copied())
}

fn ok(ms: f64) -> Landed {
    Landed::Ok {
        bytes: 100.0,
        lifetime: Some(ms),
    }
}

const fn never() -> bool {
    false
}

#[test]
fn vary_names_headers_whose_values_must_match() {
    for (vary, name) in [("Cookie", "cookie"), ("Accept-Language", "accept-language")] {
        let mut c: Cache<&str, u32> = Cache::new(CacheConfig::DEFAULT);
        let en = ask(&[(name, "en")]);
        let de = ask(&[(name, "de")]);
        // A request in flight: a caller with other values joins, and is told to send its own.
        assert_eq!(c.lookup(0.0, &"k", (1, &en), never), Lookup::Lead);
        assert_eq!(c.lookup(0.0, &"k", (2, &de), never), Lookup::Joined);
        assert_eq!(
            c.lookup(0.0, &"k", (3, &ask(&[(name, " en ")])), never),
            Lookup::Joined
        );
        let settled = c.landed(5.0, &"k", 1, (ok(1_000.0), Some(vary)));
        assert_eq!(settled.waiting, vec![1, 3], "{vary}");
        assert_eq!(settled.resend, vec![2], "{vary}");
        // Kept, but never shared: another thread or process could not match it.
        assert!(settled.kept.is_some());
        assert_eq!(settled.share_ms, 0.0);
        // Kept for the values that fetched it only.
        assert!(matches!(
            c.lookup(10.0, &"k", (4, &en), never),
            Lookup::Fresh { .. }
        ));
        assert_eq!(c.lookup(10.0, &"k", (5, &de), never), Lookup::Lead);
        assert_eq!(c.lookup(10.0, &"k", (6, &ask(&[])), never), Lookup::Joined);
    }
}

#[test]
fn vary_star_is_never_reused() {
    let mut c: Cache<&str, u32> = Cache::new(CacheConfig::DEFAULT);
    let same = ask(&[("x-api-key", "k1")]);
    c.lookup(0.0, &"k", (1, &same), never);
    c.lookup(0.0, &"k", (2, &same), never);
    let settled = c.landed(5.0, &"k", 1, (ok(1_000.0), Some("Accept, *")));
    assert_eq!((settled.waiting, settled.resend), (vec![1], vec![2]));
    assert_eq!(settled.kept, None);
    assert_eq!(c.lookup(6.0, &"k", (3, &same), never), Lookup::Lead);
}

#[test]
fn without_vary_an_answer_is_shared_while_fresh() {
    let mut c: Cache<&str, u32> = Cache::new(CacheConfig::DEFAULT);
    let same = ask(&[("x-api-key", "k1")]);
    c.lookup(0.0, &"k", (1, &same), never);
    let settled = c.landed(5.0, &"k", 1, (ok(1_000.0), Some(" ")));
    assert_eq!(settled.share_ms, 1_000.0);
    c.lookup(2_000.0, &"k", (2, &same), never);
    // Stale at once (a lifetime of 0, kept for stale use): kept, not shared.
    let settled = c.landed(2_000.0, &"k", 2, (ok(0.0), None));
    assert!(settled.kept.is_some());
    assert_eq!(settled.share_ms, 0.0);
}

#[test]
fn a_stale_answer_reaches_the_callers_waiting_only_when_vary_accepts_them_all() {
    use odds_gate::core::rules::cache::Refusal;
    let mut c: Cache<&str, u32> = Cache::new(CacheConfig::DEFAULT);
    let en = ask(&[("accept-language", "en")]);
    let de = ask(&[("accept-language", "de")]);
    c.lookup(0.0, &"k", (1, &en), never);
    c.landed(0.0, &"k", 1, (ok(10.0), Some("Accept-Language")));
    // Past its lifetime: a leader in English, one caller in German waiting on it.
    assert_eq!(c.lookup(100.0, &"k", (2, &en), never), Lookup::Lead);
    assert_eq!(c.lookup(100.0, &"k", (3, &de), never), Lookup::Joined);
    assert_eq!(c.refused(101.0, &"k", 2, Refusal::Quota), None);
    // With only the English callers waiting, the stale entry answers them.
    c.landed(102.0, &"k", 2, (Landed::Other, None));
    c.lookup(103.0, &"k", (4, &en), never);
    c.lookup(103.0, &"k", (5, &en), never);
    assert_eq!(
        c.refused(104.0, &"k", 4, Refusal::Quota).map(|a| a.1),
        Some(vec![4, 5])
    );
}

// --- the property: nobody ever gets bytes fetched under other credentials ---

/// The identity headers a drawn request carries, each from a small pool (so callers collide),
/// in a random case, empty or absent.
fn drawn_headers() -> impl Strategy<Value = Vec<(String, String)>> {
    let names = [
        "x-api-key",
        "authorization",
        "cookie",
        "proxy-authorization",
        "x-odds-key",
        "accept-language",
    ];
    let one = (0..names.len(), 0..4usize, any::<bool>(), 0..3u8);
    prop::collection::vec(one, 0..5).prop_map(move |picks| {
        picks
            .into_iter()
            .map(|(n, v, upper, pad)| {
                let name = names[n];
                let name = if upper {
                    name.to_ascii_uppercase()
                } else {
                    name.to_string()
                };
                let value = ["", "A", "B", "C"][v];
                let pad = " ".repeat(usize::from(pad));
                (name, format!("{pad}{value}{pad}"))
            })
            .collect()
    })
}

/// What a caller's credentials are, as the server would read them: every identity header's
/// trimmed, non-empty value (repeated names joined), by lower-case name.
fn credentials(headers: &[(String, String)], named: &[String]) -> Vec<(String, String)> {
    let request = CacheRequest::new("", headers.iter().map(|(n, v)| (n.as_str(), v.as_str())));
    let mut out: Vec<(String, String)> = [
        "x-api-key",
        "authorization",
        "cookie",
        "proxy-authorization",
    ]
    .iter()
    .map(|n| n.to_string())
    .chain(named.iter().cloned())
    .filter_map(|n| request.header(&n).map(|v| (n.clone(), v.to_string())))
    .collect();
    out.sort();
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Calls arrive, join, land (with or without `Vary`) and are answered from entries over a
    /// virtual second; every answer a caller gets was fetched under its own credentials.
    #[test]
    fn no_caller_gets_an_answer_fetched_under_other_credentials(
        calls in prop::collection::vec((drawn_headers(), 0..3u8, 0..3u8), 1..60),
        named in any::<bool>(),
    ) {
        let named: Vec<String> = if named { vec!["x-odds-key".into()] } else { vec![] };
        let mut c: Cache<RequestKey, u32> = Cache::new(CacheConfig::DEFAULT);
        // What each caller sent, and which request (by its leader) fetched each kept entry.
        let mut sent: Vec<Vec<(String, String)>> = Vec::new();
        let mut fetched_by: std::collections::HashMap<u64, u32> = Default::default();
        let mut in_flight: Vec<(RequestKey, u32)> = Vec::new();
        let mut answered = 0;
        for (i, (headers, vary, act)) in calls.iter().enumerate() {
            let now = i as f64 * 20.0;
            let caller = i as u32;
            sent.push(headers.clone());
            let pairs: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
            let request = CacheRequest::new("", pairs.iter().copied());
            // The gate's scope as the bindings read it: X-API-Key, else Authorization.
            let api_key = request.header("x-api-key");
            let auth = request.header("authorization");
            let Some(k) = request_key((api_key, auth), ("GET", Body::None), URL.into(), (&request, &named)) else {
                continue;
            };
            let mine = credentials(headers, &named);
            match c.lookup(now, &k, (caller, &request), never) {
                Lookup::Fresh { entry, .. } | Lookup::Stale { entry, .. } => {
                    let by = fetched_by[&entry];
                    prop_assert_eq!(&credentials(&sent[by as usize], &named), &mine);
                    answered += 1;
                }
                Lookup::Joined => {}
                Lookup::Lead => in_flight.push((k.clone(), caller)),
            }
            // Now and then the oldest request in flight lands.
            if *act > 0 && !in_flight.is_empty() {
                let (k, leader) = in_flight.remove(0);
                let vary = [None, Some("Accept-Language"), Some("*")][usize::from(*vary)];
                let settled = c.landed(now, &k, leader, (ok(50.0), vary));
                for w in settled.waiting {
                    prop_assert_eq!(&credentials(&sent[w as usize], &named), &credentials(&sent[leader as usize], &named));
                    answered += 1;
                }
                if let Some(id) = settled.kept {
                    fetched_by.insert(id, leader);
                }
            }
        }
        prop_assert!(answered <= calls.len());
    }
}

//! The other end of a simulated request: a [`Server`] answers each attempt with a [`Reply`]
//! (a status and headers after a latency, a failure, or nothing at all). [`Allowances`] is the
//! simulator's own: one token bucket per limiter of the key, with `Retry-After` on every
//! 429, and rate-limit headers on every answer, on 429s only, or never.

use crate::core::base::map::Map;
use crate::core::gate::respond::BodyFacts;
use crate::core::parse::feedback::Feedback;
use crate::core::rules::allowance::Rate;
use crate::core::rules::bucket::TokenBucket;
use crate::core::rules::quota::Usage;
use crate::core::Millis;

/// What the server does with one attempt.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// A response after `latency` ms.
    Status {
        /// Its status.
        status: u16,
        /// Its headers.
        headers: Vec<(&'static str, String)>,
        /// What its JSON body says, when it says anything the gate reads.
        body: Option<BodyFacts>,
        /// From the attempt to the response, in ms.
        latency: Millis,
    },
    /// A response after `latency` ms whose headers are given as the gate reads them (the
    /// simulator's server: its `Retry-After` is exact to the millisecond).
    Read {
        /// Its status.
        status: u16,
        /// What its headers say.
        feedback: Feedback,
        /// From the attempt to the response, in ms.
        latency: Millis,
    },
    /// The fetch rejects after `latency` ms.
    Fail {
        /// From the attempt to the rejection, in ms.
        latency: Millis,
    },
    /// Nothing comes back (only the attempt's time limit ends it).
    Hang,
}

impl Reply {
    /// A 200 at once.
    pub fn ok() -> Reply {
        Reply::status(200, &[])
    }

    /// `status` with `headers`, at once.
    pub fn status(status: u16, headers: &[(&'static str, &str)]) -> Reply {
        Reply::Status {
            status,
            headers: headers.iter().map(|(k, v)| (*k, v.to_string())).collect(),
            body: None,
            latency: 0.0,
        }
    }

    /// The same reply, `ms` later.
    pub fn after(mut self, ms: Millis) -> Reply {
        match &mut self {
            Reply::Status { latency, .. }
            | Reply::Read { latency, .. }
            | Reply::Fail { latency } => *latency = ms,
            Reply::Hang => {}
        }
        self
    }

    /// The same reply with a body whose `code` and `detail` say this.
    pub fn saying(mut self, code: &str, detail: &str) -> Reply {
        if let Reply::Status { body, .. } = &mut self {
            *body = Some(BodyFacts {
                code: Some(code.into()),
                detail: Some(detail.into()),
            });
        }
        self
    }

    /// How long until it comes back, if it does.
    pub fn latency(&self) -> Option<Millis> {
        match self {
            Reply::Status { latency, .. }
            | Reply::Read { latency, .. }
            | Reply::Fail { latency } => Some(*latency),
            Reply::Hang => None,
        }
    }
}

/// One attempt as the server sees it.
#[derive(Debug, Clone, Copy)]
pub struct Arrival<'a> {
    /// The process that sent it.
    pub process: usize,
    /// The call's number in the order calls were started.
    pub index: usize,
    /// Which attempt of the call this is (1 for the first).
    pub number: u32,
    /// Its method.
    pub method: &'a str,
    /// Its URL.
    pub url: &'a str,
    /// The credential it carries.
    pub key: &'a str,
}

/// Answers attempts.
pub trait Server {
    /// The reply to `attempt`, sent at `now`.
    fn reply(&mut self, now: Millis, attempt: &Arrival) -> Reply;

    /// What `/usage` says at `now`, for a server that counts the credits its answers spend;
    /// `None` leaves it to the world's fixed [`World::usage`](super::world::World::usage).
    fn usage(&mut self, _now: Millis) -> Option<Usage> {
        None
    }
}

impl<F: FnMut(Millis, &Arrival) -> Reply> Server for F {
    fn reply(&mut self, now: Millis, attempt: &Arrival) -> Reply {
        self(now, attempt)
    }
}

/// Where the server's rate-limit headers go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Headers {
    /// On no answer: 429 and `Retry-After` speak alone.
    Never,
    /// On every answer.
    Always,
    /// On 429s only (where the API's OpenAPI documents them).
    OnThrottle,
}

/// One limiter of the key: the routes whose path contains `path` draw from it.
#[derive(Debug, Clone)]
pub struct Limiter {
    /// Its name (`X-RateLimit-Bucket`), when the server names it.
    pub name: Option<String>,
    /// A piece of path that picks its routes ("" for every route another limiter does not
    /// pick).
    pub path: String,
    /// Its allowance.
    pub rate: Rate,
}

/// The simulator's server: a token bucket per limiter, full at time 0, and a
/// `Retry-After` on every 429.
#[derive(Debug)]
pub struct Allowances {
    limiters: Vec<(Limiter, TokenBucket)>,
    /// `Retry-After` on a 429, in ms.
    pub retry_after_ms: Millis,
    /// Where `X-RateLimit-Limit`/`-Remaining` go.
    pub headers: Headers,
    /// Reject everything (a persistent failure).
    pub always_reject: bool,
    /// From arrival to the response, in ms.
    pub latency_ms: Millis,
    /// The attempt numbers whose 429 says `Retry-After: 0` (the article's last attempts, which
    /// defer nobody): a call's attempts from this number on.
    pub quiet_from: Option<u32>,
    /// What each limiter answered: 200s and 429s, by name.
    pub counts: Map<String, (u64, u64)>,
    /// How this server differs from an honest one.
    pub quirks: Quirks,
    /// Attempts answered so far.
    answered: u64,
    /// Attempts that reached a limiter so far (answered or not).
    arrived: u64,
}

/// What the counts in a server's headers say.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Counts {
    /// The limiter's tokens, as they are.
    #[default]
    Truth,
    /// A monthly quota's: `limit`, and what is left of it, one less per answer that took one.
    Quota {
        /// The quota.
        limit: u64,
        /// Left of it at time 0.
        left: u64,
    },
    /// The same remaining count on every answer, whatever the tokens.
    Stuck(u64),
    /// A remaining count this much above the limit.
    Above(u64),
}

/// How a server differs from an honest one (all off by default).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Quirks {
    /// Every `n`-th attempt is a 503 that takes no token (and has no `Retry-After`).
    pub unavailable_every: Option<u64>,
    /// The first `n` attempts are 404s that carry the counts and take no token.
    pub missing_first: u64,
    /// What the counts say.
    pub counts: Counts,
    /// From this time on, every limiter's allowance is this one.
    pub change: Option<(Millis, Rate)>,
    /// Before this time, every attempt is a 503 with no `Retry-After` and no counts that takes
    /// no token: an outage in front of the limiters (a load balancer with no backend).
    pub outage_until: Option<Millis>,
    /// The first `n` answers that carry counts claim this limit and remaining instead (a
    /// quota's count on the first answer): `(n, limit, remaining)`.
    pub claim: Option<(u64, u64, u64)>,
    /// The first `n` attempts get no answer at all.
    pub hang_first: u64,
}

impl Allowances {
    /// A server whose limiters are `limiters` (the first whose path matches an attempt's URL
    /// answers it; the last should match everything).
    pub fn new(limiters: Vec<Limiter>, retry_after_ms: Millis) -> Allowances {
        Allowances {
            limiters: limiters
                .into_iter()
                .map(|l| {
                    let bucket = TokenBucket::new(l.rate, 0.0);
                    (l, bucket)
                })
                .collect(),
            retry_after_ms,
            headers: Headers::Never,
            always_reject: false,
            latency_ms: 0.0,
            quiet_from: None,
            counts: Map::default(),
            quirks: Quirks::default(),
            answered: 0,
            arrived: 0,
        }
    }
}

impl Server for Allowances {
    fn reply(&mut self, now: Millis, attempt: &Arrival) -> Reply {
        let Some((limiter, bucket)) = self
            .limiters
            .iter_mut()
            .find(|(l, _)| attempt.url.contains(l.path.as_str()))
        else {
            return Reply::status(404, &[]).after(self.latency_ms);
        };
        self.arrived += 1;
        if self.arrived <= self.quirks.hang_first {
            return Reply::Hang;
        }
        if self.quirks.outage_until.is_some_and(|until| now < until) {
            let (feedback, latency) = (Feedback::default(), self.latency_ms);
            return Reply::Read {
                status: 503,
                feedback,
                latency,
            };
        }
        self.answered += 1;
        let q = self.quirks;
        if let Some((at, rate)) = q.change.filter(|&(at, _)| now >= at) {
            if bucket.rate() != rate {
                bucket.retune(at.max(0.0), rate, None);
            }
        }
        let limit = bucket.rate().burst();
        let counted_on = |ok: bool| match self.headers {
            Headers::Never => false,
            Headers::Always => true,
            Headers::OnThrottle => !ok,
        };
        // Answers that take no token: a 404 of a missing event, a 503 of an overloaded server.
        let missing = self.answered <= q.missing_first;
        let unavailable = q.unavailable_every.is_some_and(|n| self.answered % n == 0);
        if missing || unavailable {
            let status = if missing { 404 } else { 503 };
            let left = bucket.tokens(now).floor().max(0.0) as u64;
            let counted = counted_on(true);
            let feedback = Feedback {
                limit: counted.then_some(limit as u64),
                remaining: counted.then_some(left),
                limiter: limiter.name.clone().filter(|_| counted),
                ..Feedback::default()
            };
            let latency = self.latency_ms;
            return Reply::Read {
                status,
                feedback,
                latency,
            };
        }
        let ok = !self.always_reject && bucket.take(now);
        let status = if ok { 200 } else { 429 };
        let count = self
            .counts
            .entry(limiter.name.clone().unwrap_or_default())
            .or_default();
        match ok {
            true => count.0 += 1,
            false => count.1 += 1,
        }
        let quiet = self.quiet_from.is_some_and(|n| attempt.number >= n);
        let counted = counted_on(ok);
        let tokens = bucket.tokens(now).floor().max(0.0) as u64;
        let claimed = q.claim.filter(|&(n, _, _)| counted && self.answered <= n);
        let (limit, left) = match q.counts {
            _ if claimed.is_some() => claimed.map_or((0, 0), |(_, l, r)| (l, r)),
            Counts::Truth => (limit as u64, tokens),
            Counts::Quota { limit, left } => {
                let spent = self.counts.values().map(|c| c.0).sum::<u64>();
                (limit, left.saturating_sub(spent))
            }
            Counts::Stuck(n) => (limit as u64, n),
            Counts::Above(n) => (limit as u64, limit as u64 + n),
        };
        let feedback = Feedback {
            retry_after_ms: (!ok).then_some(if quiet { 0.0 } else { self.retry_after_ms }),
            limit: counted.then_some(limit),
            remaining: counted.then_some(left),
            limiter: limiter.name.clone().filter(|_| counted || !ok),
            ..Feedback::default()
        };
        Reply::Read {
            status,
            feedback,
            latency: self.latency_ms,
        }
    }
}

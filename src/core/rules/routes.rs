//! Which limiter a credential's route draws from (`X-RateLimit-Bucket`), as answers
//! say: a route is the method and the path, ids written `*`; a route nobody has heard from
//! sends one call ahead (its scout) and the rest wait behind it.

use crate::core::base::room::push_one;

/// Routes a credential remembers the limiter of; past this, new routes stay on the first limiter
/// and send no scout.
pub(crate) const MAX_ROUTES: usize = 256;

/// Gates a credential may have for limiters other than its first; the calls of a limiter past
/// them go to one more gate, the credential's [`OVERFLOW`] (a limiter name per resource must
/// not grow memory with every resource).
pub const MAX_LIMITERS: usize = 16;

/// The limiter name of the gate the calls of every limiter past [`MAX_LIMITERS`] share. It
/// learns from the answers of any of them: a limiter per resource most often gives each
/// resource the same allowance, and a gate that heard none of them would pace their calls
/// from its opening, a second apart.
pub const OVERFLOW: &str = "*";

/// What a call's answer said of its route's limiter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LimiterFeedback {
    /// It came from this limiter (`X-RateLimit-Bucket`).
    Limiter(String),
    /// An answer that named no limiter: the route draws from the gate it was sent through.
    Unnamed,
    /// No answer (the scout failed or ended): the next call of the route scouts again.
    Nothing,
}

/// Which limiter each of a credential's routes draws from, as its answers said. A route
/// not heard of draws from the credential's first limiter, its first call scouting ahead (see
/// [`CallSpec::scout`]).
///
/// [`CallSpec::scout`]: crate::core::gate::call::CallSpec::scout
///
/// Vectors searched in order, not hash sets: a credential has a handful of routes (at most
/// [`MAX_ROUTES`]), and each hashed table was another copy of the table's code in the module.
#[derive(Debug, Default)]
pub(crate) struct Routes {
    /// Routes that draw from another limiter than the first, and that limiter.
    other: Vec<(String, String)>,
    /// Routes an answer spoke for.
    heard: Vec<String>,
    /// Routes whose scout is out.
    scouting: Vec<String>,
}

/// Where `route` is in `routes`.
fn find(routes: &[String], route: &str) -> Option<usize> {
    routes.iter().position(|r| r == route)
}

impl Routes {
    /// The limiter `route` draws from, when it is not the credential's first.
    pub(crate) fn limiter(&self, route: &str) -> Option<&str> {
        let (_, limiter) = self.other.iter().find(|(r, _)| r == route)?;
        Some(limiter)
    }

    /// What a new call of `route` does: it scouts when no answer spoke for the route yet and no
    /// scout is out (one is out from now on); it waits behind the scout while one is out.
    pub(crate) fn role(&mut self, route: &str) -> Role {
        if find(&self.heard, route).is_some() {
            return Role::Free;
        }
        if find(&self.scouting, route).is_some() {
            return Role::BehindScout;
        }
        if self.heard.len() + self.scouting.len() >= MAX_ROUTES {
            return Role::Free;
        }
        push_one(&mut self.scouting, route.to_owned());
        Role::Scout
    }

    /// What an answer to a call of `route` said of its limiter (`first` is the credential's
    /// first limiter, when known). An answer that names none keeps the route where it went; no
    /// answer lets the next call scout again.
    pub(crate) fn heard(&mut self, route: &str, heard: &LimiterFeedback, first: Option<&str>) {
        if let Some(at) = find(&self.scouting, route) {
            self.scouting.swap_remove(at);
            if self.scouting.is_empty() {
                // No scout out: nothing held for one (most credentials scout a route or two).
                self.scouting = Vec::new();
            }
        }
        let limiter = match heard {
            LimiterFeedback::Nothing => return,
            LimiterFeedback::Unnamed => None,
            LimiterFeedback::Limiter(limiter) => Some(limiter.as_str()),
        };
        if self.heard.len() < MAX_ROUTES && find(&self.heard, route).is_none() {
            push_one(&mut self.heard, route.to_owned());
        }
        let other = limiter.filter(|&limiter| first != Some(limiter));
        match (other, self.other.iter().position(|(r, _)| r == route)) {
            (Some(limiter), Some(at)) => self.other[at].1 = limiter.to_owned(),
            (Some(limiter), None) if self.other.len() < MAX_ROUTES => {
                push_one(&mut self.other, (route.to_owned(), limiter.to_owned()));
            }
            (None, Some(at)) => {
                self.other.swap_remove(at);
            }
            (_, None) => {}
        }
    }
}

/// What a call does for its route (see [`Routes::role`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// Its route's limiter is known (or not tracked): it goes to its gate's queue.
    Free,
    /// It goes first, to learn its route's limiter.
    Scout,
    /// It waits for its route's scout.
    BehindScout,
}

/// Longest route kept: a longer path is cut, so a hostile URL cannot grow memory.
const MAX_ROUTE_LEN: usize = 200;

/// A request's route, as limiters are told apart: the method and the URL's path, each
/// segment that holds a digit (an id, a version) or is longer than 24 characters written `*`.
/// `GET https://api.odds-api.net/v1/events/e1/odds/snapshot?x=1` is
/// `GET /*/events/*/odds/snapshot`.
pub(crate) fn route_of(method: &str, url: &str) -> String {
    let after_scheme = url.split_once("://").map_or(url, |(_, rest)| rest);
    let path = match after_scheme.find('/') {
        Some(at) if url.contains("://") => &after_scheme[at..],
        None if url.contains("://") => "/",
        _ => after_scheme,
    };
    let path = path.split(['?', '#']).next().unwrap_or_default();
    let mut route = String::with_capacity(method.len() + path.len() + 1);
    route.push_str(method);
    route.push(' ');
    for (i, segment) in path.split('/').enumerate() {
        if i > 0 {
            route.push('/');
        }
        let id = segment.len() > 24 || segment.bytes().any(|b| b.is_ascii_digit());
        route.push_str(if id { "*" } else { segment });
        if route.len() > MAX_ROUTE_LEN {
            break;
        }
    }
    route.chars().take(MAX_ROUTE_LEN).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_route_is_the_method_and_the_path_without_its_ids() {
        let snapshot = "https://api.odds-api.net/v1/events/e1-2/odds/snapshot?markets=h2h";
        assert_eq!(route_of("GET", snapshot), "GET /*/events/*/odds/snapshot");
        assert_eq!(
            route_of("GET", "http://127.0.0.1:3000/v1/events/abc123"),
            "GET /*/events/*"
        );
        assert_eq!(route_of("GET", "http://h/v1/usage#x"), "GET /*/usage");
        assert_eq!(route_of("POST", "http://h"), "POST /");
        let long = format!("http://h/{}", "a/".repeat(500));
        assert!(route_of("GET", &long).len() <= MAX_ROUTE_LEN);
    }

    #[test]
    fn routes_remember_buckets_other_than_the_first() {
        let events = "GET /*/events/*";
        let mut routes = Routes::default();
        assert_eq!(routes.role(events), Role::Scout);
        assert_eq!(
            routes.role(events),
            Role::BehindScout,
            "one scout at a time"
        );
        routes.heard(events, &LimiterFeedback::Nothing, Some("snapshot"));
        assert_eq!(
            routes.role(events),
            Role::Scout,
            "a failed scout's successor"
        );
        routes.heard(
            events,
            &LimiterFeedback::Limiter("events".into()),
            Some("snapshot"),
        );
        assert_eq!(routes.limiter(events), Some("events"));
        assert_eq!(routes.role(events), Role::Free, "heard: no more scouts");
        assert_eq!(routes.limiter("GET /*/usage"), None);
        // The route moved to the first limiter: it draws from the credential's gate again.
        routes.heard(
            events,
            &LimiterFeedback::Limiter("snapshot".into()),
            Some("snapshot"),
        );
        assert_eq!(routes.limiter(events), None);
        for i in 0..MAX_ROUTES + 10 {
            routes.heard(
                &format!("GET /r{i}"),
                &LimiterFeedback::Limiter("other".into()),
                None,
            );
        }
        assert_eq!(routes.other.len(), MAX_ROUTES);
        assert_eq!(routes.role("GET /new"), Role::Free, "bounded");
    }

    #[test]
    fn an_answer_that_names_no_bucket_ends_the_scouting_for_good() {
        let mut routes = Routes::default();
        assert_eq!(routes.role("GET /*/odds"), Role::Scout);
        routes.heard("GET /*/odds", &LimiterFeedback::Unnamed, None);
        // Its next calls go in call order: none overtakes the queue as a scout again.
        assert_eq!(routes.role("GET /*/odds"), Role::Free);
        assert_eq!(routes.limiter("GET /*/odds"), None);
    }
}

//! What a call costs in credits, by route ([`Costs`]): the stated route patterns and how a
//! route matches them, and what the readings' deltas teach of the rest. Kept apart from the
//! bucket, which only hands them each reading.

use crate::core::rules::allowance::ConfigError;
use crate::core::rules::routes::MAX_ROUTES;

/// What a call costs in credits, by route: stated (`quota.costs`, a route pattern to credits),
/// or learned from the readings, or 1 (what the API says most calls cost).
///
/// A pattern matches the end of a route's path segment by segment, `*` standing for any one
/// segment, after an optional method (`GET /events/*/odds/history` matches
/// `GET /*/events/*/odds/history`); the pattern with the most segments wins, the first of
/// those in order.
///
/// Learning: the rule's user counts the calls it sends per route ([`called`](Self::called)) and
/// hands the costs to each reading ([`CreditBucket::read`]), which has them learn from what the
/// server counted since the last one (its delta). What the stated routes cost comes off the
/// delta; what is left is the other routes'. One route called in the interval: its cost
/// is what is left over its calls. Several: their costs are all scaled by what is left over
/// what they were thought to cost, so their sum is right but not their ratio, until an interval
/// calls one of them alone. Another process spending the same key reads as a higher cost here
/// (the fleet's count of calls, not this process's, removes that).
///
/// [`CreditBucket::read`]: super::CreditBucket::read
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Costs {
    stated: Vec<(String, f64)>,
    /// What each unstated route was learned to cost. This and `calls` are vectors searched in
    /// order: a credential has a handful of routes (at most [`MAX_ROUTES`]), and each hashed
    /// table was another copy of its code in the module.
    learned: Vec<(String, f64)>,
    /// Calls per route since the last delta, in the order of their routes' first calls.
    calls: Vec<(String, u32)>,
}

/// The value kept for `route` in `pairs`.
fn value_of<'a, T>(pairs: &'a mut [(String, T)], route: &str) -> Option<&'a mut T> {
    let (_, value) = pairs.iter_mut().find(|(r, _)| r == route)?;
    Some(value)
}

impl Costs {
    /// Costs with these stated: each a route pattern (see the type's docs) and a finite
    /// number >= 0, at most as many as the routes a credential's calls are told apart by.
    pub fn new(stated: Vec<(String, f64)>) -> Result<Costs, ConfigError> {
        if stated.len() > MAX_ROUTES {
            return Err(ConfigError::OutOfRange {
                field: "quota.costs",
                expected:
                    "at most 256 route patterns (the routes a credential's calls are told apart by)",
                got: stated.len() as f64,
            });
        }
        for (pattern, credits) in &stated {
            if !is_pattern(pattern) {
                return Err(ConfigError::Key {
                    field: "quota.costs",
                    key: pattern.clone(),
                    expected: "route patterns (a path from `/`, no query, `*` for any one \
                               segment, after an optional HTTP method in capitals: \
                               `GET /events/*/odds/history`)",
                });
            }
            if !(credits.is_finite() && *credits >= 0.0) {
                return Err(ConfigError::OutOfRange {
                    field: "quota.costs",
                    expected: "credits, a finite number >= 0",
                    got: *credits,
                });
            }
        }
        Ok(Costs {
            stated,
            ..Costs::default()
        })
    }

    /// The costs stated, pattern and credits, in order.
    pub(crate) fn stated(&self) -> &[(String, f64)] {
        &self.stated
    }

    /// What a call of `route` costs.
    // Never inlined: one copy for its callers (smaller gzipped).
    #[inline(never)]
    pub fn cost(&self, route: &str) -> f64 {
        self.stated_cost(route)
            .or_else(|| {
                self.learned
                    .iter()
                    .find(|(r, _)| r == route)
                    .map(|&(_, c)| c)
            })
            .unwrap_or(1.0)
    }

    /// Whether what a call of `route` costs is stated.
    pub(crate) fn is_stated(&self, route: &str) -> bool {
        self.stated_cost(route).is_some()
    }

    /// Calls counted since the last delta of routes whose cost is neither stated nor learned.
    pub(crate) fn unlearned_calls(&self) -> u32 {
        (self.calls.iter())
            .filter(|(route, _)| {
                self.stated_cost(route).is_none() && !self.learned.iter().any(|(r, _)| r == route)
            })
            .map(|(_, n)| n)
            .sum()
    }

    /// A call of `route` was sent.
    pub fn called(&mut self, route: &str) {
        if let Some(n) = value_of(&mut self.calls, route) {
            *n += 1;
        } else if self.calls.len() < MAX_ROUTES {
            self.calls.push((route.to_owned(), 1));
        }
    }

    /// Learns from a reading's delta (`None` forgets the calls counted, as across a period's
    /// turn) over the calls counted since the last one. Returns what those calls cost, by
    /// what is known now.
    pub(super) fn learn(&mut self, delta: Option<f64>) -> f64 {
        let calls = std::mem::take(&mut self.calls);
        let Some(delta) = delta else {
            return 0.0;
        };
        let mut left = delta;
        let (mut thought, mut unknown) = (0.0, 0.0);
        for (route, n) in &calls {
            let n = *n;
            match self.stated_cost(route) {
                Some(credits) => left -= credits * f64::from(n),
                None => {
                    thought += self.cost(route) * f64::from(n);
                    unknown += f64::from(n);
                }
            }
        }
        let left = left.max(0.0);
        for (route, _) in &calls {
            if self.stated_cost(route).is_some() {
                continue;
            }
            let cost = if thought > 0.0 {
                self.cost(route) * left / thought
            } else {
                left / unknown
            };
            if let Some(kept) = value_of(&mut self.learned, route) {
                *kept = cost;
            } else if self.learned.len() < MAX_ROUTES {
                self.learned.push((route.clone(), cost));
            }
        }
        calls
            .iter()
            .map(|(route, n)| self.cost(route) * f64::from(*n))
            .sum()
    }

    fn stated_cost(&self, route: &str) -> Option<f64> {
        let (method, path) = route.split_once(' ').unwrap_or(("", route));
        let mut best: Option<(usize, f64)> = None;
        for (pattern, credits) in &self.stated {
            let (want, pattern) = match pattern.split_once(' ') {
                Some((want, rest)) => (Some(want), rest),
                None => (None, pattern.as_str()),
            };
            let segments = pattern.trim_matches('/').split('/');
            let mut route_segments = path.trim_matches('/').split('/').rev();
            let n = segments.clone().count();
            let matches = want.is_none_or(|m| m.eq_ignore_ascii_case(method))
                && segments
                    .rev()
                    .all(|s| route_segments.next().is_some_and(|r| s == "*" || s == r));
            if matches && best.is_none_or(|(most, _)| n > most) {
                best = Some((n, *credits));
            }
        }
        best.map(|(_, credits)| credits)
    }
}

/// Whether `pattern` is a route pattern: a path from `/` (a segment at least, no spaces, no
/// query or fragment) after an optional method.
fn is_pattern(pattern: &str) -> bool {
    let (method, path) = pattern.split_once(' ').unwrap_or(("GET", pattern));
    METHODS.contains(&method)
        && path.starts_with('/')
        && !path.trim_matches('/').is_empty()
        && path
            .bytes()
            .all(|b| b > b' ' && b != 0x7f && b != b'?' && b != b'#')
}

/// The methods a pattern may name: HTTP's, as a request carries them. A key like
/// `'odds history'` or `'FOO /odds'` is a mistake, not a method.
const METHODS: [&str; 7] = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stated_costs_match_the_end_of_the_route_and_come_first() {
        let mut costs = Costs::new(vec![
            ("/odds/history".into(), 3.0),
            ("GET /events/*/odds/history".into(), 5.0),
            ("POST /bets".into(), 2.0),
        ])
        .unwrap();
        assert_eq!(
            costs.cost("GET /*/events/*/odds/history"),
            5.0,
            "the longest"
        );
        assert_eq!(costs.cost("GET /*/sports/*/odds/history"), 3.0);
        assert_eq!(costs.cost("GET /*/bets"), 1.0, "another method");
        assert_eq!(costs.cost("POST /*/bets"), 2.0);
        costs.called("GET /*/events/*/odds/history");
        assert_eq!(
            costs.learn(Some(40.0)),
            5.0,
            "the call costs what is stated"
        );
        assert_eq!(
            costs.cost("GET /*/events/*/odds/history"),
            5.0,
            "stated, not learned"
        );
    }

    #[test]
    fn a_key_that_is_not_a_route_pattern_is_refused_by_name() {
        for key in [
            "FOO /odds",
            "/odds?x=1",
            "GET",
            "*",
            "odds history",
            "get /odds",
            "https://x/y",
        ] {
            let error = Costs::new(vec![(key.into(), 1.0)]).unwrap_err();
            let message = error.message(|n| n.to_string());
            assert!(
                message.ends_with(&format!("as keys, got {key:?}")),
                "{message}"
            );
        }
        for key in [
            "/odds",
            "GET /events/*/odds",
            "POST /bets",
            "/*/odds/history/",
        ] {
            assert!(Costs::new(vec![(key.into(), 1.0)]).is_ok(), "{key}");
        }
    }

    #[test]
    fn learns_a_route_called_alone_and_scales_several() {
        let mut costs = Costs::new(vec![("/usage".into(), 0.0)]).unwrap();
        let (a, b) = ("GET /*/a", "GET /*/b");
        for _ in 0..4 {
            costs.called(a);
        }
        costs.called("GET /*/usage");
        assert_eq!(costs.learn(Some(20.0)), 20.0);
        assert_eq!(costs.cost(a), 5.0);
        // Two routes: thought to cost 5 + 1, the server counted 12: both doubled.
        costs.called(a);
        costs.called(b);
        assert_eq!(costs.learn(Some(12.0)), 12.0);
        assert_eq!((costs.cost(a), costs.cost(b)), (10.0, 2.0));
        costs.called(b);
        costs.learn(None);
        assert_eq!(costs.learn(Some(7.0)), 0.0, "no calls counted");
        assert_eq!(
            costs.cost(b),
            2.0,
            "a period's turn forgets the calls counted"
        );
    }
}

//! The evidence the refill rate is bounded from: a [`Mark`] per answer kept, each bounding the
//! rate to a later one, and the numbers of the answers that took no token ([`Untaken`]), which
//! the requests counted between two marks leave out.

use std::collections::VecDeque;

use crate::core::Millis;

/// One answer to bound the rate from: when its request went and its answer came, what was
/// left, the request's number (with [`Sample::ahead`] and [`Sample::heard`]), and how many
/// answers had taken no token by then.
///
/// [`Sample::ahead`]: super::answer::Sample::ahead
/// [`Sample::heard`]: super::answer::Sample::heard
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Mark {
    pub(super) sent: Millis,
    pub(super) at: Millis,
    pub(super) remaining: f64,
    pub(super) seq: f64,
    pub(super) ahead: f64,
    pub(super) heard: f64,
    pub(super) untaken: f64,
}

impl Mark {
    /// The lower bound on the refill rate (per second) from `self` to `later`, when `later`'s
    /// request surely reached the server after `self`'s (it went after `self`'s answer came).
    /// Requests do not reach the server in the order they were numbered (connections open at
    /// their own pace, latency varies): counted between the two are only those surely taken
    /// between (numbered after what `self`'s answer had seen, and not still out when `later`'s
    /// went), over the longest time the two can lie apart at the server.
    /// `untaken` says how many answers numbered between took no token (see
    /// [`Untaken::between`]).
    pub(super) fn bound_to(&self, later: &Mark, untaken: &Untaken) -> Option<f64> {
        if later.at <= self.at || later.seq <= self.heard {
            return None;
        }
        let between = (later.seq - self.heard) - later.ahead;
        let taken = between - untaken.between(self, later);
        let dt = (later.at - self.sent) / 1000.0;
        Some((later.remaining - self.remaining - 1.0 + taken) / dt)
    }
}

/// The numbers of the latest answers that took no token: the requests between two marks that
/// took none are these, where the count of every such answer since the first mark would also
/// take off answers to requests numbered before it (out when it came).
#[derive(Debug, Clone, Default)]
pub(super) struct Untaken {
    seqs: VecDeque<f64>,
    /// The highest number let go to keep [`UNTAKEN_KEPT`].
    forgotten: f64,
}

/// Numbers of answers that took no token kept, at most.
const UNTAKEN_KEPT: usize = 64;

impl Untaken {
    pub(super) fn push(&mut self, seq: f64) {
        if self.seqs.len() == UNTAKEN_KEPT {
            if let Some(old) = self.seqs.pop_front() {
                self.forgotten = self.forgotten.max(old);
            }
        }
        self.seqs.push_back(seq);
    }

    /// Answers numbered after what `from`'s answer had seen, up to `to`'s own, that took no
    /// token; every one that came between the two when some may have been let go.
    fn between(&self, from: &Mark, to: &Mark) -> f64 {
        if self.forgotten > from.heard {
            return (to.untaken - from.untaken).max(0.0);
        }
        let within = |&&seq: &&f64| seq > from.heard && seq <= to.seq;
        self.seqs.iter().filter(within).count() as f64
    }
}

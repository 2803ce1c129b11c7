//! One call as the gate holds it: what the caller asked for (its policy, batch and limits), how
//! far it has got, and what it is waiting for.

use std::cell::RefCell;
use std::rc::Rc;

use super::queue::{Lane, Rank};
use crate::core::authority::AdmissionId;
use crate::core::rules::batch::Batch;
use crate::core::rules::classify::{Kind, Outcome};
use crate::core::rules::fair::LaneId;
use crate::core::rules::learn::Sample;
use crate::core::rules::policy::{Abandoned, Progress, Reason, RetryPolicy};
use crate::core::Millis;

/// What a caller brings to the gate, besides its request.
#[derive(Debug, Clone, Default)]
pub struct CallSpec {
    /// The retry policy; `None` for observe-and-admit (`retry: false`): one attempt, delivered
    /// as it is, no time budget.
    pub policy: Option<Rc<RetryPolicy>>,
    /// The refresh round the call belongs to.
    pub batch: Option<Rc<RefCell<Batch>>>,
    /// Whether the request may be sent more than once (an idempotent method, or an
    /// `Idempotency-Key`, and a body that can be sent again).
    pub replayable: bool,
    /// Refuse the call at once, and let it go from the queue, when its admission is predicted
    /// later than this long after it was made.
    pub max_wait_ms: Option<Millis>,
    /// Refuse the call at once when this many calls already wait.
    pub max_waiting: Option<usize>,
    /// Tell the driver how long each admission waited ([`Event::Admitted`]): someone measures
    /// it (a metrics histogram). Off, admissions cost no event.
    ///
    /// [`Event::Admitted`]: super::action::Event::Admitted
    pub reports_wait: bool,
    /// The first call of a route no answer has named the limiter of: it waits at the
    /// front of the queue (for one token of this limiter, not behind everyone), and how it went
    /// is reported ([`GateAction::Route`]) for the calls its route holds back.
    ///
    /// [`GateAction::Route`]: super::action::GateAction::Route
    pub scout: bool,
    /// An account call (`GET /usage`, `/limits`): never refused for the quota, which it is how
    /// one checks, nor held while the quota's probe is out.
    pub account: bool,
    /// Its route's scout is out: the call waits beside the queue (`Stage::BehindScout`) until
    /// the scout's answer lets it into this gate's queue or moves it to its limiter's gate. It
    /// counts as waiting (`maxWaiting` judges it as it comes).
    pub behind_scout: bool,
    /// The lane it waits in, and the lane's share of the gate's admissions.
    pub lane: Lane,
    /// `typedErrors`: abandoned, it ends with a `GateAbandonedError`, not with what its last
    /// attempt came to (its response, body unread, or its rejection) as fetch would; refused
    /// for the spent quota, with a `QuotaExhaustedError`, never the quota's 429 again.
    pub typed_errors: bool,
    /// Its route (see `rules::routes::route_of`), when known: what it costs in credits goes
    /// by it.
    pub route: Option<Rc<str>>,
}

/// Where a call is.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Stage {
    /// Waiting beside the queue for its route's scout (see [`CallSpec::behind_scout`]).
    BehindScout,
    /// In queue (its `visit`-th time), since `since`.
    Queued {
        /// Which visit to the queue this is.
        visit: u32,
        /// When it joined.
        since: Millis,
    },
    /// Admitted; its attempt is being made.
    Sending,
    /// Its retry waits for the shared store to charge the retry budget.
    Charging {
        /// What follows if the budget pays.
        next: Next,
    },
    /// The body of a response nobody will see is being disposed of.
    Disposing {
        /// What follows.
        next: Next,
    },
    /// Waiting for the gate's `/usage` probe to answer.
    AwaitingProbe {
        /// What follows unless the quota is spent.
        next: Next,
    },
    /// Backing off until the time given.
    Sleeping {
        /// When it joins the queue again.
        until: Millis,
    },
    /// (The probe.) Its `/usage` body is being read.
    ReadingUsage,
}

/// What a call does once the response it will not deliver has been dealt with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Next {
    /// Try again, not before `not_before`.
    Retry {
        /// Earliest admission request.
        not_before: Millis,
        /// The wait (the server's, or our backoff).
        delay_ms: Millis,
        /// Whether the wait is the server's `Retry-After`.
        server_delay: bool,
        /// What is being retried, for the figures.
        cause: Outcome,
        /// How the budget prices it.
        kind: Kind,
    },
    /// Give up.
    Abandon(Reason),
    /// (The probe.) Report what it found.
    ProbeDone,
}

/// A call the gate holds.
#[derive(Debug, Clone)]
pub struct Call {
    /// What the caller asked for.
    pub spec: CallSpec,
    /// The gate's own `/usage` probe rather than a caller's request.
    pub probe: bool,
    /// When it was made.
    pub started: Millis,
    /// Its place in the call order: it keeps it when it comes back to the queue.
    pub rank: Rank,
    /// When its first attempt went out.
    pub(crate) first_sent: Option<Millis>,
    /// When its latest attempt went out.
    pub(crate) last_sent: Millis,
    /// Attempts sent.
    pub attempts: u32,
    /// Visits to the queue so far.
    pub(crate) visits: u32,
    /// The last response's status.
    pub(crate) last_status: Option<u16>,
    /// The last `Retry-After`, in ms.
    pub(crate) last_retry_after_ms: Option<Millis>,
    /// The last attempt ended without a response (its rejection is the error's cause).
    pub(crate) last_failed: bool,
    /// What the last retry cost the gate's budget, refunded if the call then succeeds.
    pub(crate) last_retry_cost: Option<f64>,
    /// The current admission, and whether it paused the refill (its response resumes it).
    pub admission: Option<(AdmissionId, bool)>,
    /// The latest attempt's number among every request its allowance admitted (whoever asked).
    pub seq: Option<f64>,
    /// The gate's attempts still out when the latest went: numbered before it, the server may
    /// still have taken them after it.
    pub ahead: f64,
    /// The latest attempt waited in the queue for its token (demand was above the pace).
    pub waited: bool,
    /// Its latest answer, a 429 with no `Retry-After` the learner has not heard: it may be the
    /// monthly quota's, which says nothing of the rate (see `Gate::tell_learner`).
    pub(crate) untold: Option<Sample>,
    /// Where it is.
    pub(crate) stage: Stage,
}

impl Call {
    /// Where it waits in the queue: at the front (the quota's probe, a route's scout on its first
    /// visit), or in its lane.
    pub(crate) fn lane_in_queue(&self) -> Option<LaneId> {
        let first = matches!(self.stage, Stage::Queued { visit: 1, .. });
        match self.probe || (self.spec.scout && first) {
            true => None,
            false => Some(self.spec.lane.id),
        }
    }

    /// A call made at `now`, not yet in queue.
    pub(crate) fn new(spec: CallSpec, probe: bool, now: Millis, rank: Rank) -> Call {
        Call {
            spec,
            probe,
            started: now,
            rank,
            first_sent: None,
            last_sent: now,
            attempts: 0,
            visits: 0,
            last_status: None,
            last_retry_after_ms: None,
            last_failed: false,
            last_retry_cost: None,
            admission: None,
            seq: None,
            ahead: 0.0,
            waited: false,
            untold: None,
            stage: Stage::Sending,
        }
    }

    /// The latest the call may be admitted, and the reason to give when it cannot be: its
    /// batch's deadline; before the first send, `maxWaitMs` from when it was made; after it,
    /// its time budget from the first send. The earliest of those wins (the batch on a tie).
    // Never inlined: asked in eight places, each with its own copy (smaller gzipped).
    #[inline(never)]
    pub(crate) fn admission_deadline(&self) -> (Millis, Reason) {
        let mut deadline = (Millis::INFINITY, Reason::Deadline);
        if let Some(batch) = &self.spec.batch {
            deadline.0 = batch.borrow().deadline;
        }
        let own = match (self.first_sent, &self.spec.policy) {
            (None, _) => self
                .spec
                .max_wait_ms
                .map(|w| (self.started + w, Reason::QueueWait)),
            (Some(sent), Some(policy)) => Some((sent + policy.time_budget_ms, Reason::TimeBudget)),
            (Some(_), None) => None,
        };
        match own {
            Some(own) if own.0 < deadline.0 => own,
            _ => deadline,
        }
    }

    /// What the policy needs after an attempt.
    pub(crate) fn progress(&self) -> Progress {
        let (deadline, deadline_reason) = self.admission_deadline();
        Progress {
            attempts: self.attempts,
            deadline,
            deadline_reason,
            replayable: self.spec.replayable,
        }
    }

    /// Records the attempt that is going out at `now`; its time limit in whole milliseconds:
    /// the policy's `attemptTimeoutMs`, never past the call's deadline; 0 for none
    /// (`retry: false`, whose request goes out untouched).
    pub(crate) fn send(&mut self, now: Millis) -> Millis {
        self.first_sent.get_or_insert(now);
        self.last_sent = now;
        self.attempts += 1;
        self.stage = Stage::Sending;
        let left = self.admission_deadline().0 - now;
        let limit = match &self.spec.policy {
            Some(policy) => policy.attempt_timeout_ms.min(left),
            // The probe is bounded by its own deadline.
            None if self.probe => left,
            None => return 0.0,
        };
        limit.ceil().max(1.0)
    }

    /// Whether another attempt may follow the one out: the policy retries, the request may be
    /// sent again, and attempts are left (time and the group's budget decide when it ends).
    pub(crate) fn may_retry(&self) -> bool {
        self.spec.replayable
            && self
                .spec
                .policy
                .as_ref()
                .is_some_and(|p| self.attempts < p.max_attempts)
    }

    /// Whether the call, abandoned, ends with what its last attempt came to rather than with a
    /// typed error.
    pub(crate) fn gives_up_as_is(&self) -> bool {
        self.spec.policy.is_some() && !self.spec.typed_errors
    }

    /// How the call is abandoned for `reason`, with what it got to.
    pub(crate) fn abandoned(&self, reason: Reason) -> Abandoned {
        Abandoned {
            reason,
            attempts: self.attempts,
            status: self.last_status,
            retry_after_ms: self.last_retry_after_ms,
        }
    }
}

//! A gate's live figures, for people and dashboards.

use crate::core::base::histogram::Histogram;
use crate::core::parse::feedback::Feedback;
use crate::core::rules::classify::Outcome;
use crate::core::rules::policy::Reason;
use crate::core::rules::quota::QuotaState;
use crate::core::rules::spending::CreditFigures;
use crate::core::Millis;

/// Retries counted by what caused them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize),
    serde(rename_all = "camelCase")
)]
pub struct RetryCounts {
    /// After a 429.
    pub throttled: u64,
    /// After a 5xx.
    pub(crate) server_error: u64,
    /// After a network failure.
    pub network: u64,
    /// After our per-attempt timeout.
    pub timeout: u64,
}

impl RetryCounts {
    /// Counts a retry of `cause`.
    pub(crate) fn count(&mut self, cause: Outcome) {
        match cause {
            Outcome::Response { status: 429, .. } => self.throttled += 1,
            Outcome::Response { .. } => self.server_error += 1,
            Outcome::Network | Outcome::Invalid => self.network += 1,
            Outcome::Timeout => self.timeout += 1,
        }
    }

    /// All retries.
    pub(crate) fn total(&self) -> u64 {
        self.throttled + self.server_error + self.network + self.timeout
    }
}

/// What a gate counts as it works, as it keeps it: its [`Figures`] without the state a snapshot
/// reads (kept apart, an idle gate holds no room for them).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counts {
    /// Admission requests (first attempts and retries).
    pub requests: u64,
    /// Calls let through (each spent one token).
    pub admitted: u64,
    /// Times the gate was woken by its timer.
    pub wakeups: u64,
    /// Time from asking to admission.
    pub admission_wait: Histogram,
    /// What only a gate that met trouble counts (boxed, made on the first: most gates never
    /// see a 429, a retry or a call given up, and each of those counts is 0 until then).
    troubles: Option<Box<Troubles>>,
}

/// The counts of [`Counts`] that stay 0 until something goes wrong.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Troubles {
    /// Calls that left the queue, or their wait, because their caller aborted.
    pub cancelled: u64,
    /// Calls abandoned in the queue because admission would come after their deadline.
    pub abandoned_in_queue: u64,
    /// 429s observed.
    pub throttled: u64,
    /// The headers of the last 429 (boxed: most gates never see one).
    pub(crate) last_feedback: Option<Box<Feedback>>,
    /// Retries by cause.
    pub retries: RetryCounts,
    /// Calls abandoned, by [`Reason::index`].
    pub abandoned: [u64; Reason::ALL.len()],
    /// Calls refused because the quota is spent.
    pub(crate) quota_rejected: u64,
    /// Backoff delays chosen (without `Retry-After`).
    pub backoff: Histogram,
}

/// No trouble yet: what [`Counts::troubles`] reads before the first.
static NO_TROUBLES: Troubles = Troubles {
    cancelled: 0,
    abandoned_in_queue: 0,
    throttled: 0,
    last_feedback: None,
    retries: RetryCounts {
        throttled: 0,
        server_error: 0,
        network: 0,
        timeout: 0,
    },
    abandoned: [0; Reason::ALL.len()],
    quota_rejected: 0,
    backoff: Histogram::EMPTY,
};

impl Counts {
    /// The counts of trouble (all 0 before the first).
    pub(crate) fn troubles(&self) -> &Troubles {
        self.troubles.as_deref().unwrap_or(&NO_TROUBLES)
    }

    /// The counts of trouble, to count one.
    // Never inlined: counting trouble is the cold path of a dozen places (1 KB of wasm).
    #[inline(never)]
    pub(crate) fn trouble(&mut self) -> &mut Troubles {
        self.troubles.get_or_insert_default()
    }

    /// Adds what another gate did (a wrapper's totals keep the counts of gates that were
    /// forgotten once idle).
    pub(crate) fn absorb(&mut self, other: &Counts) {
        self.requests += other.requests;
        self.admitted += other.admitted;
        self.wakeups += other.wakeups;
        let Some(theirs) = other.troubles.as_deref() else {
            return;
        };
        let mine = self.trouble();
        mine.cancelled += theirs.cancelled;
        mine.abandoned_in_queue += theirs.abandoned_in_queue;
        mine.throttled += theirs.throttled;
        mine.retries.throttled += theirs.retries.throttled;
        mine.retries.server_error += theirs.retries.server_error;
        mine.retries.network += theirs.retries.network;
        mine.retries.timeout += theirs.retries.timeout;
        for (mine, theirs) in mine.abandoned.iter_mut().zip(theirs.abandoned) {
            *mine += theirs;
        }
        mine.quota_rejected += theirs.quota_rejected;
    }
}

/// What a gate has done, and its state now.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Figures {
    /// Admission requests (first attempts and retries).
    pub requests: u64,
    /// Calls let through (each spent one token).
    pub admitted: u64,
    /// Calls in queue now.
    pub waiting: usize,
    /// The most calls ever in queue at once.
    pub peak_waiting: usize,
    /// Calls that left the queue, or their wait, because their caller aborted.
    pub cancelled: u64,
    /// Calls abandoned in the queue because admission would come after their deadline.
    pub abandoned_in_queue: u64,
    /// 429s observed.
    pub throttled: u64,
    /// Times the gate was woken by its timer.
    pub wakeups: u64,
    /// No admission before this time; 0 when never held.
    pub cooldown_until: Millis,
    /// Refilling at half rate because the server says someone else is draining the key.
    pub slow: bool,
    /// The headers of the last 429 (boxed: most gates never see one).
    pub(crate) last_feedback: Option<Box<Feedback>>,
    /// Retries by cause.
    pub retries: RetryCounts,
    /// Calls abandoned, by [`Reason::index`].
    pub abandoned: [u64; Reason::ALL.len()],
    /// Calls refused because the quota is spent.
    pub(crate) quota_rejected: u64,
    /// The quota as the gate sees it.
    pub quota: Option<QuotaState>,
    /// The spread's credits, when the gate paces them.
    pub credits: Option<CreditFigures>,
    /// Time from asking to admission.
    pub admission_wait: Histogram,
    /// Backoff delays chosen (without `Retry-After`).
    pub backoff: Histogram,
    /// Tokens left in the shared retry budget, when there is one.
    pub retry_budget: Option<f64>,
}

/// The state a snapshot reads beside a gate's [`Counts`].
pub(crate) struct State {
    pub waiting: usize,
    pub peak_waiting: usize,
    pub cooldown_until: Millis,
    pub slow: bool,
    pub quota: Option<QuotaState>,
    pub credits: Option<CreditFigures>,
    pub retry_budget: Option<f64>,
}

impl Figures {
    /// A snapshot: `counts` so far, and the `state` now.
    pub(crate) fn new(counts: &Counts, state: State) -> Self {
        let t = counts.troubles().clone();
        Figures {
            requests: counts.requests,
            admitted: counts.admitted,
            waiting: state.waiting,
            peak_waiting: state.peak_waiting,
            cancelled: t.cancelled,
            abandoned_in_queue: t.abandoned_in_queue,
            throttled: t.throttled,
            wakeups: counts.wakeups,
            cooldown_until: state.cooldown_until,
            slow: state.slow,
            last_feedback: t.last_feedback,
            retries: t.retries,
            abandoned: t.abandoned,
            quota_rejected: t.quota_rejected,
            quota: state.quota,
            credits: state.credits,
            admission_wait: counts.admission_wait.clone(),
            backoff: t.backoff,
            retry_budget: state.retry_budget,
        }
    }
}

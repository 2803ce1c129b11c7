//! What the gate asks its driver to do. The gate decides; the driver (the bindings, the
//! simulator, a test) performs each action and reports back what happened.

use super::ids::CallId;
use crate::core::authority::Op;
use crate::core::rules::learn::{Estimate, Sample};
use crate::core::rules::policy::{Abandoned, Reason};
use crate::core::rules::routes::LimiterFeedback;
use crate::core::Millis;

/// A store operation's number, to match its answer.
pub(crate) type OpId = u64;

/// One thing to do.
#[derive(Debug, Clone, PartialEq)]
pub enum GateAction {
    /// Send the call's request now. `timeout_ms`: abort the attempt after this long and report
    /// it as timed out; 0 for no limit (the request goes out untouched). Report the outcome
    /// with `responded` or `failed`.
    Send {
        /// The call.
        call: CallId,
        /// The attempt's time limit in whole milliseconds, or 0.
        timeout_ms: Millis,
        /// How long it waited in the queue for this admission, in ms.
        waited_ms: Millis,
    },
    /// Dispose of the last response's body, which nobody will see: drain it when small (its
    /// connection is reused) and cancel it past a cap. With `read`, report what the body said
    /// (`body`); without, report only that it is done.
    Dispose {
        /// The call whose response it is.
        call: CallId,
        /// Read the body's `code` and `detail` for signs of a spent quota.
        read: bool,
    },
    /// (The probe.) Read the `/usage` response's JSON and report the usage it gives.
    ReadUsage {
        /// The probe.
        call: CallId,
    },
    /// A `/usage` probe has joined the queue: it sends `GET /usage` beside `origin`'s request,
    /// with `origin`'s credential. The driver prepares that request now.
    StartProbe {
        /// The probe's own call.
        probe: CallId,
        /// The call whose 429 raised the suspicion.
        origin: CallId,
    },
    /// Run `op` on the shared store and report its answer (or failure) under `id`.
    Store {
        /// The operation's number.
        id: OpId,
        /// What to run.
        op: Op,
    },
    /// What `call`'s answer said of its route's limiter: it is the call's route's scout,
    /// or its answer named another limiter than the gate's (the route draws from that limiter's
    /// gate from now on). The calls behind the scout go on.
    Route {
        /// The call.
        call: CallId,
        /// What its answer said.
        heard: LimiterFeedback,
        /// The answer, when another limiter's gate is to learn from it.
        answer: Option<Sample>,
    },
    /// Tell the hook.
    Event(Event),
    /// The call is over: settle the caller's promise. The gate has forgotten the call.
    Settle {
        /// The call.
        call: CallId,
        /// How.
        end: End,
        /// It ends for the spent quota and gets the gate's kept answer again (see
        /// `QuotaAnswer`), as it does without
        /// `typedErrors`.
        again: bool,
    },
    /// The gate's kept quota answer no longer stands: the driver lets it go.
    DropAnswer,
}

/// How a call ends.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum End {
    /// With its last attempt's result as it is: the response (body unread), or the inner
    /// fetch's rejection.
    Deliver,
    /// Abandoned. With `as_is`, the caller gets what the last attempt came to, as fetch would
    /// have given it: its response (body unread) or its rejection; without, a
    /// `GateAbandonedError`, whose cause is the last attempt's rejection when `cause`.
    Abandoned {
        /// Why, and how far it got.
        abandoned: Abandoned,
        /// The last attempt ended without a response.
        cause: bool,
        /// The caller gets the last attempt's result as it is.
        as_is: bool,
    },
    /// The monthly quota is spent (`QuotaExhaustedError`), until then on the gate's clock.
    Exhausted {
        /// When the period ends, if known.
        until: Option<Millis>,
    },
    /// The server asked for a wait too long to represent: a `RangeError`, never a shorter wait
    /// (the gate holds for the longest it can). The body is cancelled.
    RetryAfterTooLarge,
}

/// What the `onEvent` hook hears. Events about a call name it; the others concern the gate.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A call was admitted (only for calls whose spec asks: `reports_wait`).
    Admitted {
        /// The call.
        call: CallId,
        /// How long it waited in the queue, this visit.
        wait_ms: Millis,
    },
    /// A 429 came back.
    Throttled {
        /// The call it answered.
        call: CallId,
        /// Its `Retry-After`, if honoured.
        retry_after_ms: Option<Millis>,
    },
    /// A call will try again.
    Retry {
        /// The call.
        call: CallId,
        /// The attempt it is about to make.
        attempt: u32,
        /// How long it waits first.
        delay_ms: Millis,
        /// The wait is the server's `Retry-After`.
        server_delay: bool,
    },
    /// A call was abandoned.
    Abandoned {
        /// The call.
        call: CallId,
        /// Why.
        reason: Reason,
        /// Attempts it sent.
        attempts: u32,
    },
    /// The `/usage` probe finished.
    QuotaProbe {
        /// It confirmed the quota is spent.
        exhausted: bool,
        /// `/usage` answered at all.
        answered: bool,
    },
    /// A learning gate changed its estimate of the allowance.
    Learned(Estimate),
    /// The shared store stopped answering: admissions use the fail-safe.
    StoreDown,
    /// The shared store answers again.
    StoreUp,
    /// The memory the process's threads share had no room for the gate's key: its allowance
    /// is this thread's alone (told once, as the gate is made).
    NoRoom,
}

/// What the metrics' histograms record of an event, in seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Measured {
    /// An admission's wait in the queue (`odds_gate.wait`).
    Wait(f64),
    /// A backoff the gate chose (`odds_gate.backoff`).
    Backoff(f64),
}

impl Event {
    /// What the metrics record of this event: an admission's wait, or a backoff the gate chose
    /// (a `Retry-After` is a cooldown the server set, not a backoff); nothing of the others.
    pub fn measured(&self) -> Option<Measured> {
        match *self {
            Event::Admitted { wait_ms, .. } => Some(Measured::Wait(wait_ms / 1000.0)),
            Event::Retry {
                delay_ms,
                server_delay: false,
                ..
            } => Some(Measured::Backoff(delay_ms / 1000.0)),
            _ => None,
        }
    }

    /// The call an event is about, if it is about one.
    pub(crate) fn call(&self) -> Option<CallId> {
        match *self {
            Event::Admitted { call, .. }
            | Event::Throttled { call, .. }
            | Event::Retry { call, .. }
            | Event::Abandoned { call, .. } => Some(call),
            _ => None,
        }
    }

    /// The same event about call `to` (a call's number where the event goes).
    pub(crate) fn renumbered(mut self, to: CallId) -> Event {
        match &mut self {
            Event::Admitted { call, .. }
            | Event::Throttled { call, .. }
            | Event::Retry { call, .. }
            | Event::Abandoned { call, .. } => *call = to,
            _ => {}
        }
        self
    }
}

//! What the gates ask their driver to do, with the calls known by the driver's numbers, and
//! what they answer a call that starts: [`Started`], or why it was [`Refused`].

use super::compat::Mismatch;
use super::fleet::Shared;
use super::ids::{CallRef, GateId, WrapperId};
use super::profile::StoreId;
use super::scope::Scope;
use crate::core::authority::Op;
use crate::core::gate::action::{End, Event, OpId};
use crate::core::rules::allowance::{ConfigError, Rate};
use crate::core::Millis;

/// One thing for the driver to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Send the call's request now; report with `responded` or `failed` (see the gate's
    /// [`Send`](crate::core::gate::action::GateAction::Send)).
    Send {
        /// The call.
        call: CallRef,
        /// The attempt's time limit in whole milliseconds, or 0 for none.
        timeout_ms: Millis,
        /// Another attempt may follow this one: keep a copy of a stream body for it.
        again: bool,
    },
    /// Dispose of the call's last response body; report with `disposed`.
    Dispose {
        /// The call.
        call: CallRef,
        /// Read the body's `code` and `detail`; whether the answer read whole is kept is
        /// what [`disposed`](super::Gates::disposed) says.
        read: bool,
        /// The gate it was answered in.
        gate: GateId,
    },
    /// (A probe.) Read the `/usage` answer; report with `usage`.
    ReadUsage {
        /// The probe.
        call: CallRef,
    },
    /// A gate's `/usage` probe was made: prepare `GET /usage` beside `origin`'s request, with
    /// its credential.
    StartProbe {
        /// The probe.
        probe: CallRef,
        /// The call whose answer raised the suspicion.
        origin: CallRef,
    },
    /// Run `op` on the gate's store; report with `store_answered`.
    Store {
        /// The gate.
        gate: GateId,
        /// The operation's number.
        id: OpId,
        /// What to run.
        op: Op,
        /// The store.
        store: StoreId,
        /// The gate's scope, which names its key in the store.
        scope: Scope,
        /// The gate's allowance now, which the store refills at.
        rate: Rate,
        /// The gate's retry budget's capacity, if it has one.
        budget: Option<f64>,
    },
    /// Put these facts in the store, for the credential's gates in other processes.
    Share {
        /// The store.
        store: StoreId,
        /// The credential.
        credential: Scope,
        /// What to put.
        facts: Vec<Shared>,
    },
    /// Read what the fleet learned of the gate's credential; report with `recalled`.
    Recall {
        /// The gate that asks.
        gate: GateId,
        /// The store.
        store: StoreId,
        /// The credential.
        credential: Scope,
    },
    /// Tell the hook: the call's wrapper for an event about a call, else every wrapper in
    /// `users`. The event's own call number is `call`'s.
    Event {
        /// The gate.
        gate: GateId,
        /// The call it is about, if any.
        call: Option<CallRef>,
        /// What happened.
        event: Event,
        /// For an event about the gate, the wrappers that used it (none for a call's).
        users: Vec<WrapperId>,
    },
    /// The call is over: settle the caller's promise. The gates have forgotten it.
    Settle {
        /// The call.
        call: CallRef,
        /// How.
        end: End,
        /// The gate whose kept quota answer the caller gets again, when it ends for the spent
        /// quota and the gate keeps one.
        answer: Option<GateId>,
    },
    /// The gate's kept quota answer no longer stands: let it go.
    DropAnswer {
        /// The gate.
        gate: GateId,
    },
    /// The gate was forgotten (idle): drop whatever the driver keeps for it.
    Forgotten {
        /// The gate.
        gate: GateId,
    },
}

/// A call the gates have made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Started {
    /// Its number.
    pub call: CallRef,
    /// Its body is a stream that each attempt sends a copy of.
    pub split: bool,
}

/// Why a call was refused before it reached a gate.
#[derive(Debug, Clone, PartialEq)]
pub enum Refused {
    /// This header holds a character a header value may not hold (CR, LF or NUL).
    Unsendable(&'static str),
    /// The wrapper disagrees with the gate the credential already has.
    Mismatch(Mismatch),
    /// The wrapper is gone (its last holder was dropped).
    Gone,
    /// The gate cannot be made as the wrapper asks (a setting the gate refuses, as
    /// `Gate::spreading` refuses a spread out of range).
    Config(ConfigError),
}

impl Refused {
    /// What the caller is told, numbers written by `number` (a `TypeError` for a header, a
    /// `RangeError` for the rest).
    pub fn message(&self, number: &dyn Fn(f64) -> String) -> String {
        match self {
            Refused::Unsendable(name) => format!(
                "`{name}` holds a character a header value may not hold (CR, LF or NUL); \
                 the request was not sent"
            ),
            Refused::Mismatch(mismatch) => mismatch.message(number),
            Refused::Gone => "This fetchImpl's wrapper was freed".into(),
            Refused::Config(error) => error.message(number),
        }
    }
}

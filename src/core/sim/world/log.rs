//! What a run leaves to look at: every attempt the server saw ([`Sent`]), and the [`Log`] of
//! responses, outcomes, settlements, events and cache answers ([`Served`]) that reports and
//! assertions read. The record, apart from the driver that writes it.

use crate::core::base::indexed::Indexed;
use crate::core::gate::action::{End, Event};
use crate::core::gates::action::Refused;
use crate::core::gates::ids::{CallRef, GateId};
use crate::core::gates::scope::Scope;
use crate::core::Millis;

/// One attempt the server saw.
#[derive(Debug, Clone, PartialEq)]
pub struct Sent {
    /// When.
    pub at: Millis,
    /// Which process sent it.
    pub process: usize,
    /// The call (its number in that process's gates).
    pub call: CallRef,
    /// The call's number in start order (`usize::MAX` for a probe).
    pub index: usize,
    /// A gate's `/usage` probe rather than a caller's request.
    pub probe: bool,
    /// The scope of the gate that admitted it.
    pub scope: Option<Scope>,
    /// The answer's status, once it came (`None`: it failed, or has not come yet).
    pub status: Option<u16>,
}

/// What happened, for reports and assertions.
#[derive(Debug, Default)]
pub struct Log {
    /// Every attempt, in order.
    pub sent: Vec<Sent>,
    /// Responses as they arrived: when, to which call (by index), the status and the
    /// `Retry-After`.
    pub responses: Vec<(Millis, usize, u16, Option<String>)>,
    /// How each attempt of each call (by index) ended: a status, or `None` for a failure or
    /// timeout.
    pub outcomes: Indexed<Vec<Option<u16>>>,
    /// Calls settled, by index: when and how.
    pub settled: Indexed<(Millis, End)>,
    /// Calls whose caller aborted, by index.
    pub aborted: Indexed<()>,
    /// The calls (by index) of each response body disposed of: nobody saw it.
    pub disposed: Vec<usize>,
    /// Events, with their process and gate.
    pub events: Vec<(Millis, usize, GateId, Event)>,
    /// Calls refused before they reached a gate, by index.
    pub refused: Indexed<Refused>,
    /// Timer firings.
    pub wakeups: usize,
    /// Calls the cache answered, by index: when, how, and the status they got (0: none).
    pub cached: Indexed<(Millis, Served, u16)>,
    /// When each call started, by index.
    pub started: Indexed<Millis>,
}

/// How the cache answered a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize),
    serde(rename_all = "lowercase")
)]
pub enum Served {
    /// A fresh entry answered it.
    Hit,
    /// It joined a request in flight and got its answer.
    Coalesced,
    /// A kept entry past its lifetime answered it at once: its gate would have held it (a
    /// cooldown, no credit left in the spread) or refused it (a spent quota).
    Stale,
}

impl Log {
    /// How an attempt of the `index`-th call ended (a probe's are not kept).
    pub(super) fn outcome(&mut self, index: usize, status: Option<u16>) {
        if index != usize::MAX {
            self.outcomes.entry(index, Vec::new).push(status);
        }
    }
}

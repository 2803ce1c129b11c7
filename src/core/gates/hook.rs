//! What the `onEvent` hook is told of a gate's [`Event`]: `{ type, scope, ...what it says }`,
//! in the words users see (`throttled`, `quota-probe`, `shared-memory-full`). The bindings
//! hand it out as it is.

use super::report::Learned;
use crate::core::gate::action::Event;
use crate::core::Millis;

/// An event as the hook gets it.
#[derive(serde::Serialize)]
pub struct Told<'a, D> {
    #[serde(rename = "type")]
    kind: &'static str,
    scope: &'a str,
    #[serde(flatten)]
    says: Says<D>,
}

/// What each kind of event says besides its type and scope.
#[derive(serde::Serialize)]
#[serde(untagged, rename_all_fields = "camelCase")]
enum Says<D> {
    Throttled {
        retry_after_ms: Option<Millis>,
    },
    Retry {
        attempt: u32,
        delay_ms: Millis,
        server_delay: bool,
    },
    Abandoned {
        reason: &'static str,
        attempts: u32,
    },
    QuotaProbe {
        exhausted: bool,
        answered: bool,
    },
    Learned {
        learned: Learned<D>,
    },
    NoRoom {
        slots: u32,
    },
    Nothing {},
}

/// What the hook is told of `event` about the gate of `scope` (`None`: nothing, for an
/// admission, which only the metrics measure). `slots` is how many the threads' shared memory
/// may hold at most, asked only for `shared-memory-full`; `date` makes a time a date.
pub fn told<'a, D>(
    scope: &'a str,
    event: &Event,
    slots: impl FnOnce() -> u32,
    date: fn(Option<Millis>) -> D,
) -> Option<Told<'a, D>> {
    let (kind, says) = match *event {
        Event::Admitted { .. } => return None,
        Event::Throttled { retry_after_ms, .. } => {
            ("throttled", Says::Throttled { retry_after_ms })
        }
        Event::Retry {
            attempt,
            delay_ms,
            server_delay,
            ..
        } => {
            let says = Says::Retry {
                attempt,
                delay_ms,
                server_delay,
            };
            ("retry", says)
        }
        Event::Abandoned {
            reason, attempts, ..
        } => {
            let reason = reason.as_str();
            ("abandoned", Says::Abandoned { reason, attempts })
        }
        Event::QuotaProbe {
            exhausted,
            answered,
        } => {
            let says = Says::QuotaProbe {
                exhausted,
                answered,
            };
            ("quota-probe", says)
        }
        Event::Learned(estimate) => {
            let learned = Learned::new(estimate, date);
            ("learned", Says::Learned { learned })
        }
        Event::StoreDown => ("store-down", Says::Nothing {}),
        Event::StoreUp => ("store-up", Says::Nothing {}),
        Event::NoRoom => ("shared-memory-full", Says::NoRoom { slots: slots() }),
    };
    Some(Told { kind, scope, says })
}

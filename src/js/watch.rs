//! One `abort` listener per run of waiters that share a signal: Node's `addEventListener` scans
//! the listeners already there, so one listener per waiter on a shared signal makes queueing
//! quadratic. Waiters that bring the same signal as the previous waiter join its watch; a new
//! signal starts a new watch (so a signal per call costs one listener per call, as before).

use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::spawn_local;

use super::abort::AbortListener;
use crate::core::base::handles::Handles;
use crate::core::base::map::Set;

struct Watch {
    signal: web_sys::AbortSignal,
    tickets: Set<u64>,
    _listener: AbortListener,
}

/// The signals a gate's waiters carry, each listened to once per run, by handle (a handle
/// given back is given out again: a call that still names a watch taken by its signal's abort
/// may name a new watch, which holds no ticket of its, so removing it there changes nothing).
#[derive(Default)]
pub struct Watches {
    /// The watch the previous waiter joined.
    last: Option<u32>,
    by_id: Handles<Watch>,
}

impl Watches {
    /// Adds `ticket` to `signal`'s watch, listening with `on_abort(id)` if it is new.
    pub fn add(
        &mut self,
        signal: &web_sys::AbortSignal,
        ticket: u64,
        on_abort: &js_sys::Function,
    ) -> u32 {
        if let Some(id) = self.last {
            if let Some(watch) = self.by_id.get_mut(id) {
                if JsValue::from(&watch.signal) == JsValue::from(signal) {
                    watch.tickets.insert(ticket);
                    return id;
                }
            }
        }
        let id = self.by_id.put_with(|id| Watch {
            signal: signal.clone(),
            tickets: Set::from_iter([ticket]),
            _listener: AbortListener::new(signal, on_abort, id),
        });
        self.last = Some(id);
        id
    }

    /// `ticket` no longer waits; a watch nobody uses stops listening.
    pub fn remove(&mut self, id: u32, ticket: u64) {
        let empty = match self.by_id.get_mut(id) {
            Some(watch) => {
                watch.tickets.remove(&ticket);
                watch.tickets.is_empty()
            }
            None => false,
        };
        if empty {
            self.by_id.take(id);
        }
    }

    /// The signal aborted: its tickets, and the signal for the reason. The listener is running
    /// right now, so the watch is dropped on the next microtask, not from inside itself.
    pub fn take(&mut self, id: u32) -> Option<(web_sys::AbortSignal, Vec<u64>)> {
        let watch = self.by_id.take(id)?;
        let signal = watch.signal.clone();
        let tickets = watch.tickets.iter().copied().collect();
        spawn_local(async move { drop(watch) });
        Some((signal, tickets))
    }
}

//! A one-shot slot a waiting call awaits: settled once by the gate's timer (admitted) or by an
//! abort, whichever comes first. Plain Rust, so 100,000 waiters cost no JavaScript objects.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use wasm_bindgen::JsValue;

/// The outcome of a wait: admitted, or the value to reject with.
pub type Outcome = Result<(), JsValue>;

#[derive(Default)]
struct State {
    outcome: Option<Outcome>,
    waker: Option<Waker>,
    settled: bool,
}

/// Shared between the waiting call and whoever settles it.
#[derive(Clone, Default)]
pub struct Slot(Rc<RefCell<State>>);

impl Slot {
    /// Settles the wait; later settles are ignored, so a call settles exactly once.
    pub fn settle(&self, outcome: Outcome) {
        let waker = {
            let mut state = self.0.borrow_mut();
            if state.settled {
                return;
            }
            state.settled = true;
            state.outcome = Some(outcome);
            state.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// A future that resolves with the outcome.
    pub fn wait(&self) -> Wait {
        Wait(self.clone())
    }
}

/// Resolves when the slot is settled.
pub struct Wait(Slot);

impl Future for Wait {
    type Output = Outcome;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Outcome> {
        let mut state = (self.0).0.borrow_mut();
        match state.outcome.take() {
            Some(outcome) => Poll::Ready(outcome),
            None => {
                state.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

//! A one-shot slot a waiting call awaits, settled once by whoever comes first (the gate's
//! timer, an abort, a deadline). Plain Rust, so 100,000 waiters cost no JavaScript objects.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

struct State<T> {
    outcome: Option<T>,
    waker: Option<Waker>,
    settled: bool,
}

/// Shared between the waiting call and whoever settles it.
pub struct Slot<T>(Rc<RefCell<State<T>>>);

impl<T> Clone for Slot<T> {
    fn clone(&self) -> Self {
        Slot(self.0.clone())
    }
}

impl<T> Default for Slot<T> {
    fn default() -> Self {
        Slot(Rc::new(RefCell::new(State {
            outcome: None,
            waker: None,
            settled: false,
        })))
    }
}

impl<T> Slot<T> {
    /// Settles the wait; later settles are ignored, so a call settles exactly once.
    pub fn settle(&self, outcome: T) {
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
    pub fn wait(&self) -> Wait<T> {
        Wait(self.clone())
    }
}

/// Resolves when the slot is settled.
pub struct Wait<T>(Slot<T>);

impl<T> Future for Wait<T> {
    type Output = T;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
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

//! The number a gate knows each call by: in a file of its own, so that the files which only
//! need the number (the queue, the actions, the store's operations) stand apart from the gate.

use crate::core::base::slab::Id;

/// A call's number within its gate: a number of a call that has ended never finds another.
pub type CallId = Id;

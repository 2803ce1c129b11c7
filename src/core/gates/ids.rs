//! The numbers the gates and their driver know gates, calls and wrappers by: in a file of their
//! own, so that the files which only need the numbers (the actions, the views) stand apart from
//! [`Gates`](super::Gates).

use crate::core::base::slab::Id;

/// A gate's number among the gates.
pub type GateId = Id;
/// A call's number, the driver's handle on it wherever it goes.
pub type CallRef = Id;
/// A wrapper's number.
pub type WrapperId = Id;

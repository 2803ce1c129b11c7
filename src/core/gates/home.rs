//! What the gates need from the place they run in, given once: randomness for each gate's
//! jitter, the memory the process's threads share (a slot per key), this thread's number and
//! clock offset, and keys for the credential fingerprints.
//! The bindings give the real ones; the simulator and the tests give their own.

use crate::core::authority::threads::Slot;
use crate::core::base::random::Random;
use crate::core::gates::scope::Scope;
use crate::core::Millis;

/// The environment of a [`Gates`](super::Gates).
pub trait Home {
    /// A source of randomness for a new gate.
    fn random(&mut self) -> Box<dyn Random>;
    /// The slot of `scope` in memory the process's threads share, when memory can be shared
    /// here and has room for the key.
    fn slot(&mut self, scope: &Scope) -> Option<Box<dyn Slot>>;
    /// Whether memory is shared by the process's threads here at all.
    fn shares_memory(&self) -> bool;
    /// This thread's number among the process's threads (1 and up).
    fn thread(&self) -> u32;
    /// Added to this thread's clock, the clock the threads share.
    fn offset(&self) -> Millis;
    /// Two random keys for the credential fingerprints, made once per process.
    fn keys(&mut self) -> (u64, u64);
}

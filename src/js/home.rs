//! Where the gates run, as the core needs to know it: the operating system's randomness, the
//! shared memory the process's threads share (a slot per key), this thread's number and clock offset,
//! and the process's fingerprint keys.

use super::random::{fingerprint_keys, OsRandom};
use super::shared_memory;
use crate::core::authority::slot::MemorySlot;
use crate::core::authority::threads::Slot;
use crate::core::base::random::Random;
use crate::core::gates::home::Home;
use crate::core::gates::scope::Scope;
use crate::core::Millis;

/// This thread, in this process.
pub struct JsHome;

impl Home for JsHome {
    fn random(&mut self) -> Box<dyn Random> {
        Box::new(OsRandom)
    }
    fn slot(&mut self, scope: &Scope) -> Option<Box<dyn Slot>> {
        let slot = MemorySlot::find(shared_memory::current()?, scope.as_str())?;
        Some(Box::new(slot))
    }
    fn shares_memory(&self) -> bool {
        shared_memory::current().is_some()
    }
    fn thread(&self) -> u32 {
        shared_memory::thread_number()
    }
    fn offset(&self) -> Millis {
        shared_memory::clock_offset()
    }
    fn keys(&mut self) -> (u64, u64) {
        fingerprint_keys()
    }
}

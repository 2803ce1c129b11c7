//! Calls the package's fast path is sending, by handle: a call admitted at once is parked here
//! while `attempt.js` makes its attempt, and taken back when the attempt ends. A number crosses
//! to JavaScript and back, instead of a future, a promise and their closures.

/// A slab of parked values; handles are reused once taken.
pub struct Parked<T> {
    slots: Vec<Option<T>>,
    free: Vec<u32>,
}

impl<T> Default for Parked<T> {
    fn default() -> Self {
        Parked {
            slots: Vec::new(),
            free: Vec::new(),
        }
    }
}

impl<T> Parked<T> {
    /// Parks `value`; its handle.
    pub fn park(&mut self, value: T) -> u32 {
        match self.free.pop() {
            Some(handle) => {
                self.slots[handle as usize] = Some(value);
                handle
            }
            None => {
                self.slots.push(Some(value));
                (self.slots.len() - 1) as u32
            }
        }
    }

    /// The value parked under `handle`, if it is still there.
    pub fn get_mut(&mut self, handle: u32) -> Option<&mut T> {
        self.slots.get_mut(handle as usize)?.as_mut()
    }

    /// Takes back the value parked under `handle`, once.
    pub fn take(&mut self, handle: u32) -> Option<T> {
        let value = self.slots.get_mut(handle as usize)?.take()?;
        self.free.push(handle);
        Some(value)
    }
}

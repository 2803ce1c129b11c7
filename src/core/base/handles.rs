//! Values under small numbers, reused once given back: what JavaScript holds for a value kept
//! in wasm (a call whose attempt the package's fast path makes), a number that crosses as one.

/// Values by handle; a handle given back is the next one given out.
#[derive(Debug, Clone)]
pub struct Handles<T> {
    values: Vec<Option<T>>,
    free: Vec<u32>,
}

impl<T> Default for Handles<T> {
    fn default() -> Self {
        Handles {
            values: Vec::new(),
            free: Vec::new(),
        }
    }
}

impl<T> Handles<T> {
    /// Keeps `value`: its handle.
    pub fn put(&mut self, value: T) -> u32 {
        match self.free.pop() {
            Some(handle) => {
                self.values[handle as usize] = Some(value);
                handle
            }
            None => {
                self.values.push(Some(value));
                (self.values.len() - 1) as u32
            }
        }
    }

    /// The value under `handle`, if it is there.
    pub fn get(&self, handle: u32) -> Option<&T> {
        self.values.get(handle as usize)?.as_ref()
    }

    /// Takes the value under `handle` out, giving the handle back.
    pub fn take(&mut self, handle: u32) -> Option<T> {
        let taken = self.values.get_mut(handle as usize)?.take()?;
        self.free.push(handle);
        Some(taken)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_handle_given_back_is_reused_and_a_taken_one_finds_nothing() {
        let mut h = Handles::default();
        assert_eq!((h.put('a'), h.put('b')), (0, 1));
        assert_eq!(h.get(1), Some(&'b'));
        assert_eq!(h.take(0), Some('a'));
        assert_eq!(h.take(0), None, "taken once");
        assert_eq!(h.get(0), None);
        assert_eq!(h.get(7), None);
        assert_eq!(h.put('c'), 0, "reused");
        assert_eq!(h.put('d'), 2);
        assert_eq!(h.take(9), None);
    }
}

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

    /// Keeps the value `make` makes knowing its handle: that handle.
    pub fn put_with(&mut self, make: impl FnOnce(u32) -> T) -> u32 {
        let next = self.free.last().copied();
        self.put(make(next.unwrap_or(self.values.len() as u32)))
    }

    /// The value under `handle`, if it is there.
    pub fn get(&self, handle: u32) -> Option<&T> {
        self.values.get(handle as usize)?.as_ref()
    }

    /// The value under `handle`, mutably, if it is there.
    pub fn get_mut(&mut self, handle: u32) -> Option<&mut T> {
        self.values.get_mut(handle as usize)?.as_mut()
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
        *h.get_mut(1).expect("kept") = 'B';
        assert_eq!(h.get(1), Some(&'B'));
        assert_eq!(h.get_mut(7), None);
        assert_eq!(h.take(0), Some('a'));
        assert_eq!(h.take(0), None, "taken once");
        assert_eq!(h.get(0), None);
        assert_eq!(h.get(7), None);
        assert_eq!(h.put('c'), 0, "reused");
        assert_eq!(h.put('d'), 2);
        h.take(1);
        assert_eq!(h.put_with(|handle| char::from(b'0' + handle as u8)), 1);
        assert_eq!(h.get(1), Some(&'1'), "made knowing its handle");
        assert_eq!(h.take(9), None);
    }
}

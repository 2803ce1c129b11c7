//! The maps of the gate and the bindings (calls, operations, gates), hashed with FxHash's step:
//! their keys are our own ids and SHA-256 scopes, so SipHash's defence against chosen keys buys
//! nothing here, while it and its random keys cost wasm.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// A `HashMap` hashed with [`IdHasher`].
pub(crate) type Map<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;

/// A `HashSet` hashed with [`IdHasher`].
pub(crate) type Set<T> = HashSet<T, BuildHasherDefault<IdHasher>>;

/// One rotate, xor and multiply per word.
#[derive(Default)]
pub struct IdHasher(u64);

impl IdHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl Hasher for IdHasher {
    // Never inlined: a loop over the bytes of each string key, copied into every table's
    // hashing code otherwise (smaller gzipped).
    #[inline(never)]
    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.add(byte.into());
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.add(n.into());
    }

    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

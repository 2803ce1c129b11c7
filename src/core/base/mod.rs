//! Small containers and sources the rest is built from.

pub mod histogram;
pub mod indexed;
#[cfg(feature = "serde")]
pub mod json;
pub mod map;
pub mod random;
pub mod slab;
pub mod timeline;
pub mod wire;

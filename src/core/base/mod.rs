//! Small containers and sources the rest is built from.

pub mod alarm;
pub mod handles;
pub mod hex;
pub mod histogram;
pub mod indexed;
pub mod map;
pub mod protocol;
pub mod random;
pub(crate) mod room;
pub mod slab;
pub(crate) mod timeline;
pub mod wall;
pub(crate) mod wire;

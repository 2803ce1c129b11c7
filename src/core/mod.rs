//! The pure core: every rule of the gate, with time passed in as milliseconds and no I/O. The
//! bindings, the simulator and the tests all drive this same code.

pub mod authority;
pub mod backoff;
pub mod batch;
pub mod bucket;
pub mod budget;
pub mod classify;
pub mod config;
pub mod decimal;
pub mod feedback;
pub mod gate;
pub mod histogram;
pub mod http_date;
pub mod learn;
pub mod map;
pub mod memory;
pub mod policy;
pub mod quota;
pub mod random;
pub mod scope;
pub mod sim;
pub mod slab;
pub mod threads;

/// Milliseconds on whatever clock the caller uses: `performance.now()` in production, a virtual
/// clock in the simulator and the tests. Fractional, as `performance.now()` is.
pub type Millis = f64;

//! The pure core: every rule of the gate, with time passed in as milliseconds and no I/O. The
//! bindings, the simulator and the tests all drive this same code. Its folders say what kind of
//! thing each file is: `rules` (what the gate decides), `parse` (what headers say), `authority`
//! (where a gate's shared state lives), `gate` (one gate's calls), `gates` (many gates),
//! `sim` (the virtual clock), `base` (small containers).

pub mod authority;
pub mod base;
pub mod gate;
pub mod gates;
pub mod parse;
pub mod rules;
pub mod sim;

/// Milliseconds on whatever clock the caller uses: `performance.now()` in production, a virtual
/// clock in the simulator and the tests. Fractional, as `performance.now()` is.
pub type Millis = f64;

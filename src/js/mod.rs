//! The bindings: the only code that knows `JsValue`, promises, timers, `Response` and
//! `AbortSignal`. No policy lives here; every decision is the core's.

mod clock;
mod errors;
mod figures;
mod headers;
mod model;
mod read;
mod registry;
mod shared_gate;
mod timer;
mod transport;
mod wait;

pub use model::{simulate, ModelGate};
pub use transport::Transport;

//! The bindings: the only code that knows `JsValue`, promises, timers, `Response` and
//! `AbortSignal`. No policy lives here; every decision is the core's.

mod abort;
mod attempt;
mod body;
mod clock;
mod errors;
mod events;
mod figures;
mod headers;
mod model;
mod options;
mod probe;
mod random;
mod read;
mod redis;
mod registry;
mod shared_gate;
mod sleep;
mod text;
mod timer;
mod transport;
mod wait;
mod watch;

pub use errors::register_errors;
pub use model::{simulate, ModelGate};
pub use redis::redis_store;
pub use transport::Transport;

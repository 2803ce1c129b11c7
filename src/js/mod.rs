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
mod map;
mod model;
mod options;
mod parked;
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

/// Talc instead of the default dlmalloc: a few KB less wasm. The module is single-threaded.
#[global_allocator]
static ALLOCATOR: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();

pub use attempt::attempt_function;
pub use errors::register_errors;
pub use model::{simulate, ModelGate};
pub use redis::redis_store;
pub use transport::Transport;

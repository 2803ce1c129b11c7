//! The bindings: the only code that knows `JsValue`, promises, timers, `Response` and
//! `AbortSignal`. A driver for the core's call machine: it performs what the gate decides and
//! reports back what happened. No policy lives here.

mod abort;
mod attempt;
mod body;
mod cache;
mod calls;
mod clock;
mod de;
mod driver;
mod errors;
mod events;
mod figures;
mod headers;
mod home;
mod metrics;
mod model;
mod options;
mod props;
mod random;
mod redis;
mod replay;
mod shapes;
mod shared_memory;
mod text;
mod timer;
mod transport;
mod watch;

/// Talc instead of the default dlmalloc: a few KB less wasm. The module is single-threaded.
#[global_allocator]
static ALLOCATOR: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();

/// What an export hands JavaScript: never a lone `JsValue`. TurboFan inlines a call to a wasm
/// export whose one result is an `externref` into the hot JavaScript that makes it, and if that
/// caller is deoptimised while the call runs (a getter on `init.headers` is enough), the
/// deoptimizer of V8 11.3 (Node 20) cannot rebuild the frame: `TranslatedValueForWasmReturnKind`
/// knows only numeric results, and the process dies with "unreachable code". A `Result` comes
/// back as three values, and V8 never inlines a call with more than one result.
/// `js-tests/node20-crash.test.mjs` checks every export's signature.
pub type Exported = Result<wasm_bindgen::JsValue, wasm_bindgen::JsValue>;

pub use attempt::gated_function;
pub use errors::register_errors;
pub use model::{simulate, ModelGate};
pub use redis::redis_store;
pub use transport::Transport;

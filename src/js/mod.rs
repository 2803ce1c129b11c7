//! The bindings: the only code that knows `JsValue`, promises, timers, `Response` and
//! `AbortSignal`. A driver for the core's call machine: it performs what the gate decides and
//! reports back what happened. No policy lives here.

// Both modules: the readers and shapes the simulator's bindings share with the fetch path.
mod clock;
mod de;
mod errors;
mod props;
mod readers;
mod shapes;
mod text;
/// Declares the main module's files (feature `fetch`): createFetch's driver and everything it
/// reaches, none of which the simulator's module compiles.
macro_rules! fetch_modules {
    ($($name:ident)*) => { $(#[cfg(feature = "fetch")] mod $name;)* };
}
fetch_modules!(
    abort arena attempt body cache cache_share cache_wake calls driver events figures headers home metrics options random redis
    replay requests shared_memory timer transport watch
);
// The simulator's module (feature `sim`), loaded by `simulate()` and `new Gate()` on first use.
#[cfg(feature = "sim")]
mod model;

/// Talc instead of the default dlmalloc: a few KB less wasm. The module is single-threaded.
#[global_allocator]
static ALLOCATOR: Outlined = Outlined(talc::wasm::new_wasm_dynamic_allocator());

/// The allocator behind calls that are never inlined: with LTO, Talc's `deallocate` was
/// inlined into a few dozen drops (seven copies in the wrappers' slab's alone), some 10 KB.
struct Outlined(talc::wasm::WasmDynamicTalc);

// SAFETY: each method forwards to Talc's, which upholds `GlobalAlloc`'s contract.
unsafe impl std::alloc::GlobalAlloc for Outlined {
    #[inline(never)]
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        self.0.alloc(layout)
    }

    #[inline(never)]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        self.0.dealloc(ptr, layout)
    }

    #[inline(never)]
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, size: usize) -> *mut u8 {
        self.0.realloc(ptr, layout, size)
    }
}

/// What an export hands JavaScript: never a lone `JsValue`. TurboFan inlines a call to a wasm
/// export whose one result is an `externref` into the hot JavaScript that makes it, and if that
/// caller is deoptimised while the call runs (a getter on `init.headers` is enough), the
/// deoptimizer of V8 11.3 (Node 20) cannot rebuild the frame: `TranslatedValueForWasmReturnKind`
/// knows only numeric results, and the process dies with "unreachable code". A `Result` comes
/// back as three values, and V8 never inlines a call with more than one result.
/// `js-tests/node20-crash.test.mjs` checks every export's signature.
pub type Exported = Result<wasm_bindgen::JsValue, wasm_bindgen::JsValue>;

#[cfg(feature = "sim")]
pub use model::{simulate, ModelGate};
#[cfg(feature = "fetch")]
pub use {
    attempt::gated_function, driver::per_request, errors::register_errors, redis::redis_store,
    shared_memory::join_threads, transport::Transport,
};

//! odds-gate: one shared rate-limit gate per credential, in front of the Odds API SDK's
//! `fetchImpl`. [`core`] holds every rule and runs natively; the `js` bindings (wasm only) are
//! the single layer that knows promises, timers and `Response` objects.
#![deny(missing_docs)]

pub mod core;
pub mod store;

/// A one-module build (`fetch` or `sim` alone, scripts/build.sh) compiles shared helpers only
/// the other module calls; the default build, which clippy checks, has both.
#[cfg(target_arch = "wasm32")]
#[cfg_attr(not(all(feature = "fetch", feature = "sim")), allow(dead_code))]
pub mod js;

#[cfg(all(target_arch = "wasm32", not(feature = "serde")))]
compile_error!("the bindings hand the core's figures to JavaScript by serde: enable `serde`");

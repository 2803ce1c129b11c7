//! odds-gate: one shared rate-limit gate per credential, in front of the Odds API SDK's
//! `fetchImpl`. [`core`] holds every rule and runs natively; the `js` bindings (wasm only) are
//! the single layer that knows promises, timers and `Response` objects.
#![deny(missing_docs)]

pub mod core;
pub mod store;

#[cfg(target_arch = "wasm32")]
pub mod js;

#[cfg(all(target_arch = "wasm32", not(feature = "serde")))]
compile_error!("the bindings hand the core's figures to JavaScript by serde: enable `serde`");

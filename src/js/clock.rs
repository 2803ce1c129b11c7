//! The two clocks: monotonic time for every wait, wall time only to read an HTTP-date.

use std::cell::RefCell;

use wasm_bindgen::prelude::*;

use crate::core::base::wall::Walls;
use crate::core::Millis;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_namespace = performance, js_name = now)]
    fn performance_now() -> f64;
}

/// Monotonic milliseconds (`performance.now()`): never jumps when the system clock is set.
pub fn now() -> Millis {
    performance_now()
}

/// Unix milliseconds (`Date.now()`), used only to turn an HTTP-date into a delay.
pub fn wall_now() -> Millis {
    js_sys::Date::now()
}

thread_local! {
    /// Wall times converted lately (see [`Walls`]).
    static WALLS: RefCell<Walls> = RefCell::new(Walls::default());
}

/// A Unix time (an HTTP date, a period end) on the monotonic clock.
pub fn from_wall(wall: Millis) -> Millis {
    WALLS.with_borrow_mut(|walls| walls.from_wall(wall, now(), wall_now()))
}

/// A time on the monotonic clock as Unix milliseconds (for a `Date` the caller sees): the wall
/// time it came from, when it was converted from one lately.
pub fn to_wall(at: Millis) -> Millis {
    WALLS.with_borrow(|walls| walls.to_wall(at, || (now(), wall_now())))
}

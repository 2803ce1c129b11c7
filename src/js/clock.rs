//! The two clocks: monotonic time for every wait, wall time only to read an HTTP-date.

use std::cell::RefCell;
use std::collections::VecDeque;

use wasm_bindgen::prelude::*;

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

/// Wall times converted lately, and what they became: one shown back is exactly what the
/// server said (`period_end_utc`), not that moved by how the two clocks drifted in between.
const REMEMBERED: usize = 64;

thread_local! {
    static CONVERTED: RefCell<VecDeque<(Millis, Millis)>> = const { RefCell::new(VecDeque::new()) };
}

/// A Unix time (an HTTP date, a period end) on the monotonic clock.
pub fn from_wall(wall: Millis) -> Millis {
    let at = now() + (wall - wall_now());
    CONVERTED.with_borrow_mut(|converted| {
        if converted.len() == REMEMBERED {
            converted.pop_front();
        }
        converted.push_back((at, wall));
    });
    at
}

/// A time on the monotonic clock as Unix milliseconds (for a `Date` the caller sees): the wall
/// time it came from, when it was converted from one lately.
pub fn to_wall(at: Millis) -> Millis {
    let from = CONVERTED.with_borrow(|c| c.iter().rev().find(|(a, _)| *a == at).map(|(_, w)| *w));
    from.unwrap_or_else(|| wall_now() + (at - now()))
}

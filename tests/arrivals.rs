//! The entries a thread holds of what the other threads fetched (#48's "bounded in every mode"),
//! on the virtual clock: never more than `maxBytes`, the least recently used going first, and
//! nothing past its lifetime, with a wake-up to drop it though nothing else happens.
#![cfg(not(target_arch = "wasm32"))]

use std::collections::HashMap;

use odds_gate::core::rules::arrivals::Arrivals;
use proptest::prelude::*;

const KIB: f64 = 1024.0;

fn arrivals(max_bytes: f64) -> Arrivals {
    let mut a = Arrivals::default();
    a.bound(max_bytes);
    a
}

#[test]
fn no_more_than_max_bytes_are_held_the_least_recently_used_going_first() {
    // 32 entries of 6 KB through 64 KiB: 10 fit.
    let mut a = arrivals(64.0 * KIB);
    let mut dropped = Vec::new();
    for n in 0..32 {
        dropped.extend(a.arrive(0.0, &format!("e{n}"), 6_000.0, 60_000.0));
    }
    assert_eq!(dropped.len(), 22);
    assert_eq!(a.bytes(), 60_000.0);
    assert!((0..22).all(|n| a.left(1.0, &format!("e{n}")).is_none()));
    assert_eq!(a.left(1.0, "e22"), Some(59_999.0));
    // e22 was just used: the next arrival drops e23, the least recently used.
    assert_eq!(a.arrive(2.0, "e32", 6_000.0, 60_000.0), ["e23"]);
    assert!(a.left(3.0, "e22").is_some());
}

#[test]
fn an_entry_too_large_or_already_stale_is_not_kept() {
    let mut a = arrivals(10.0 * KIB);
    assert_eq!(a.arrive(0.0, "big", 11.0 * KIB, 1_000.0), ["big"]);
    assert_eq!(a.arrive(5.0, "old", 1.0, 5.0), ["old"]);
    assert_eq!(a.bytes(), 0.0);
    // A new copy of an entry replaces the old one's bytes.
    a.arrive(0.0, "e", 4_000.0, 1_000.0);
    a.arrive(1.0, "e", 5_000.0, 2_000.0);
    assert_eq!(a.bytes(), 5_000.0);
    // The largest bound of the thread's caches holds.
    a.bound(1.0);
    assert!(a.arrive(2.0, "f", 5_000.0, 2_000.0).is_empty());
}

#[test]
fn lifetimes_end_at_the_wake_up_they_ask_for() {
    let mut a = arrivals(64.0 * KIB);
    assert_eq!(a.wake_at(), None);
    a.arrive(0.0, "a", 2_000.0, 2_000.0);
    a.arrive(0.0, "b", 2_000.0, 5_000.0);
    // Not sooner than a second after the last look (at the first arrival).
    assert_eq!(a.wake_at(), Some(2_000.0));
    assert_eq!(
        a.left(2_000.0, "a"),
        None,
        "past its lifetime, it answers nothing"
    );
    assert_eq!(a.sweep(2_000.0), ["a"]);
    assert_eq!(a.bytes(), 2_000.0);
    assert_eq!(a.wake_at(), Some(5_000.0));
    assert_eq!(a.sweep(5_000.0), ["b"]);
    assert_eq!((a.bytes(), a.wake_at()), (0.0, None));
    // Many lifetimes ending close together: one look a second, not one each.
    for n in 0..100 {
        a.arrive(6_000.0, &format!("c{n}"), 10.0, 6_001.0 + f64::from(n));
    }
    a.sweep(6_050.0);
    assert_eq!(a.wake_at(), Some(7_050.0));
}

proptest! {
    /// Whatever arrives, when and how often it is asked for: the bytes held never pass the
    /// bound, are the sum of what is held, and an entry is answered only while it is fresh and
    /// has not been dropped.
    #[test]
    fn the_bound_and_the_lifetimes_always_hold(
        steps in prop::collection::vec((0..3u8, 0..12u8, 1..40u32, 0..3_000u32), 1..200),
        max_kib in 1..64u32,
    ) {
        let max = f64::from(max_kib) * KIB;
        let mut a = arrivals(max);
        let mut held: HashMap<String, (f64, f64)> = HashMap::new();
        let mut now = 0.0;
        for (op, n, kib, ms) in steps {
            now += f64::from(ms % 500);
            let name = format!("e{n}");
            match op {
                0 => {
                    let (bytes, until) = (f64::from(kib) * 512.0, now + f64::from(ms));
                    held.remove(&name);
                    held.insert(name.clone(), (bytes, until));
                    for gone in a.arrive(now, &name, bytes, until) {
                        held.remove(&gone);
                    }
                }
                1 => {
                    let left = a.left(now, &name);
                    match held.get(&name) {
                        Some(&(_, until)) if until > now => prop_assert_eq!(left, Some(until - now)),
                        _ => prop_assert_eq!(left, None),
                    }
                }
                _ => {
                    for gone in a.sweep(now) {
                        prop_assert!(held.remove(&gone).is_some_and(|(_, until)| until <= now));
                    }
                }
            }
            let sum: f64 = held.values().map(|&(bytes, _)| bytes).sum();
            prop_assert!(a.bytes() <= max);
            prop_assert_eq!(a.bytes(), sum);
        }
    }
}

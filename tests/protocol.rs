//! The numbers the core shares with JavaScript and Redis are written once
//! (`core::base::protocol`): `build.rs` writes `src/js/protocol.js` and heads each script with
//! them, and no script or JavaScript file holds a copy of its own.
#![cfg(not(target_arch = "wasm32"))]

use std::fs;

use odds_gate::core::authority::cache_cells;
use odds_gate::core::authority::threads;
use odds_gate::core::base::protocol;
use odds_gate::core::gate::early::EARLY_MS;
use odds_gate::store::{cache::CACHE_SCRIPT, GATE_SCRIPT};

/// `(name, value)` of every `pub const` of the protocol, read as build.rs reads it.
fn constants() -> Vec<(String, f64)> {
    let text = fs::read_to_string("src/core/base/protocol.rs").unwrap();
    let lines = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub const "));
    let constant = |rest: &str| {
        let (name, rest) = rest.split_once(':')?;
        let value = rest.split_once('=')?.1.trim().trim_end_matches(';');
        Some((name.to_owned(), value.replace('_', "").parse().ok()?))
    };
    lines.map(|l| constant(l).expect("a constant")).collect()
}

#[test]
fn the_javascript_side_gets_every_constant_as_the_core_has_it() {
    let js = fs::read_to_string("src/js/protocol.js").expect("build.rs wrote it");
    let all = constants();
    assert!(all.len() >= 30, "{} constants", all.len());
    for (name, value) in &all {
        let line = format!("export const {name} = ");
        let at = js.find(&line).unwrap_or_else(|| panic!("{name} missing"));
        let rest = &js[at + line.len()..];
        let got: f64 = rest[..rest.find(';').unwrap()].parse().unwrap();
        assert_eq!(got, *value, "{name}");
    }
    // The values the core computes agree with the literals (threads.rs checks WORDS too).
    assert_eq!(threads::WORDS, protocol::SLOT_WORDS);
    assert_eq!(cache_cells::CELL_WORDS, protocol::CELL_WORDS);
    assert_eq!(EARLY_MS, protocol::EARLY_MS);
}

#[test]
fn a_script_is_headed_by_the_constants_it_names_and_defines_none_itself() {
    let head = GATE_SCRIPT.lines().next().unwrap();
    assert!(head.starts_with("local READING_LEASE_MS, "), "{head}");
    for name in ["SLACK", "MOST_OF_LEFT", "NEW_PERIOD_MS", "SCALE_HIGH"] {
        assert!(head.contains(name), "{name} in {head}");
    }
    assert!(head.contains("30000.0") && head.contains("1e-9"), "{head}");
    // cache.lua names none: no head.
    assert!(CACHE_SCRIPT.starts_with("local key = KEYS[1]"));
    for (name, _) in constants() {
        for file in ["gate.lua", "learned.lua", "cache.lua"] {
            let text = fs::read_to_string(format!("src/store/{file}")).unwrap();
            let defines = |l: &str| {
                let lhs = l.strip_prefix("local ").and_then(|l| l.split_once('='));
                lhs.is_some_and(|(names, _)| names.split(',').any(|n| n.trim() == name))
            };
            assert!(!text.lines().any(defines), "{file} defines {name} itself");
        }
    }
}

#[test]
fn no_javascript_file_defines_a_constant_of_the_protocol_itself() {
    for entry in fs::read_dir("src/js").unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.ends_with(".js") || name == "protocol.js" {
            continue;
        }
        let text = fs::read_to_string(&path).unwrap();
        for (constant, _) in constants() {
            let defined = format!("const {constant} =");
            assert!(!text.contains(&defined), "{name} defines {constant} itself");
        }
    }
}

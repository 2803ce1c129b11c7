//! The gate script as loaded into Redis: `src/store/gate.lua` without its comment lines and
//! indentation. The comments document the contract for readers; Redis needs only the code,
//! and every byte of the script is a byte of the wasm module.

use std::{env, fs, path::Path};

fn main() {
    let source = "src/store/gate.lua";
    println!("cargo:rerun-if-changed={source}");
    let text = fs::read_to_string(source).expect("read src/store/gate.lua");
    let code: String = text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with("--"))
        .flat_map(|line| [line, "\n"])
        .collect();
    let out = env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    fs::write(Path::new(&out).join("gate.lua"), code).expect("write gate.lua");
}

//! The Redis scripts as loaded into Redis: `src/store/*.lua` without their comment lines and
//! indentation. The comments document the contract for readers; Redis needs only the code,
//! and every byte of a script is a byte of the wasm module.

use std::{env, fs, path::Path};

fn main() {
    let out = env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    for name in ["gate.lua", "learned.lua", "cache.lua"] {
        let source = format!("src/store/{name}");
        println!("cargo:rerun-if-changed={source}");
        let text = fs::read_to_string(&source).expect("read a script in src/store");
        let code: String = text
            .lines()
            .map(str::trim)
            .filter(|line| !line.is_empty() && !line.starts_with("--"))
            .flat_map(|line| [line, "\n"])
            .collect();
        fs::write(Path::new(&out).join(name), code).expect("write the script");
    }
}

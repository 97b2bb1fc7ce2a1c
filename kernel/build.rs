//! Hands the linker roving's script for the target's architecture
//! (`linker/<arch>.ld`, in this package) as `roving.ld`. The search path
//! reaches every program that links this crate: a program passes
//! `-Troving.ld`. On AArch64 the script includes `roving-board-memory.ld`,
//! which the board crate's own build script provides (its load address).

use std::{env, fs, path::PathBuf};

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets it"));
    let arch = env::var("CARGO_CFG_TARGET_ARCH").expect("cargo sets it");
    let script = PathBuf::from(format!("linker/{arch}.ld"));
    if script.exists() {
        fs::copy(&script, out.join("roving.ld")).unwrap_or_else(|e| panic!("copy {}: {e}", script.display()));
        println!("cargo:rustc-link-search={}", out.display());
    }
    println!("cargo:rerun-if-changed={}", script.display());
}

//! Hands the linker roving's script for the target's architecture
//! (`linker/<arch>.ld`, in this package) as `roving.ld`. The search path
//! reaches every program that links this crate: a program passes
//! `-Troving.ld`. On AArch64 the script includes `roving-board-memory.ld`,
//! which the board crate's own build script provides (its load address).
//!
//! Also reads the build-time core limit, `ROVING_MAX_CORES` (default 64,
//! 1 to 1024), into `max_cores.rs` for `boot_info::MAX_CORES`.

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

    println!("cargo:rerun-if-env-changed=ROVING_MAX_CORES");
    let max_cores = match env::var("ROVING_MAX_CORES") {
        Err(_) => DEFAULT_MAX_CORES,
        Ok(text) => match text.trim().parse::<usize>() {
            Ok(n) if (1..=LIMIT).contains(&n) => n,
            _ => panic!("ROVING_MAX_CORES must be a whole number from 1 to {LIMIT}, not '{text}'"),
        },
    };
    fs::write(out.join("max_cores.rs"), format!("{max_cores}\n")).expect("write max_cores.rs");
}

/// Cores a build runs on unless `ROVING_MAX_CORES` says otherwise. Each
/// costs the kernel 80 KiB of stacks.
const DEFAULT_MAX_CORES: usize = 64;
/// The most `ROVING_MAX_CORES` may ask for.
const LIMIT: usize = 1024;

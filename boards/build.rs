//! Every board crate's build script (`build = "../build.rs"`): hands the
//! linker the script for the target's architecture (`linker/<arch>.ld`)
//! as `roving.ld`, and the board's `memory.ld`, if it has one, as
//! `roving-board-memory.ld` (the AArch64 script includes it for the load
//! address). A program linking the board passes `-Troving.ld`.

use std::{env, fs, path::PathBuf};

fn main() {
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets it"));
    let arch = env::var("CARGO_CFG_TARGET_ARCH").expect("cargo sets it");
    let script = manifest.join(format!("../../linker/{arch}.ld"));
    fs::copy(&script, out.join("roving.ld")).unwrap_or_else(|e| panic!("copy {}: {e}", script.display()));
    println!("cargo:rerun-if-changed={}", script.display());
    let memory = manifest.join("memory.ld");
    if memory.exists() {
        fs::copy(&memory, out.join("roving-board-memory.ld")).expect("copy memory.ld");
    }
    println!("cargo:rerun-if-changed={}", memory.display());
    println!("cargo:rustc-link-search={}", out.display());
}

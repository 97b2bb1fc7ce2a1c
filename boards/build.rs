//! Every AArch64 board crate's build script (`build = "../build.rs"`):
//! hands the linker the board's `memory.ld` and the AArch64 linker script.
//! A program linking the board passes `-Troving.ld`.

use std::{env, fs, path::PathBuf};

fn main() {
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets it"));
    let script = manifest.join("../../linker/aarch64.ld");
    let memory = manifest.join("memory.ld");
    fs::copy(&script, out.join("roving.ld")).expect("copy linker/aarch64.ld");
    fs::copy(&memory, out.join("roving-board-memory.ld")).expect("copy memory.ld");
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rerun-if-changed={}", script.display());
    println!("cargo:rerun-if-changed={}", memory.display());
}

//! Hands the linker the x86_64 linker script (a PC needs no memory file:
//! the PVH loader places the image at its link address, 1 MiB). A program
//! linking this board passes `-Troving.ld`.

use std::{env, fs, path::PathBuf};

fn main() {
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets it"));
    let script = manifest.join("../../linker/x86_64.ld");
    fs::copy(&script, out.join("roving.ld")).expect("copy linker/x86_64.ld");
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rerun-if-changed={}", script.display());
}

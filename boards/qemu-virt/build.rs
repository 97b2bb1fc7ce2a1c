//! Hands the linker this board's `memory.ld` (where the loader puts the
//! image) as `roving-board-memory.ld`, which roving-kernel's script includes.

fn main() {
    let out = std::env::var("OUT_DIR").expect("cargo sets it");
    std::fs::copy("memory.ld", format!("{out}/roving-board-memory.ld")).expect("copy memory.ld");
    println!("cargo:rustc-link-search={out}");
    println!("cargo:rerun-if-changed=memory.ld");
}

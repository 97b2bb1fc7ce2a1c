//! Links the loader with its own script (`loader.ld`): it runs from
//! `LOADER_ADDRESS`, where its first instructions copy it.

fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it");
    println!("cargo:rustc-link-arg-bins=-T{dir}/loader.ld");
    println!("cargo:rerun-if-changed=loader.ld");
}

//! Links with the board's linker script (found through the board crate).
fn main() {
    println!("cargo:rustc-link-arg-bins=-Troving.ld");
}

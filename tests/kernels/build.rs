//! Links with the board's linker script (found through the board crate),
//! and with defmt's (its interned strings, in an info section) when the
//! console carries defmt frames (feature `defmt`, the faults kernel's
//! second build).
fn main() {
    println!("cargo:rustc-link-arg-bins=-Troving.ld");
    if std::env::var_os("CARGO_FEATURE_DEFMT").is_some() {
        println!("cargo:rustc-link-arg-bins=-Tdefmt.x");
    }
}

//! Build-time sizes of the fibre region and of strand control blocks.
//!
//! Set them in the environment of the build (or in `[env]` of
//! `.cargo/config.toml`); the build fails with a clear message if a value
//! is not a number or is out of range:
//!
//! | variable                  | meaning                                   | default            |
//! |---------------------------|-------------------------------------------|--------------------|
//! | `ROVING_FIBRES`           | fibre stacks in the static region         | 64                 |
//! | `ROVING_FIBRE_STACK_KIB`  | bytes of each stack, in KiB (multiple of 4) | 16; 64 with `std` |
//! | `ROVING_STRAND_BYTES`     | most bytes of a control block, closure and result included | 256 |
//!
//! Host code (feature `std`) gets bigger stacks by default: unoptimised
//! code, formatting and unwinding in `std` take far more stack than a
//! bare-metal release build.

/// Bytes of the guard gap below every stack: one page.
pub const GUARD_BYTES: usize = 4096;

/// Fibre stacks in the static region.
pub const FIBRES: usize = parse(option_env!("ROVING_FIBRES"), 64);

/// Bytes of each fibre stack.
pub const STACK_BYTES: usize = {
    let kib = parse(option_env!("ROVING_FIBRE_STACK_KIB"), DEFAULT_STACK_KIB);
    assert!(kib >= 8 && kib.is_multiple_of(4), "ROVING_FIBRE_STACK_KIB must be a multiple of 4, at least 8");
    kib * 1024
};

/// Most bytes a strand's control block may take, closure and result
/// included; a bigger one is refused by `spawn` with a typed error.
pub const STRAND_BYTES: usize = {
    let bytes = parse(option_env!("ROVING_STRAND_BYTES"), 256);
    assert!(
        bytes >= MIN_STRAND_BYTES,
        "ROVING_STRAND_BYTES must be at least 200 (the control block's own fields; 208 under make tsan)"
    );
    bytes
};

/// The control block's own fields fit in this many bytes; under `make
/// tsan` a context also carries the sanitizer's fiber, one word more.
pub(crate) const MIN_STRAND_BYTES: usize = if cfg!(roving_tsan) { 208 } else { 200 };

#[cfg(feature = "std")]
const DEFAULT_STACK_KIB: usize = 64;
#[cfg(not(feature = "std"))]
const DEFAULT_STACK_KIB: usize = 16;

const _: () = assert!(FIBRES >= 1 && FIBRES <= 65_536, "ROVING_FIBRES must be between 1 and 65536");

/// A decimal number from the build environment, or `default`.
const fn parse(value: Option<&str>, default: usize) -> usize {
    let Some(text) = value else { return default };
    let bytes = text.as_bytes();
    assert!(!bytes.is_empty(), "a roving size knob is set but empty");
    let mut number = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        let digit = bytes[i];
        if !digit.is_ascii_digit() {
            panic!(
                "a roving size knob (ROVING_FIBRES, ROVING_FIBRE_STACK_KIB, ROVING_STRAND_BYTES) is not a decimal number"
            );
        }
        number = number * 10 + (digit - b'0') as usize;
        i += 1;
    }
    number
}

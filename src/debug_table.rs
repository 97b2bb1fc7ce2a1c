//! What a debugger needs to read roving out of a halted target's memory,
//! beyond the program's debug information: the table `ROVING_DEBUG`,
//! kept in every image (the kernel's linker script keeps its section).
//!
//! `tools/gdb-roving.py` (`make gdb`) reads roving's own structures by
//! their names and types in the program's debug information, so it sees
//! the layout of the build it is looking at. What it cannot learn there is
//! what the names mean: which fields it reads, and how. [`VERSION`] says
//! that: it changes whenever a structure the extension reads changes its
//! fields or their meaning, together with the extension, which refuses a
//! program of another version and says so. The table also carries the
//! build-time sizes that are constants, not data (`strand::sizes`), so the
//! extension finds each fibre's stack without guessing.

use crate::strand::sizes::{FIBRES, GUARD_BYTES, STACK_BYTES};

/// The version of the structures a debugger reads (module docs). Bump it
/// with `EXPECTED_VERSION` in `tools/gdb-roving.py`.
pub const VERSION: u32 = 1;

/// The table (module docs); all numbers, little-endian words.
#[repr(C)]
pub struct DebugTable {
    /// `b"rovingdb"`.
    pub magic: [u8; 8],
    /// [`VERSION`].
    pub version: u32,
    /// Bytes of a pointer on the target.
    pub pointer_bytes: u32,
    /// Fibres in the static region.
    pub fibres: u64,
    /// Bytes of each fibre's stack.
    pub stack_bytes: u64,
    /// Bytes of the guard gap below each stack.
    pub guard_bytes: u64,
}

/// The table itself, under a name no other crate uses.
#[used]
#[unsafe(no_mangle)]
#[cfg_attr(target_os = "none", unsafe(link_section = ".roving.debug"))]
pub static ROVING_DEBUG: DebugTable = DebugTable {
    magic: *b"rovingdb",
    version: VERSION,
    pointer_bytes: size_of::<usize>() as u32,
    fibres: FIBRES as u64,
    stack_bytes: STACK_BYTES as u64,
    guard_bytes: GUARD_BYTES as u64,
};

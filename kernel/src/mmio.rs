//! Device registers: the one way the kernel and the board crates read and
//! write memory-mapped registers that no typed driver crate covers (the
//! PL011 and the GIC's set-up use theirs).
//!
//! A [`Registers`] names a block of registers by its base address. Making
//! one is the unsafe step, where the caller vouches for the mapping; each
//! access is then a single volatile load or store of the register's width
//! at `base + offset`, which the compiler neither merges, splits nor
//! reorders with other volatile accesses.

/// A block of memory-mapped device registers (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Registers(usize);

impl Registers {
    /// The block whose registers start at `base`.
    ///
    /// # Safety
    ///
    /// `base` is the start of a block of device registers, mapped as
    /// device memory (uncached) wherever the result is used; every offset
    /// later read or written is one of its registers, aligned to the
    /// access's width; and no access changes memory that Rust code owns.
    pub const unsafe fn at(base: usize) -> Self {
        Self(base)
    }

    /// The 32-bit register at `offset`.
    pub fn read32(self, offset: usize) -> u32 {
        // SAFETY: a register of the block (`at`'s contract).
        unsafe { ((self.0 + offset) as *const u32).read_volatile() }
    }

    /// Writes the 32-bit register at `offset`.
    pub fn write32(self, offset: usize, value: u32) {
        // SAFETY: a register of the block (`at`'s contract).
        unsafe { ((self.0 + offset) as *mut u32).write_volatile(value) }
    }

    /// Writes the 64-bit register at `offset`.
    pub fn write64(self, offset: usize, value: u64) {
        // SAFETY: a register of the block (`at`'s contract).
        unsafe { ((self.0 + offset) as *mut u64).write_volatile(value) }
    }

    /// Writes the byte-wide register at `offset`.
    pub fn write8(self, offset: usize, value: u8) {
        // SAFETY: a register of the block (`at`'s contract).
        unsafe { ((self.0 + offset) as *mut u8).write_volatile(value) }
    }
}

//! An identity map in two 1 GiB blocks, so that RAM is normal cacheable
//! memory. roving's atomics are exclusive loads and stores, which need
//! that: with the MMU off every access is to device memory, where an
//! exclusive store may fail forever on real hardware.
//!
//! | virtual = physical        | what           | memory type          |
//! |---------------------------|----------------|----------------------|
//! | `0x0000_0000..0x4000_0000`| devices (UART) | device nGnRE         |
//! | `0x4000_0000..0x8000_0000`| RAM            | normal, write-back   |
//!
//! The rest of the 4 GiB input range is unmapped, so a stray pointer
//! faults. roving's fibre guard gaps are not unmapped: that needs 4 KiB
//! pages (docs/embedding.md, "Guard gaps").

use aarch64_cpu::asm::barrier;
use aarch64_cpu::registers::{MAIR_EL1, ReadWriteable, SCTLR_EL1, TCR_EL1, TTBR0_EL1, Writeable};

const BLOCK: u64 = 0b01;
const ACCESSED: u64 = 1 << 10;
const INNER_SHAREABLE: u64 = 0b11 << 8;
const NO_EXECUTE: u64 = (1 << 54) | (1 << 53);
/// Indices into MAIR_EL1, as written by [`enable`].
const DEVICE: u64 = 0 << 2;
const NORMAL: u64 = 1 << 2;

#[repr(C, align(4096))]
struct Level1([u64; 4]);

static LEVEL1: Level1 = Level1([
    BLOCK | ACCESSED | DEVICE | NO_EXECUTE,
    (1 << 30) | BLOCK | ACCESSED | INNER_SHAREABLE | NORMAL,
    0,
    0,
]);

/// Turns the MMU and caches on for the calling core. Uses no atomics.
pub fn enable() {
    MAIR_EL1.write(
        MAIR_EL1::Attr0_Device::nonGathering_nonReordering_EarlyWriteAck
            + MAIR_EL1::Attr1_Normal_Inner::WriteBack_NonTransient_ReadWriteAlloc
            + MAIR_EL1::Attr1_Normal_Outer::WriteBack_NonTransient_ReadWriteAlloc,
    );
    TTBR0_EL1.set_baddr(LEVEL1.0.as_ptr() as u64);
    TCR_EL1.write(
        TCR_EL1::T0SZ.val(32)
            + TCR_EL1::TG0::KiB_4
            + TCR_EL1::SH0::Inner
            + TCR_EL1::IRGN0::WriteBack_ReadAlloc_WriteAlloc_Cacheable
            + TCR_EL1::ORGN0::WriteBack_ReadAlloc_WriteAlloc_Cacheable
            + TCR_EL1::EPD1::DisableTTBR1Walks
            + TCR_EL1::IPS::Bits_40,
    );
    // SAFETY: drops stale translations before the first walk; touches no memory.
    unsafe { core::arch::asm!("tlbi vmalle1", options(nostack)) };
    barrier::dsb(barrier::ISH);
    barrier::isb(barrier::SY);
    SCTLR_EL1.modify(SCTLR_EL1::M::Enable + SCTLR_EL1::C::Cacheable + SCTLR_EL1::I::Cacheable);
    barrier::isb(barrier::SY);
}

//! What a backtrace needs from AArch64: the registers where it starts, and
//! whether a word on the stack is a return address.

use crate::backtrace::Registers;
use core::arch::asm;

/// Where `address`, a code address of the running image, is in the ELF:
/// the same address, since every loader puts the image where it is linked.
pub(crate) fn linked_address(address: usize) -> usize {
    address
}

/// The calling function's registers at this point: its program counter,
/// stack pointer, frame pointer (x29) and link register (x30). Inlined, so
/// that they are the caller's own.
#[inline(always)]
pub(crate) fn registers_here() -> Registers {
    let (pc, sp, fp, lr): (usize, usize, usize, usize);
    // SAFETY: reads registers and the address of this instruction.
    unsafe {
        asm!(
            "adr {pc}, .",
            "mov {sp}, sp",
            "mov {fp}, x29",
            "mov {lr}, x30",
            pc = out(reg) pc, sp = out(reg) sp, fp = out(reg) fp, lr = out(reg) lr,
            options(nomem, nostack, preserves_flags),
        );
    }
    Registers { pc, sp, fp, lr: Some(lr) }
}

/// Whether `address` (inside the kernel's code) follows a call: the
/// instruction before it is a BL or a BLR, so a call would return there.
///
/// # Safety
///
/// `address - 4 .. address` must be readable (inside the kernel's code).
pub(crate) unsafe fn follows_call(address: usize) -> bool {
    if !address.is_multiple_of(4) {
        return false;
    }
    // SAFETY: the caller's contract.
    let before = unsafe { ((address - 4) as *const u32).read_volatile() };
    let bl = before & 0xfc00_0000 == 0x9400_0000;
    let blr = before & 0xffff_fc1f == 0xd63f_0000;
    bl || blr
}

//! What a backtrace needs from x86_64: the registers where it starts, and
//! whether a word on the stack is a return address.

use crate::backtrace::Registers;
use core::arch::asm;

/// The calling function's registers at this point: its instruction
/// pointer, stack pointer and rbp. Inlined, so that they are the caller's
/// own.
#[inline(always)]
pub(crate) fn registers_here() -> Registers {
    let (pc, sp, fp): (usize, usize, usize);
    // SAFETY: reads registers and the address of this instruction.
    unsafe {
        asm!(
            "lea {pc}, [rip]",
            "mov {sp}, rsp",
            "mov {fp}, rbp",
            pc = out(reg) pc, sp = out(reg) sp, fp = out(reg) fp,
            options(nomem, nostack, preserves_flags),
        );
    }
    Registers { pc, sp, fp, lr: None }
}

/// Where `address`, a code address of the running image, is in the ELF:
/// less the load offset of a relocated Multiboot2 load, so the runner's
/// symbolizer finds it.
pub(crate) fn linked_address(address: usize) -> usize {
    address.wrapping_sub(super::boot::load_offset() as usize)
}

/// Whether `address` (inside the kernel's code, at least 7 bytes in)
/// follows a call: the bytes before it encode a `call rel32`, or an
/// indirect `call` through a register or memory (opcode FF /2).
///
/// # Safety
///
/// `address - 7 .. address` must be readable (inside the kernel's code).
pub(crate) unsafe fn follows_call(address: usize) -> bool {
    // SAFETY: the caller's contract.
    let byte = |back: usize| unsafe { ((address - back) as *const u8).read_volatile() };
    // ModRM of FF /2: reg field 2, and the mode that makes the call `back`
    // bytes long with an opcode at `address - back`.
    let indirect = |back: usize, modes: &[u8]| {
        let modrm = byte(back - 1);
        byte(back) == 0xff && (modrm >> 3) & 7 == 2 && modes.contains(&(modrm >> 6))
    };
    // A REX prefix comes before the opcode, so it does not move it.
    byte(5) == 0xe8                     // call rel32
        || indirect(2, &[0b00, 0b11])   // call reg, call [reg]
        || indirect(3, &[0b00, 0b01])   // call [reg+index], call [reg+disp8]
        || indirect(4, &[0b01])         // call [reg+index+disp8]
        || indirect(6, &[0b00, 0b10])   // call [rip+disp32], call [reg+disp32]
        || indirect(7, &[0b10]) // call [reg+index+disp32]
}

//! The AArch64 switch (AAPCS64).

use super::Context;
use core::arch::naked_asm;

/// Saved below the stack top by `prepare`: x19-x30 and d8-d15.
pub const FRAME_BYTES: usize = 20 * 8;

/// Stores the registers a callee must preserve at `[sp, #0..160)`.
macro_rules! save_callee_saved {
    () => {
        "stp x19, x20, [sp, #0]
        stp x21, x22, [sp, #16]
        stp x23, x24, [sp, #32]
        stp x25, x26, [sp, #48]
        stp x27, x28, [sp, #64]
        stp x29, x30, [sp, #80]
        stp d8, d9, [sp, #96]
        stp d10, d11, [sp, #112]
        stp d12, d13, [sp, #128]
        stp d14, d15, [sp, #144]"
    };
}

/// Loads what `save_callee_saved` stored.
macro_rules! load_callee_saved {
    () => {
        "ldp x19, x20, [sp, #0]
        ldp x21, x22, [sp, #16]
        ldp x23, x24, [sp, #32]
        ldp x25, x26, [sp, #48]
        ldp x27, x28, [sp, #64]
        ldp x29, x30, [sp, #80]
        ldp d8, d9, [sp, #96]
        ldp d10, d11, [sp, #112]
        ldp d12, d13, [sp, #128]
        ldp d14, d15, [sp, #144]"
    };
}

/// # Safety
///
/// As for `super::switch`.
#[unsafe(naked)]
pub unsafe extern "C" fn switch(from: *mut Context, to: *const Context) {
    naked_asm!(
        "sub sp, sp, #160",
        save_callee_saved!(),
        "mov x9, sp",
        "str x9, [x0]",
        "ldr x9, [x1]",
        "mov sp, x9",
        load_callee_saved!(),
        "add sp, sp, #160",
        "ret",
    )
}

/// The first `switch` into a new context returns here (x30), with the
/// argument in x19 and the entry point in x20.
#[unsafe(naked)]
unsafe extern "C" fn trampoline() -> ! {
    naked_asm!("mov x0, x19", "blr x20", "udf #0")
}

/// Writes the first switch's frame below `stack_top`; returns the stack
/// pointer to resume.
///
/// # Safety
///
/// As for `Context::new`.
pub unsafe fn prepare(stack_top: *mut u8, entry: extern "C" fn(usize) -> !, argument: usize) -> usize {
    let top = stack_top as usize & !15;
    let mut frame = [0u64; 20];
    frame[0] = argument as u64; // x19
    frame[1] = entry as usize as u64; // x20
    frame[11] = trampoline as *const () as usize as u64; // x30
    let saved = (top - FRAME_BYTES) as *mut u64;
    // SAFETY: below the caller's stack top, inside the region it promised.
    unsafe { saved.copy_from_nonoverlapping(frame.as_ptr(), frame.len()) };
    saved as usize
}

/// Bytes `catch` keeps on the stack: x19-x30 and d8-d15, then the slot's
/// address (and padding, for 16-byte alignment).
const CATCH_BYTES: usize = 176;

/// Saves the callee-saved registers and the slot's address on the stack,
/// stores the stack pointer in `*slot`, and calls `f(argument)`. Returns 0
/// when `f` returns (clearing `*slot`), or 1 when `throw` resumed it.
///
/// # Safety
///
/// `slot` is valid for the call; `f` is a plain `extern "C"` function
/// that does not unwind.
#[unsafe(naked)]
pub unsafe extern "C" fn catch(slot: *mut usize, f: extern "C" fn(usize), argument: usize) -> usize {
    naked_asm!(
        "sub sp, sp, #{frame}",
        save_callee_saved!(),
        "str x0, [sp, #160]",
        "mov x9, sp",
        "str x9, [x0]",
        "mov x0, x2",
        "blr x1",
        "ldr x9, [sp, #160]",
        "str xzr, [x9]",
        "mov x0, #0",
        "ldp x29, x30, [sp, #80]",
        "ldp x19, x20, [sp, #0]",
        "add sp, sp, #{frame}",
        "ret",
        frame = const CATCH_BYTES,
    )
}

/// Resumes the `catch` whose stack pointer is `stack_pointer`, which then
/// returns 1; the frames below it are abandoned.
///
/// # Safety
///
/// `stack_pointer` is what a `catch` still running on this stack stored,
/// and the code being abandoned runs on that stack, below it.
#[unsafe(naked)]
pub unsafe extern "C" fn throw(stack_pointer: usize) -> ! {
    naked_asm!(
        "mov sp, x0",
        "ldr x9, [sp, #160]",
        "str xzr, [x9]",
        "mov x0, #1",
        load_callee_saved!(),
        "add sp, sp, #{frame}",
        "ret",
        frame = const CATCH_BYTES,
    )
}

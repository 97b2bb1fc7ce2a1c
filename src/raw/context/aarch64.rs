//! The AArch64 switch (AAPCS64).
//!
//! A suspended context's stack holds 32 bytes from its saved stack
//! pointer up: the address to resume at, a spare word, x19 and x29 (the
//! frame pointer). Everything else the caller keeps is the compiler's to
//! save: the switches are inline assembly that declares every other
//! register clobbered (d8-d15 included), so only values live at the call
//! site are spilled. x19 and x29 are the exceptions, because LLVM reserves
//! them and an `asm!` block cannot name them as clobbered.
//!
//! Calls and returns stay paired. [`resume`] enters the context with a
//! `blr` to its resume address, and [`suspend`] leaves with a `ret` to
//! that branch's return address, which the resume address kept on the
//! resumer's stack; so the return predictor, which pushed an entry at the
//! `blr`, pops the right one at the `ret`. Into a resume address, x0 holds
//! the context's saved stack pointer, x1 the link (where the resumer's
//! stack pointer goes), x2 a message for the resumed side and x30 the
//! return address into `resume`.
//!
//! FPCR is not saved (see the module above).

use super::Context;
use core::arch::{asm, naked_asm};

/// Saved below the stack top by `prepare`: the resume address (the
/// trampoline), a spare word, the argument and the entry point.
pub const FRAME_BYTES: usize = 4 * 8;

/// `super::resume` on this instruction set, `to` being the context's
/// saved stack pointer; the context's switch returns the message 0.
///
/// # Safety
///
/// As for `super::resume`.
#[inline(always)]
pub unsafe fn resume(to: usize, link: *mut Context) {
    // SAFETY: the caller's contract. The block restores sp, x19 and x29
    // before it ends and declares every other register clobbered; the stack
    // it pushes on is the caller's, below its stack pointer (no `nostack`).
    unsafe {
        asm!(
            "stp x19, x29, [sp, #-16]!",
            "ldr x9, [x0]",
            "blr x9",
            "ldp x19, x29, [sp], #16",
            inout("x0") to => _,
            inout("x1") link => _,
            inout("x2") 0usize => _,
            out("x20") _, out("x21") _, out("x22") _, out("x23") _, out("x24") _,
            out("x25") _, out("x26") _, out("x27") _, out("x28") _,
            clobber_abi("C"),
        );
    }
}

/// Saves the running context in `$me` (its stack pointer, below the resume
/// address, x19 and x29), moves to the resumer's stack at `$link` with its
/// return address back in x30, leaves by `$leave`, and evaluates to the
/// message it is resumed with. Label 2 is the resume address: a `resume`
/// or a hand-off arrives there with x0 = the stack pointer stored, x1 = its
/// link, x2 = its message and x30 = where to return to in the resumer
/// (kept on its stack, under the link); the block then ends with sp, x19
/// and x29 as they were at its start, every other register clobbered.
/// `$to` and `$message` go to the leaving instructions in x3 and x2.
macro_rules! save_and_leave {
    ($leave:literal, $me:expr, $link:expr, $to:expr, $message:expr) => {{
        let received: usize;
        asm!(
            "sub sp, sp, #32",
            "adr x9, 2f",
            "str x9, [sp]",
            "stp x19, x29, [sp, #16]",
            "mov x9, sp",
            "str x9, [x0]",
            "ldr x9, [x1]",
            "ldr x30, [x9]",
            "add sp, x9, #16",
            $leave,
            "2:",
            "str x30, [sp, #-16]!",
            "mov x9, sp",
            "str x9, [x1]",
            "ldp x19, x29, [x0, #16]",
            "add sp, x0, #32",
            inout("x0") $me => _,
            inout("x1") $link => _,
            inout("x2") $message => received,
            inout("x3") $to => _,
            out("x20") _, out("x21") _, out("x22") _, out("x23") _, out("x24") _,
            out("x25") _, out("x26") _, out("x27") _, out("x28") _,
            clobber_abi("C"),
        );
        received
    }};
}

/// `super::suspend` on this instruction set.
///
/// # Safety
///
/// As for `super::suspend`.
#[inline(always)]
pub unsafe fn suspend(me: *mut Context, link: *const Context) -> usize {
    // SAFETY: the caller's contract; see `save_and_leave`. The `ret` goes
    // back to the resumer's branch.
    unsafe { save_and_leave!("ret", me, link, 0usize, 0usize) }
}

/// `super::hand_off` on this instruction set, `to` being the context's
/// saved stack pointer.
///
/// The branch leaves the return predictor one entry off (`me` entered by
/// a `blr` it never returns from), which the next few returns pay for.
///
/// # Safety
///
/// As for `super::hand_off`.
#[inline(always)]
pub unsafe fn hand_off(me: *mut Context, to: usize, link: *mut Context, message: usize) -> usize {
    // SAFETY: the caller's contract; see `save_and_leave`. From the
    // resumer's stack, the branch enters `to` as `resume` would have, with
    // the same registers (x30 still the resumer's return address).
    unsafe { save_and_leave!("mov x0, x3\n ldr x9, [x3]\n br x9", me, link, to, message) }
}

/// The resume address of a new context: does what label 2 of `suspend`
/// does, then calls the entry point with the argument, from the stack top
/// and with x29 and x30 zero, the end of the frame chain.
#[unsafe(naked)]
unsafe extern "C" fn trampoline() -> ! {
    naked_asm!(
        // For unwinders (a debugger's, the backtrace's): nothing called
        // this; a strand's stack ends here.
        ".cfi_startproc",
        ".cfi_undefined x30",
        "str x30, [sp, #-16]!",
        "mov x9, sp",
        "str x9, [x1]",
        "ldp x10, x9, [x0, #16]",
        "add sp, x0, #32",
        "mov x0, x10",
        "mov x29, xzr",
        "mov x30, xzr",
        "blr x9",
        "udf #0",
        ".cfi_endproc",
    )
}

/// Writes the first resume's frame below `stack_top`; returns the stack
/// pointer to resume.
///
/// # Safety
///
/// As for `Context::new`.
pub unsafe fn prepare(stack_top: *mut u8, entry: extern "C" fn(usize) -> !, argument: usize) -> usize {
    let top = stack_top as usize & !15;
    let frame = [trampoline as *const () as usize as u64, 0, argument as u64, entry as usize as u64];
    let saved = (top - FRAME_BYTES) as *mut u64;
    // SAFETY: below the caller's stack top, inside the region it promised.
    unsafe { saved.copy_from_nonoverlapping(frame.as_ptr(), frame.len()) };
    saved as usize
}

/// Stores the registers a callee must preserve at `[sp, #0..160)` (for
/// `catch`).
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

//! The x86_64 switch (System V ABI, the same on the host and bare metal).

use super::Context;
use core::arch::naked_asm;

/// Saved below the stack top by `prepare`: the return address of the first
/// `switch` (the trampoline), six general registers, the FP control words.
pub const FRAME_BYTES: usize = 8 + 6 * 8 + FP_CONTROL_BYTES;

/// MXCSR (4 bytes) and the x87 control word (2), in one 8-byte slot. Only
/// when the target uses hardware floating point: `x86_64-unknown-none` is
/// soft-float, and there the instructions could fault before the kernel
/// enables SSE.
#[cfg(target_feature = "sse")]
const FP_CONTROL_BYTES: usize = 8;
#[cfg(not(target_feature = "sse"))]
const FP_CONTROL_BYTES: usize = 0;

/// Pushes the general registers a callee must preserve.
macro_rules! push_callee_saved {
    () => {
        "push rbp\n push rbx\n push r12\n push r13\n push r14\n push r15"
    };
}

/// Pops what `push_callee_saved` pushed, and returns.
macro_rules! pop_callee_saved_and_return {
    () => {
        "pop r15\n pop r14\n pop r13\n pop r12\n pop rbx\n pop rbp\n ret"
    };
}

/// Power-on values: all exceptions masked, round to nearest.
#[cfg(target_feature = "sse")]
const MXCSR_DEFAULT: u64 = 0x1f80;
#[cfg(target_feature = "sse")]
const X87_CONTROL_DEFAULT: u64 = 0x037f;

/// Saves the FP control words below the general registers, when there
/// are any (see `FP_CONTROL_BYTES`), and keeps the running ones in eax (MXCSR)
/// and cx (x87) for `restore_fp_controls`.
#[cfg(target_feature = "sse")]
macro_rules! save_fp_controls {
    () => {
        "sub rsp, 8\n stmxcsr [rsp]\n fnstcw [rsp + 4]\n mov eax, [rsp]\n mov cx, [rsp + 4]"
    };
}
/// Restores the saved FP control words, loading each only if it differs
/// from the running one: `ldmxcsr` and `fldcw` are microcoded and cost
/// tens of cycles each, and nearly always the values are equal.
#[cfg(target_feature = "sse")]
macro_rules! restore_fp_controls {
    () => {
        "cmp eax, [rsp]
        je 2f
        ldmxcsr [rsp]
        2:
        cmp cx, [rsp + 4]
        je 3f
        fldcw [rsp + 4]
        3:
        add rsp, 8"
    };
}
#[cfg(not(target_feature = "sse"))]
macro_rules! save_fp_controls {
    () => {
        ""
    };
}
#[cfg(not(target_feature = "sse"))]
macro_rules! restore_fp_controls {
    () => {
        ""
    };
}

/// # Safety
///
/// As for `super::switch`.
#[unsafe(naked)]
pub unsafe extern "sysv64" fn switch(from: *mut Context, to: *const Context) {
    naked_asm!(
        push_callee_saved!(),
        save_fp_controls!(),
        "mov [rdi], rsp",
        "mov rsp, [rsi]",
        restore_fp_controls!(),
        pop_callee_saved_and_return!(),
    )
}

/// The first `switch` into a new context returns here, with the entry
/// point in r13 and its argument in r12. The stack pointer is 16-byte
/// aligned, as the ABI wants it at a call.
#[unsafe(naked)]
unsafe extern "sysv64" fn trampoline() -> ! {
    naked_asm!("mov rdi, r12", "call r13", "ud2")
}

/// Writes the first switch's frame below `stack_top`; returns the stack
/// pointer to resume.
///
/// # Safety
///
/// As for `Context::new`.
pub unsafe fn prepare(stack_top: *mut u8, entry: extern "C" fn(usize) -> !, argument: usize) -> usize {
    let top = stack_top as usize & !15;
    // From the saved stack pointer up: [FP controls], r15, r14, r13, r12,
    // rbx, rbp, return address; the return address sits at top - 8, so the
    // trampoline starts with the stack pointer at `top`.
    let frame: [u64; 7] =
        [0, 0, entry as usize as u64, argument as u64, 0, 0, trampoline as *const () as usize as u64];
    let registers = (top - frame.len() * 8) as *mut u64;
    // SAFETY: below the caller's stack top, inside the region it promised.
    unsafe { registers.copy_from_nonoverlapping(frame.as_ptr(), frame.len()) };
    #[cfg(target_feature = "sse")]
    {
        let controls = registers.wrapping_sub(1);
        // SAFETY: as above; MXCSR in the low half, the x87 word above it.
        unsafe { controls.write(MXCSR_DEFAULT | X87_CONTROL_DEFAULT << 32) };
        controls as usize
    }
    #[cfg(not(target_feature = "sse"))]
    {
        registers as usize
    }
}

/// Room `catch` keeps for the slot's address below the saved registers
/// (and the FP control words), padded so that the call to `f` is made
/// with a 16-byte-aligned stack.
const CATCH_SLOT_BYTES: usize = if FP_CONTROL_BYTES == 8 { 16 } else { 8 };

/// Saves the FP control words, when there are any (see `FP_CONTROL_BYTES`).
#[cfg(target_feature = "sse")]
macro_rules! catch_save_fp {
    () => {
        "sub rsp, 8\n stmxcsr [rsp]\n fnstcw [rsp + 4]"
    };
}
/// Loads them back (a `throw`: the abandoned code may have changed them).
#[cfg(target_feature = "sse")]
macro_rules! catch_load_fp {
    () => {
        "ldmxcsr [rsp]\n fldcw [rsp + 4]\n add rsp, 8"
    };
}
/// Drops them (a return: the callee kept them, as the ABI asks).
#[cfg(target_feature = "sse")]
macro_rules! catch_drop_fp {
    () => {
        "add rsp, 8"
    };
}
#[cfg(not(target_feature = "sse"))]
macro_rules! catch_save_fp {
    () => {
        ""
    };
}
#[cfg(not(target_feature = "sse"))]
macro_rules! catch_load_fp {
    () => {
        ""
    };
}
#[cfg(not(target_feature = "sse"))]
macro_rules! catch_drop_fp {
    () => {
        ""
    };
}

/// Saves the callee-saved registers and the slot's address on the stack,
/// stores the stack pointer in `*slot`, and calls `f(argument)`. Returns 0
/// when `f` returns (clearing `*slot`), or 1 when `throw` resumed it.
///
/// # Safety
///
/// `slot` is valid for the call; `f` is a plain `extern "C"` function
/// that does not unwind.
#[unsafe(naked)]
pub unsafe extern "sysv64" fn catch(slot: *mut usize, f: extern "C" fn(usize), argument: usize) -> usize {
    naked_asm!(
        push_callee_saved!(),
        catch_save_fp!(),
        "sub rsp, {slot}",
        "mov [rsp], rdi",
        "mov [rdi], rsp",
        "mov rdi, rdx",
        "call rsi",
        "mov rdi, [rsp]",
        "mov qword ptr [rdi], 0",
        "xor eax, eax",
        "add rsp, {slot}",
        catch_drop_fp!(),
        pop_callee_saved_and_return!(),
        slot = const CATCH_SLOT_BYTES,
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
pub unsafe extern "sysv64" fn throw(stack_pointer: usize) -> ! {
    naked_asm!(
        "mov rsp, rdi",
        "mov rdi, [rsp]",
        "mov qword ptr [rdi], 0",
        "mov eax, 1",
        "add rsp, {slot}",
        catch_load_fp!(),
        pop_callee_saved_and_return!(),
        slot = const CATCH_SLOT_BYTES,
    )
}

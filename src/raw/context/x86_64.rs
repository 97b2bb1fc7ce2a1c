//! The x86_64 switch (System V ABI, the same on the host and bare metal).
//!
//! A suspended context's stack holds, from its saved stack pointer up:
//! the address to resume at, rbx and rbp. Everything else the caller keeps
//! is the compiler's to save: the switches are inline assembly that
//! declares every other register clobbered, so only values live at the
//! call site are spilled. rbx and rbp are the exceptions, because LLVM
//! reserves them and an `asm!` block cannot name them as clobbered.
//!
//! Calls and returns stay paired. [`resume`] enters the context with a
//! `call` through its resume address, and [`suspend`] leaves with a `ret`
//! to that call's return address, so the processor's return predictor,
//! which pushed an entry at the `call`, pops the right one at the `ret`.
//! The resume address is reached by an indirect `call` that the branch
//! predictor learns like any other. Into a resume address, rdx holds the
//! context's saved stack pointer, rsi the link (where the resumer's stack
//! pointer goes) and rcx a message for the resumed side.
//!
//! MXCSR and the x87 control word are not saved (see the module above).

use super::Context;
use core::arch::{asm, naked_asm};

/// Saved below the stack top by `prepare`: the resume address (the
/// trampoline), the argument and the entry point.
pub const FRAME_BYTES: usize = 3 * 8;

/// `super::resume` on this instruction set, `to` being the context's
/// saved stack pointer; the context's switch returns the message 0.
///
/// # Safety
///
/// As for `super::resume`.
#[inline(always)]
pub unsafe fn resume(to: usize, link: *mut Context) {
    // SAFETY: the caller's contract. The block restores rsp, rbx and rbp
    // before it ends and declares every other register clobbered; the stack
    // it pushes on is the caller's, below its stack pointer (no `nostack`).
    unsafe {
        asm!(
            "push rbp",
            "push rbx",
            "call qword ptr [rdx]",
            "pop rbx",
            "pop rbp",
            inout("rdx") to => _,
            inout("rsi") link => _,
            inout("rcx") 0usize => _,
            out("r12") _, out("r13") _, out("r14") _, out("r15") _,
            clobber_abi("sysv64"),
        );
    }
}

/// Saves the running context in `$me` (its stack pointer, below the resume
/// address, rbx and rbp), moves to the resumer's stack at `$link`, leaves
/// by `$leave`, and evaluates to the message it is resumed with. Label 2
/// is the resume address: a `resume` or a hand-off arrives there with rdx
/// = the stack pointer stored, rsi = its link and rcx = its message; the
/// block then ends with rsp, rbx and rbp as they were at its start, every
/// other register clobbered. `$to` and `$message` go to the leaving
/// instruction in rdx and rcx.
macro_rules! save_and_leave {
    ($leave:literal, $me:expr, $link:expr, $to:expr, $message:expr) => {{
        let received: usize;
        asm!(
            "push rbp",
            "push rbx",
            "lea r8, [rip + 2f]",
            "push r8",
            "mov [rdi], rsp",
            "mov rsp, [rsi]",
            $leave,
            "2:",
            "mov [rsi], rsp",
            "lea rsp, [rdx + 8]",
            "pop rbx",
            "pop rbp",
            inout("rdi") $me => _,
            inout("rsi") $link => _,
            inout("rdx") $to => _,
            inout("rcx") $message => received,
            out("r12") _, out("r13") _, out("r14") _, out("r15") _,
            clobber_abi("sysv64"),
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
    // back to the resumer's call.
    unsafe { save_and_leave!("ret", me, link, 0usize, 0usize) }
}

/// `super::hand_off` on this instruction set, `to` being the context's
/// saved stack pointer.
///
/// The jump leaves the return predictor one entry off (`me` entered by a
/// call it never returns from), which the next few returns pay for.
///
/// # Safety
///
/// As for `super::hand_off`.
#[inline(always)]
pub unsafe fn hand_off(me: *mut Context, to: usize, link: *mut Context, message: usize) -> usize {
    // SAFETY: the caller's contract; see `save_and_leave`. From the
    // resumer's stack, the jump enters `to` as `resume` would have, with
    // the same registers.
    unsafe { save_and_leave!("jmp qword ptr [rdx]", me, link, to, message) }
}

/// The resume address of a new context: does what label 2 of `suspend`
/// does, then calls the entry point (popped into rax) with the argument
/// (popped into rdi), with a 16-byte-aligned stack and rbp 0, the end of
/// the frame chain.
#[unsafe(naked)]
unsafe extern "sysv64" fn trampoline() -> ! {
    naked_asm!(
        // For unwinders (a debugger's, the backtrace's): nothing called
        // this; a strand's stack ends here.
        ".cfi_startproc",
        ".cfi_undefined rip",
        "mov [rsi], rsp",
        "lea rsp, [rdx + 8]",
        "pop rdi",
        "pop rax",
        "xor ebp, ebp",
        "call rax",
        "ud2",
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
    let resume_at = trampoline as *const () as usize as u64;
    let frame = [resume_at, argument as u64, entry as usize as u64];
    let saved = (top - FRAME_BYTES) as *mut u64;
    // SAFETY: below the caller's stack top, inside the region it promised.
    unsafe { saved.copy_from_nonoverlapping(frame.as_ptr(), frame.len()) };
    saved as usize
}

/// Pushes the general registers a callee must preserve (for `catch`).
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

/// MXCSR (4 bytes) and the x87 control word (2), in one 8-byte slot of
/// `catch`'s frame. Only when the target uses hardware floating point:
/// `x86_64-unknown-none` is soft-float, and there the instructions could
/// fault before the kernel enables SSE.
#[cfg(target_feature = "sse")]
const FP_CONTROL_BYTES: usize = 8;
#[cfg(not(target_feature = "sse"))]
const FP_CONTROL_BYTES: usize = 0;

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

//! The preemption entry on AArch64 (`crate::preempt`): the code an
//! interrupted strand is sent to, which saves every register on the
//! strand's own stack, yields, and on its return to this code restores them
//! and resumes the interrupted instruction.
//!
//! # What the injecting platform sets up
//!
//! The IRQ handler, running on its own stack at EL1, rewrites the state
//! its `eret` returns to: `ELR_EL1` is [`ENTRY`], `SPSR_EL1` is the
//! interrupted one with IRQs masked, and the strand's stack pointer
//! (`SP_EL0`) is 16 bytes lower, where it wrote two words: the interrupted
//! `ELR_EL1` (the instruction to resume) and `SPSR_EL1` (its flags,
//! interrupt mask and stack selection). Every other register keeps its
//! interrupted value. (The strand's stack below its stack pointer is free:
//! AArch64 code keeps no red zone.)
//!
//! # What the entry does
//!
//! It saves x0-x30, FPCR, FPSR and all 32 vector registers whole (a
//! callee keeps only the low halves of v8-v15), unmasks IRQs and calls
//! `preempt::preempted`. When that returns, the strand is running again,
//! on this core or another: it masks IRQs, restores everything, loads the
//! two words into `ELR_EL1` and `SPSR_EL1` and `eret`s, which resumes the
//! interrupted instruction with its flags and mask in one step. (Nothing
//! can take an exception between those loads and the `eret`: IRQs are
//! masked and the code touches only its own stack.)

use core::arch::global_asm;

unsafe extern "C" {
    /// The entry (module docs). Never called as a function: a handler makes
    /// the interrupted strand return into it.
    #[link_name = "roving_preempt_entry"]
    pub(crate) fn ENTRY();
}

/// Bytes the entry saves: x0-x30 and a pad word, FPCR and FPSR, q0-q31.
const SAVE_BYTES: usize = 32 * 8 + 16 + 32 * 16;
const _: () = assert!(SAVE_BYTES.is_multiple_of(16));

global_asm!(
    ".pushsection .text.roving_preempt_entry, \"ax\"",
    ".balign 16",
    ".global roving_preempt_entry",
    "roving_preempt_entry:",
    // For unwinders: the caller of this frame is the interrupted code,
    // at the saved ELR_EL1 (a return column of its own, DWARF's PC, 32,
    // since x30 is the interrupted code's), with the stack pointer it had.
    ".cfi_startproc",
    ".cfi_signal_frame",
    ".cfi_return_column 32",
    ".cfi_def_cfa sp, 16",
    ".cfi_offset 32, -16",
    "sub sp, sp, #{save}",
    ".cfi_def_cfa_offset {save} + 16",
    ".cfi_offset x19, 152 - ({save} + 16)",
    ".cfi_offset x29, 232 - ({save} + 16)",
    ".cfi_offset x30, 240 - ({save} + 16)",
    "stp x0, x1, [sp, #0]",
    "stp x2, x3, [sp, #16]",
    "stp x4, x5, [sp, #32]",
    "stp x6, x7, [sp, #48]",
    "stp x8, x9, [sp, #64]",
    "stp x10, x11, [sp, #80]",
    "stp x12, x13, [sp, #96]",
    "stp x14, x15, [sp, #112]",
    "stp x16, x17, [sp, #128]",
    "stp x18, x19, [sp, #144]",
    "stp x20, x21, [sp, #160]",
    "stp x22, x23, [sp, #176]",
    "stp x24, x25, [sp, #192]",
    "stp x26, x27, [sp, #208]",
    "stp x28, x29, [sp, #224]",
    "str x30, [sp, #240]",
    "mrs x0, fpcr",
    "mrs x1, fpsr",
    "stp x0, x1, [sp, #256]",
    "stp q0, q1, [sp, #272]",
    "stp q2, q3, [sp, #304]",
    "stp q4, q5, [sp, #336]",
    "stp q6, q7, [sp, #368]",
    "stp q8, q9, [sp, #400]",
    "stp q10, q11, [sp, #432]",
    "stp q12, q13, [sp, #464]",
    "stp q14, q15, [sp, #496]",
    "stp q16, q17, [sp, #528]",
    "stp q18, q19, [sp, #560]",
    "stp q20, q21, [sp, #592]",
    "stp q22, q23, [sp, #624]",
    "stp q24, q25, [sp, #656]",
    "stp q26, q27, [sp, #688]",
    "stp q28, q29, [sp, #720]",
    "stp q30, q31, [sp, #752]",
    "msr daifclr, #2",
    "bl {preempted}",
    "msr daifset, #2",
    "ldp q30, q31, [sp, #752]",
    "ldp q28, q29, [sp, #720]",
    "ldp q26, q27, [sp, #688]",
    "ldp q24, q25, [sp, #656]",
    "ldp q22, q23, [sp, #624]",
    "ldp q20, q21, [sp, #592]",
    "ldp q18, q19, [sp, #560]",
    "ldp q16, q17, [sp, #528]",
    "ldp q14, q15, [sp, #496]",
    "ldp q12, q13, [sp, #464]",
    "ldp q10, q11, [sp, #432]",
    "ldp q8, q9, [sp, #400]",
    "ldp q6, q7, [sp, #368]",
    "ldp q4, q5, [sp, #336]",
    "ldp q2, q3, [sp, #304]",
    "ldp q0, q1, [sp, #272]",
    "ldp x0, x1, [sp, #256]",
    "msr fpcr, x0",
    "msr fpsr, x1",
    "ldr x30, [sp, #240]",
    "ldp x28, x29, [sp, #224]",
    "ldp x26, x27, [sp, #208]",
    "ldp x24, x25, [sp, #192]",
    "ldp x22, x23, [sp, #176]",
    "ldp x20, x21, [sp, #160]",
    "ldp x18, x19, [sp, #144]",
    "ldp x16, x17, [sp, #128]",
    "ldp x14, x15, [sp, #112]",
    "ldp x12, x13, [sp, #96]",
    "ldp x10, x11, [sp, #80]",
    "ldp x8, x9, [sp, #64]",
    "ldp x6, x7, [sp, #48]",
    "ldp x4, x5, [sp, #32]",
    "ldp x2, x3, [sp, #16]",
    // The two words the handler left above the save area.
    "ldr x0, [sp, #{save}]",
    "ldr x1, [sp, #{save} + 8]",
    "msr elr_el1, x0",
    "msr spsr_el1, x1",
    "ldp x0, x1, [sp, #0]",
    "add sp, sp, #{save} + 16",
    "eret",
    ".cfi_endproc",
    ".popsection",
    save = const SAVE_BYTES,
    preempted = sym super::preempted,
);

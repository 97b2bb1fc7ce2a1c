//! The preemption entry on x86_64 (`crate::preempt`): the code an
//! interrupted strand is sent to, which saves every register on the
//! strand's own stack, yields, and on its return to this code restores them
//! and resumes the interrupted instruction.
//!
//! # What the injecting platform sets up
//!
//! The interrupt (or host signal) handler rewrites the state it returns
//! to: `rip` is [`ENTRY`], `rsp` points at an interrupt-return frame of
//! the interrupted code, five words `rip, cs, rflags, rsp, ss`, 16-byte
//! aligned, written below the interrupted `rsp` (below its red zone on the
//! host), and `rflags` has interrupts disabled (on the host, where the
//! handler cannot mask, a tick that lands meanwhile finds the strand
//! deferring and leaves it). Every other register keeps its interrupted
//! value.
//!
//! # What the entry does
//!
//! It pushes the fifteen general registers, saves the vector and x87 state
//! with `xsave` (every component the OS enabled, on the host) or `fxsave`
//! (bare metal: the SSE state at most) in a 64-byte aligned area below
//! them, clears the direction flag the calling convention wants clear,
//! enables interrupts and calls `preempt::preempted`. When that returns,
//! the strand is running again, on this core or another: it disables
//! interrupts, restores the area and the registers, and `iretq` reloads
//! `rip`, `rsp` and `rflags` (interrupts enabled again, the interrupted
//! flags exact) in one step, so no register is needed as scratch.

use core::arch::global_asm;
#[cfg(feature = "std")]
use core::sync::atomic::Ordering::Relaxed;
use core::sync::atomic::{AtomicBool, AtomicUsize};

/// Bytes of the save area: 512 for `fxsave`, or what `xsave` needs for the
/// components the OS enabled (CPUID leaf 0xD). Read by the entry.
static SAVE_BYTES: AtomicUsize = AtomicUsize::new(512);

/// Whether the entry uses `xsave`/`xrstor` rather than `fxsave`/`fxrstor`.
static USE_XSAVE: AtomicBool = AtomicBool::new(false);

/// Chooses `xsave` and its area size if the OS has enabled it (the host);
/// otherwise the entry keeps `fxsave`. Called once before the first
/// preemption.
#[cfg(feature = "std")]
pub(crate) fn detect_save_area() {
    // SAFETY: CPUID leaf 1 exists on every x86_64 processor.
    let features = core::arch::x86_64::__cpuid(1);
    let os_xsave = features.ecx & (1 << 27) != 0;
    if !os_xsave {
        return;
    }
    // SAFETY: leaf 0xD exists when OSXSAVE is set; sub-leaf 0's EBX is the
    // size of the area for the components XCR0 enables now.
    let size = core::arch::x86_64::__cpuid_count(0xd, 0).ebx as usize;
    SAVE_BYTES.store(size.max(576), Relaxed);
    USE_XSAVE.store(true, Relaxed);
}

unsafe extern "C" {
    /// The entry (module docs). Never called as a function: a handler makes
    /// the interrupted strand return into it.
    #[link_name = "roving_preempt_entry"]
    pub(crate) fn ENTRY();
}

macro_rules! entry {
    ($enable:literal, $disable:literal) => {
        global_asm!(
    ".pushsection .text.roving_preempt_entry, \"ax\"",
    ".balign 16",
    ".global roving_preempt_entry",
    "roving_preempt_entry:",
    "push rax",
    "push rbx",
    "push rcx",
    "push rdx",
    "push rsi",
    "push rdi",
    "push rbp",
    "push r8",
    "push r9",
    "push r10",
    "push r11",
    "push r12",
    "push r13",
    "push r14",
    "push r15",
    "mov rbp, rsp",
    // For unwinders, from here to the end: the caller of this frame is the
    // interrupted code, at the interrupt frame's rip, with its rsp (both
    // above the fifteen registers rbp points at), and its rbp and rbx as
    // pushed. DWARF expressions on rbp, as raw bytes:
    ".cfi_startproc simple",
    ".cfi_signal_frame",
    // DW_CFA_def_cfa_expression: *(rbp + 144), the interrupted rsp.
    ".cfi_escape 0x0f, 4, 0x76, 0x90, 0x01, 0x06",
    // DW_CFA_expression: rip (16) at rbp + 120, rbp (6) at rbp + 64,
    // rbx (3) at rbp + 104.
    ".cfi_escape 0x10, 16, 3, 0x76, 0xf8, 0x00",
    ".cfi_escape 0x10, 6, 3, 0x76, 0xc0, 0x00",
    ".cfi_escape 0x10, 3, 3, 0x76, 0xe8, 0x00",
    "sub rsp, qword ptr [rip + {save_bytes}]",
    "and rsp, -64",
    "cld",
    "cmp byte ptr [rip + {use_xsave}], 0",
    "je 2f",
    // The xsave header must be zero where xsave does not write it.
    "xor eax, eax",
    "mov qword ptr [rsp + 512], rax",
    "mov qword ptr [rsp + 520], rax",
    "mov qword ptr [rsp + 528], rax",
    "mov qword ptr [rsp + 536], rax",
    "mov qword ptr [rsp + 544], rax",
    "mov qword ptr [rsp + 552], rax",
    "mov qword ptr [rsp + 560], rax",
    "mov qword ptr [rsp + 568], rax",
    "mov eax, -1",
    "mov edx, -1",
    "xsave64 [rsp]",
    "jmp 3f",
    "2:",
    "fxsave64 [rsp]",
    "3:",
    $enable,
    "call {preempted}",
    $disable,
    "cmp byte ptr [rip + {use_xsave}], 0",
    "je 4f",
    "mov eax, -1",
    "mov edx, -1",
    "xrstor64 [rsp]",
    "jmp 5f",
    "4:",
    "fxrstor64 [rsp]",
    "5:",
    "mov rsp, rbp",
    "pop r15",
    "pop r14",
    "pop r13",
    "pop r12",
    "pop r11",
    "pop r10",
    "pop r9",
    "pop r8",
    "pop rbp",
    "pop rdi",
    "pop rsi",
    "pop rdx",
    "pop rcx",
    "pop rbx",
    "pop rax",
    "iretq",
    ".cfi_endproc",
    ".popsection",
    preempted = sym super::preempted,
    save_bytes = sym SAVE_BYTES,
    use_xsave = sym USE_XSAVE,
        );
    };
}

// Bare metal: interrupts are off from the injection until the registers
// are saved, and again from the return until `iretq`.
#[cfg(not(feature = "std"))]
entry!("sti", "cli");
// The host cannot mask its signal from user code without a system call; a
// tick that lands in the entry finds the strand deferring (module docs).
#[cfg(feature = "std")]
entry!("", "");

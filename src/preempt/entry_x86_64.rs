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
//!
//! # Lazy vector state (bare metal)
//!
//! A bare-metal kernel built for `x86_64-unknown-none` is soft-float: only
//! a strand's own assembly touches the SSE and x87 registers, and most
//! strands never do. With [`use_lazy_vector_state`], the entry saves and
//! restores them only for a strand that may have used them since it last
//! resumed, using the flag the architecture offers for this, CR0.TS:
//!
//! - **Invariant:** while a core's TS is set, its vector registers hold
//!   no state that any strand still needs.
//! - **Entry:** TS set means the strand has not touched the registers since
//!   they last held nothing needed: nothing to save. TS clear means they
//!   may hold its state: `fxsave` it, then set TS (its state is now on its
//!   stack, so the invariant holds). A byte of the area records which.
//! - **Return:** if the area holds saved state, clear TS (`fxrstor` would
//!   trap otherwise) and restore it. If not, leave TS as it is: the strand
//!   needs nothing from the registers, and a clear TS only makes its next
//!   preemption save what it need not.
//! - **First use:** an SSE or x87 instruction under TS raises #NM; the
//!   platform's handler clears TS and returns to it. From then until its
//!   next preemption the strand's state lives in the registers, with TS
//!   clear.
//!
//! A restored strand runs with TS clear, so it is saved at each later
//! preemption: a strand that has used the registers once pays the save
//! from then on, whether it touches them again or not. Knowing better
//! would take a per-core record of whose state the registers hold, and
//! the #NM handler saving it there, into a stack that copy-swap may have
//! moved away; roving keeps no pointer into a strand's stack.
//!
//! Nothing else in roving sets TS, so a cooperative switch costs nothing:
//! the calling convention keeps no vector register across the switch's
//! call, and a strand resumed there runs under whatever TS the core has.
//! The decision travels with the strand's stack, so a strand saved on one
//! core is restored on another.

use core::arch::global_asm;
use core::sync::atomic::Ordering::Relaxed;
use core::sync::atomic::{AtomicBool, AtomicUsize};

/// Bytes of the save area: 512 for `fxsave`, or what `xsave` needs for the
/// components the OS enabled (CPUID leaf 0xD). Read by the entry.
static SAVE_BYTES: AtomicUsize = AtomicUsize::new(512);

/// Whether the entry uses `xsave`/`xrstor` rather than `fxsave`/`fxrstor`.
#[cfg(feature = "std")]
static USE_XSAVE: AtomicBool = AtomicBool::new(false);

/// Whether the bare-metal entry keeps lazy vector state (module docs).
#[cfg(not(feature = "std"))]
static LAZY_VECTOR_STATE: AtomicBool = AtomicBool::new(false);

/// CR0.TS, "task switched": while it is set, the first SSE or x87
/// instruction raises the device-not-available exception (#NM, vector 7).
#[cfg(not(feature = "std"))]
const CR0_TS: u64 = 1 << 3;

/// Where in the `fxsave` area the entry records whether it saved the
/// vector state: the first of the bytes 464..512 that `fxsave` and
/// `fxrstor` leave to software.
#[cfg(not(feature = "std"))]
const SAVED_FLAG_OFFSET: usize = 464;

/// Turns on lazy vector state for every later preemption (module docs).
///
/// # Safety
///
/// On every core, from now on, the device-not-available exception (#NM,
/// vector 7) must be handled by clearing CR0.TS (`clts`) and returning to
/// the faulting instruction, and nothing else may set CR0.TS but a core's
/// own start-up, before it runs a strand. (A core should set it there:
/// on a core that starts with TS clear, the first preemption saves, its
/// restore leaves TS clear, and every later one saves too, as without
/// lazy vector state.)
#[cfg(not(feature = "std"))]
pub unsafe fn use_lazy_vector_state() {
    LAZY_VECTOR_STATE.store(true, Relaxed);
}

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
    /// Just past the entry's last instruction.
    #[cfg(feature = "std")]
    #[link_name = "roving_preempt_entry_end"]
    pub(crate) fn ENTRY_END();
}

/// Whether `pc` is in the entry's own code. On the host, whose entry
/// cannot mask the tick's signal, a tick there is put off: from the
/// preempted strand's deferral ending to the entry's return, a tick would
/// otherwise preempt the strand again on top of the entry's frame.
#[cfg(feature = "std")]
pub(crate) fn contains(pc: usize) -> bool {
    (ENTRY as *const () as usize..ENTRY_END as *const () as usize).contains(&pc)
}

macro_rules! entry {
    (
        enable: $enable:literal,
        disable: $disable:literal,
        save: [$($save:literal),* $(,)?],
        restore: [$($restore:literal),* $(,)?],
        $($operands:tt)*
    ) => {
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
    $($save,)*
    $enable,
    "call {preempted}",
    $disable,
    $($restore,)*
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
    ".global roving_preempt_entry_end",
    "roving_preempt_entry_end:",
    ".cfi_endproc",
    ".popsection",
    preempted = sym super::preempted,
    save_bytes = sym SAVE_BYTES,
    $($operands)*
        );
    };
}

// Bare metal: interrupts are off from the injection until the registers
// are saved, and again from the return until `iretq`. The vector state is
// saved with `fxsave`, or with lazy vector state only if it may be live
// (module docs): CR0.TS clear. Byte 464 of the area, which `fxsave` leaves
// to software, records whether it was saved; TS is cleared before a
// restore in either mode (with it set, `fxrstor` would trap).
#[cfg(not(feature = "std"))]
entry!(
    enable: "sti",
    disable: "cli",
    save: [
        "cmp byte ptr [rip + {lazy}], 0",
        "je 2f",
        "mov rax, cr0",
        "test al, {ts}",
        "setz byte ptr [rsp + {saved_flag}]",
        "jnz 3f",
        "fxsave64 [rsp]",
        "or rax, {ts}",
        "mov cr0, rax",
        "jmp 3f",
        "2:",
        "fxsave64 [rsp]",
        "mov byte ptr [rsp + {saved_flag}], 1",
        "3:",
    ],
    restore: [
        "cmp byte ptr [rsp + {saved_flag}], 0",
        "je 4f",
        "clts",
        "fxrstor64 [rsp]",
        "4:",
    ],
    lazy = sym LAZY_VECTOR_STATE,
    ts = const CR0_TS,
    saved_flag = const SAVED_FLAG_OFFSET,
);
// The host cannot mask its signal from user code without a system call; a
// tick that lands in the entry finds the strand deferring (module docs).
// `xsave` saves every component the OS enabled.
#[cfg(feature = "std")]
entry!(
    enable: "",
    disable: "",
    save: [
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
    ],
    restore: [
        "cmp byte ptr [rip + {use_xsave}], 0",
        "je 4f",
        "mov eax, -1",
        "mov edx, -1",
        "xrstor64 [rsp]",
        "jmp 5f",
        "4:",
        "fxrstor64 [rsp]",
        "5:",
    ],
    use_xsave = sym USE_XSAVE,
);

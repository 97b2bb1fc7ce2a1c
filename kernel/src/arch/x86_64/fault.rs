//! The fault report: which core, what went wrong in words, and the
//! registers that say where.

use super::frame::Frame;
use crate::backtrace::{Backtrace, Registers};
use crate::fault::{Core, Overflow};
use crate::{cores, exit_code, logger};
use x86_64::registers::control::Cr2;

/// Prints the report for an exception and ends the run with
/// [`exit_code::FAULT`].
pub(super) fn report_and_exit(frame: &Frame) -> ! {
    let core = cores::current().map(|c| c.index);
    let vector = frame.vector;
    let cr2 = Cr2::read_raw();
    let page_fault = (vector == PAGE_FAULT).then_some(PageFault(frame.error_code));
    let overflow = if vector == PAGE_FAULT { roving::platform::hooks::guard_hit(cr2 as usize) } else { None };
    logger::emergency(format_args!(
        "*** FAULT on core {}: {} (vector {vector}, error code {:#x}){}\n    RIP {:#018x}  RSP {:#018x}  RFLAGS {:#010x}\n    RAX {:#018x}  RBX {:#018x}  RBP {:#018x}{}{}",
        Core(core),
        name(vector),
        frame.error_code,
        PageFaultLines(page_fault, cr2),
        frame.rip,
        frame.rsp,
        frame.rflags,
        frame.rax,
        frame.rbx,
        frame.rbp,
        Overflow(overflow),
        Backtrace::of(Registers {
            pc: frame.rip as usize,
            sp: frame.rsp as usize,
            fp: frame.rbp as usize,
            lr: None
        }),
    ));
    crate::exit(exit_code::FAULT)
}

const PAGE_FAULT: u64 = 14;

/// A fault taken from ring 0 that can fail only the strand or task that
/// took it (`crate::fault`): a page fault (not in a fibre's guard page: an
/// overflow's stack is no place to go on), a general protection fault,
/// an invalid opcode or a divide error, on a stack the kernel knows.
/// Words it, and points the exception's return into
/// `roving_fault_trampoline`, with the faulting instruction's address
/// pushed below the faulting code's stack pointer as its return address,
/// as if that instruction had called it (so a backtrace names it).
/// Returns false, having changed nothing, for any other exception.
pub(super) fn contain(frame: &mut Frame) -> bool {
    let vector = frame.vector;
    if !matches!(vector, 0 | 6 | 13 | PAGE_FAULT) || frame.cs & 3 != 0 {
        return false;
    }
    let cr2 = Cr2::read_raw();
    if vector == PAGE_FAULT && roving::platform::hooks::guard_hit(cr2 as usize).is_some() {
        return false;
    }
    // The return address goes just below the stack pointer (kernel code
    // keeps no red zone); a stack pointer the kernel does not know could
    // fault again here, on this vector's own stack.
    let Some(below) = (frame.rsp as usize).checked_sub(8) else { return false };
    if !crate::backtrace::stack_around(frame.rsp as usize).is_some_and(|stack| stack.contains(&below)) {
        return false;
    }
    let Some(core) = cores::current() else { return false };
    if !crate::fault::can_fail_alone(core, frame.rsp as usize) {
        return false;
    }
    let page_fault = (vector == PAGE_FAULT).then_some(PageFault(frame.error_code));
    let registers =
        Registers { pc: frame.rip as usize, sp: frame.rsp as usize, fp: frame.rbp as usize, lr: None };
    let record = crate::fault::record(
        core,
        registers,
        format_args!("{}{} at rip {:#x}", name(vector), PageFaultWords(page_fault, cr2), frame.rip),
    );
    // SAFETY: `below` lies in the faulting code's stack (checked above),
    // under its stack pointer: nothing of that code's is there.
    unsafe { (below as *mut u64).write(frame.rip) };
    frame.rsp = below as u64;
    frame.rdi = record as u64;
    frame.rip = roving_fault_trampoline as *const () as u64;
    true
}

// Entered by the exception's return as if called from the faulting
// instruction (its address on the stack): a frame, then the stack aligned
// for a call, which the faulting code's own pointer need not be.
core::arch::global_asm!(
    ".pushsection .text.roving_fault_trampoline, \"ax\"",
    ".global roving_fault_trampoline",
    ".type roving_fault_trampoline, @function",
    "roving_fault_trampoline:",
    ".cfi_startproc",
    "push rbp",
    ".cfi_def_cfa_offset 16",
    ".cfi_offset rbp, -16",
    "mov rbp, rsp",
    ".cfi_def_cfa_register rbp",
    "and rsp, -16",
    "call {fail}",
    "ud2",
    ".cfi_endproc",
    ".size roving_fault_trampoline, . - roving_fault_trampoline",
    ".popsection",
    fail = sym crate::fault::fail_after_fault,
);

unsafe extern "C" {
    /// The trampoline above; never called, only returned into.
    fn roving_fault_trampoline();
}

/// A page fault's words and address, on the fault's line (nothing for
/// other faults).
struct PageFaultWords(Option<PageFault>, u64);

impl core::fmt::Display for PageFaultWords {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match &self.0 {
            Some(fault) => write!(f, ": {fault}, address {:#x}", self.1),
            None => Ok(()),
        }
    }
}

/// The exception's name (Intel SDM vol. 3, "Exception and Interrupt Reference").
fn name(vector: u64) -> &'static str {
    match vector {
        0 => "divide error",
        1 => "debug exception",
        2 => "non-maskable interrupt",
        3 => "breakpoint",
        4 => "overflow",
        5 => "bound range exceeded",
        6 => "invalid opcode (undefined instruction)",
        7 => "device not available (no FPU state)",
        8 => "double fault",
        10 => "invalid TSS",
        11 => "segment not present",
        12 => "stack-segment fault",
        13 => "general protection fault",
        14 => "page fault",
        16 => "x87 floating-point error",
        17 => "alignment check",
        18 => "machine check",
        19 => "SIMD floating-point exception",
        20 => "virtualization exception",
        21 => "control protection exception",
        _ => "reserved exception",
    }
}

/// A page fault's error code in words.
struct PageFault(u64);

impl core::fmt::Display for PageFault {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let code = self.0;
        let what =
            if code & 1 == 0 { "page not present (address not mapped)" } else { "protection violation" };
        let access = if code & (1 << 4) != 0 {
            "an instruction fetch"
        } else if code & (1 << 1) != 0 {
            "a write"
        } else {
            "a read"
        };
        write!(f, "{what}, on {access}")
    }
}

/// A page fault's lines of the report: what and where (nothing for other
/// faults).
struct PageFaultLines(Option<PageFault>, u64);

impl core::fmt::Display for PageFaultLines {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match &self.0 {
            Some(fault) => write!(f, "\n    {fault}\n    CR2 {:#018x}", self.1),
            None => Ok(()),
        }
    }
}

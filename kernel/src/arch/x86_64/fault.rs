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

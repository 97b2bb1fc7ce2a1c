//! The fault report: which core, what went wrong in words, and the
//! registers that say where.

use super::frame::{FRAME_SIZE, Frame, Vector, origin};
use crate::backtrace::{Backtrace, Registers};
use crate::boot_info::{Unmapped, boot_info};
use crate::fault::{Core, Overflow};
use crate::{cores, exit_code, logger};
use aarch64_cpu::registers::{ESR_EL1, FAR_EL1, Readable, SP_EL0};

/// Prints the report for an exception the kernel does not handle and ends
/// the run with [`exit_code::FAULT`].
pub(super) fn report_and_exit(vector: Vector, kind: u64, frame: &Frame) -> ! {
    let esr = ESR_EL1.get();
    let far = FAR_EL1.get();
    let class = (esr >> 26) & 0x3f;
    let core = cores::current().map(|c| c.index);
    let data_abort = matches!(class, 0x24 | 0x25);
    let overflow = if data_abort { roving::platform::hooks::guard_hit(far as usize) } else { None };
    let unmapped = data_abort.then(|| unmapped_at(far as usize)).flatten();
    logger::emergency(format_args!(
        "*** FAULT on core {}: {} from {}\n    {}{}\n    ESR_EL1 {esr:#018x}  FAR_EL1 {far:#018x}\n    ELR_EL1 {:#018x}  SPSR_EL1 {:#010x}  LR {:#018x}{}{}{}",
        Core(core),
        vector_name(vector),
        origin(kind),
        class_name(class),
        Detail(class, esr),
        frame.elr,
        frame.spsr,
        frame.x30,
        Overflow(overflow),
        NoMap(unmapped),
        Backtrace::of(registers(kind, frame)),
    ));
    crate::exit(exit_code::FAULT)
}

/// A synchronous fault taken from kernel code (`kind` 0, on SP_EL0, or 4,
/// a handler on SP_EL1) that can fail only the strand, task or device
/// handler that took it (`crate::fault`): an abort at this
/// level (not in a fibre's guard page: an overflow's stack is no place to
/// go on), an undefined instruction or a misaligned PC. Words it, and
/// points the exception's return into `crate::fault::fail_after_fault`
/// with the link register at the faulting instruction, as if it had
/// called that function there (so a backtrace names it). Returns false,
/// having changed nothing, for any other exception.
pub(super) fn contain(kind: u64, frame: &mut Frame) -> bool {
    let esr = ESR_EL1.get();
    let far = FAR_EL1.get();
    let class = (esr >> 26) & 0x3f;
    if !matches!(class, 0x00 | 0x21 | 0x22 | 0x25) {
        return false;
    }
    if class == 0x25 && roving::platform::hooks::guard_hit(far as usize).is_some() {
        return false;
    }
    let Some(core) = cores::current() else { return false };
    let faulting = registers(kind, frame);
    if !crate::fault::can_fail_alone(core, faulting.sp) {
        return false;
    }
    let address = matches!(class, 0x21 | 0x25).then_some(far);
    let record = crate::fault::record(
        core,
        faulting,
        format_args!("{}{} at pc {:#x}{}", class_name(class), Detail(class, esr), frame.elr, At(address)),
    );
    frame.x[0] = record as u64;
    frame.x30 = frame.elr;
    frame.elr = crate::fault::fail_after_fault as *const () as u64;
    true
}

/// The faulting address of an abort, in words (nothing for other faults).
struct At(Option<u64>);

impl core::fmt::Display for At {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.0 {
            Some(address) => write!(f, ", address {address:#x}"),
            None => Ok(()),
        }
    }
}

/// The `no-map` reservation `address` lies in, if any.
fn unmapped_at(address: usize) -> Option<&'static Unmapped> {
    boot_info()
        .unmapped
        .iter()
        .find(|unmapped| (unmapped.region.base..unmapped.region.end()).contains(&address))
}

/// The report's line for an access to a `no-map` reservation.
struct NoMap(Option<&'static Unmapped>);

impl core::fmt::Display for NoMap {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let Some(unmapped) = self.0 else { return Ok(()) };
        write!(
            f,
            "\n    the address is in /reserved-memory/{} ({:#x}..{:#x}), which the firmware's tree marks no-map: \
             the kernel leaves it out of its page tables",
            unmapped.node,
            unmapped.region.base,
            unmapped.region.end()
        )
    }
}

/// The registers the faulting code had. Its stack pointer: SP_EL0 (where
/// the kernel and strands run) unless the exception came from a handler,
/// on SP_EL1, whose stack the vectors' frame was pushed onto.
fn registers(kind: u64, frame: &Frame) -> Registers {
    let sp = if kind / 4 == 1 { frame as *const Frame as usize + FRAME_SIZE } else { SP_EL0.get() as usize };
    Registers { pc: frame.elr as usize, sp, fp: frame.x29 as usize, lr: Some(frame.x30 as usize) }
}

fn vector_name(vector: Vector) -> &'static str {
    match vector {
        Vector::Synchronous => "synchronous exception",
        Vector::Irq => "unexpected IRQ",
        Vector::Fiq => "unexpected FIQ",
        Vector::SError => "SError (asynchronous abort)",
    }
}

/// ESR_EL1.EC in words (Arm ARM, "ESR_ELx, Exception Syndrome Register").
fn class_name(class: u64) -> &'static str {
    match class {
        0x00 => "unknown reason (undefined instruction?)",
        0x01 => "trapped WFI or WFE",
        0x07 => "access to SIMD or floating point trapped",
        0x0e => "illegal execution state",
        0x11 | 0x15 => "SVC instruction",
        0x16 => "HVC instruction",
        0x17 => "SMC instruction",
        0x18 => "trapped system register access",
        0x20 => "instruction abort from a lower exception level",
        0x21 => "instruction abort at the current exception level",
        0x22 => "PC alignment fault",
        0x24 => "data abort from a lower exception level",
        0x25 => "data abort at the current exception level",
        0x26 => "SP alignment fault",
        0x28 | 0x2c => "trapped floating-point exception",
        0x2f => "SError interrupt",
        0x30 | 0x31 => "breakpoint",
        0x32 | 0x33 => "software step",
        0x34 | 0x35 => "watchpoint",
        0x38 => "BKPT instruction",
        0x3c => "BRK instruction",
        _ => "reserved or unrecognised exception class",
    }
}

/// For aborts, the fault status code and direction in words.
struct Detail(u64, u64);

impl core::fmt::Display for Detail {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let (class, esr) = (self.0, self.1);
        let is_abort = matches!(class, 0x20 | 0x21 | 0x24 | 0x25);
        if !is_abort {
            return write!(f, " (EC {class:#04x})");
        }
        let status = esr & 0x3f;
        write!(f, ": {}", status_name(status))?;
        if let Some(level) = status_level(status) {
            write!(f, " at level {level}")?;
        }
        if matches!(class, 0x24 | 0x25) {
            let write = (esr >> 6) & 1 == 1; // ISS.WnR
            write!(f, ", on a {}", if write { "write" } else { "read" })?;
        }
        write!(f, " (EC {class:#04x}, FSC {status:#04x})")
    }
}

/// Data or instruction fault status code in words.
fn status_name(status: u64) -> &'static str {
    match status {
        0x00..=0x03 => "address size fault",
        0x04..=0x07 => "translation fault (address not mapped)",
        0x09..=0x0b => "access flag fault",
        0x0d..=0x0f => "permission fault",
        0x10 => "synchronous external abort",
        0x11 => "synchronous tag check fault",
        0x14..=0x17 => "synchronous external abort on a table walk",
        0x18 => "synchronous parity or ECC error",
        0x21 => "alignment fault",
        0x30 => "TLB conflict abort",
        0x31 => "unsupported atomic hardware update fault",
        0x34 => "implementation defined fault (lockdown)",
        0x35 => "implementation defined fault (unsupported exclusive or atomic access)",
        _ => "unrecognised fault status",
    }
}

fn status_level(status: u64) -> Option<u64> {
    matches!(status, 0x00..=0x0f | 0x14..=0x17).then_some(status & 0x3)
}

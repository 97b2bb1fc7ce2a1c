//! The I/O APICs: the PC's device lines.
//!
//! A device line is a global system interrupt (GSI): input `n` of the
//! I/O APIC whose first line is `b` is line `b + n`. Each line has one
//! redirection entry, which names its vector, its polarity and trigger,
//! the core it goes to (by APIC id) and whether it is masked. Line `l`
//! always uses vector [`DEVICE_VECTOR_BASE`]` + l`, so the vector the
//! core takes names the line without a lookup.
//!
//! ISA devices (the PIT, the keyboard, COM1) are named by their ISA IRQ;
//! the MADT's interrupt source overrides say which line each really uses
//! and how it is signalled (QEMU's q35 puts the PIT's IRQ 0 on line 2).
//! A line no override names is edge-triggered and active high if it is
//! below 16 (ISA), else level-triggered and active low (PCI).
//!
//! The registers are reached through an index and a data window, two
//! accesses that must not be split: every access holds one lock, with
//! interrupts masked (`masking::locked`: a handler may mask a line too).

use super::apic;
use crate::boot_info::boot_info;
use crate::masking;
use crate::mmio::Registers;
use core::ops::Range;
use core::sync::atomic::{AtomicU32, Ordering::Relaxed};
use spin::Mutex;

/// The vector of line 0; line `l` uses `DEVICE_VECTOR_BASE + l`. Below it
/// are the exceptions and the legacy PICs' (masked) vectors.
pub(super) const DEVICE_VECTOR_BASE: u8 = 0x30;
/// The first vector the kernel keeps for itself (the timer, then the
/// wake-up and the spurious vector).
const KERNEL_VECTORS: u8 = apic::TIMER_VECTOR;
/// Lines beyond this have no vector.
const MAX_LINES: u32 = (KERNEL_VECTORS - DEVICE_VECTOR_BASE) as u32;

const IOREGSEL: usize = 0x00;
const IOWIN: usize = 0x10;
const VERSION: u32 = 0x01;
const REDIRECTION: u32 = 0x10;

const MASKED: u32 = 1 << 16;
const LEVEL: u32 = 1 << 15;
const ACTIVE_LOW: u32 = 1 << 13;

/// MPS INTI flags (the MADT's override flags).
const POLARITY_MASK: u16 = 0b11;
const POLARITY_LOW: u16 = 0b11;
const TRIGGER_MASK: u16 = 0b1100;
const TRIGGER_LEVEL: u16 = 0b1100;

static REGISTERS: Mutex<()> = Mutex::new(());
/// How many lines the I/O APICs have together (0: none found).
static LINES: AtomicU32 = AtomicU32::new(0);
/// Each I/O APIC's number of inputs, by its place in the boot facts.
static INPUTS: [AtomicU32; 4] = [const { AtomicU32::new(0) }; 4];

/// The index and data registers of the I/O APIC at `base`.
fn window(base: usize) -> Registers {
    // SAFETY: an I/O APIC's index and data registers (from the MADT,
    // mapped uncached with the APICs).
    unsafe { Registers::at(base) }
}

/// Reads `register` through the window; the caller holds `REGISTERS`.
fn read(base: usize, register: u32) -> u32 {
    window(base).write32(IOREGSEL, register);
    window(base).read32(IOWIN)
}

/// Writes `register` through the window; the caller holds `REGISTERS`.
fn write(base: usize, register: u32, value: u32) {
    window(base).write32(IOREGSEL, register);
    window(base).write32(IOWIN, value);
}

/// The I/O APIC carrying `line`, and the line's input on it.
fn input_of(line: u32) -> Option<(usize, u32)> {
    boot_info().arch.io_apics.iter().zip(&INPUTS).find_map(|(io, inputs)| {
        let input = line.checked_sub(io.first_line)?;
        (input < inputs.load(Relaxed)).then_some((io.address, input))
    })
}

/// Masks every input of every I/O APIC and counts the lines. Boot core,
/// once.
pub(super) fn init() {
    let mut lines = 0;
    masking::locked(&REGISTERS, |()| {
        for (io, count) in boot_info().arch.io_apics.iter().zip(&INPUTS) {
            let inputs = (read(io.address, VERSION) >> 16 & 0xff) + 1;
            count.store(inputs, Relaxed);
            for input in 0..inputs {
                write(io.address, REDIRECTION + 2 * input, MASKED);
            }
            lines = lines.max(io.first_line + inputs);
        }
    });
    LINES.store(lines.min(MAX_LINES), Relaxed);
}

/// The lines that can be bound, if there is an I/O APIC.
pub(super) fn lines() -> Option<Range<u32>> {
    let lines = LINES.load(Relaxed);
    (lines > 0).then_some(0..lines)
}

/// The line ISA IRQ `irq` arrives on.
pub(super) fn isa_line(irq: u8) -> u32 {
    let over = boot_info().arch.overrides.iter().find(|over| over.isa_irq == irq);
    over.map_or(u32::from(irq), |over| over.line)
}

/// The polarity and trigger bits of `line`'s redirection entry.
fn signalling(line: u32) -> u32 {
    let Some(over) = boot_info().arch.overrides.iter().find(|over| over.line == line) else {
        return if line < 16 { 0 } else { LEVEL | ACTIVE_LOW };
    };
    // "Conforms to the bus" (0) means ISA's: active high, edge.
    let low = over.flags & POLARITY_MASK == POLARITY_LOW;
    let level = over.flags & TRIGGER_MASK == TRIGGER_LEVEL;
    (u32::from(low) * ACTIVE_LOW) | (u32::from(level) * LEVEL)
}

/// The vector `line` arrives with.
pub(super) fn vector(line: u32) -> u8 {
    DEVICE_VECTOR_BASE + line as u8
}

/// The line a device vector names, if it is one.
pub(super) fn line_of_vector(vector: u8) -> Option<u32> {
    let line = u32::from(vector.checked_sub(DEVICE_VECTOR_BASE)?);
    (line < LINES.load(Relaxed)).then_some(line)
}

/// Points `line` at the core with APIC id `apic_id` (at most
/// `apic::MAX_XAPIC_ID`: an entry names it in 8 bits), keeping it masked or not as it was.
pub(super) fn route(line: u32, apic_id: u64) {
    let Some((base, input)) = input_of(line) else { return };
    let low = u32::from(vector(line)) | signalling(line);
    masking::locked(&REGISTERS, |()| {
        let masked = read(base, REDIRECTION + 2 * input) & MASKED;
        write(base, REDIRECTION + 2 * input, low | MASKED);
        write(base, REDIRECTION + 2 * input + 1, (apic_id as u32) << 24);
        write(base, REDIRECTION + 2 * input, low | masked);
    });
}

/// Masks (`true`) or unmasks `line`.
pub(super) fn set_masked(line: u32, masked: bool) {
    let Some((base, input)) = input_of(line) else { return };
    masking::locked(&REGISTERS, |()| {
        let entry = read(base, REDIRECTION + 2 * input);
        write(base, REDIRECTION + 2 * input, if masked { entry | MASKED } else { entry & !MASKED });
    });
}

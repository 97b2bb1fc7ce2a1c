//! The local APIC: the wake-up IPI, the STARTUP sequence, and each core's
//! one-shot timer.
//!
//! Two modes. xAPIC: memory-mapped registers and 8-bit APIC ids. x2APIC
//! (CPUID.1:ECX bit 21): the registers are MSRs, an IPI is one write with
//! a 32-bit destination, and ids past 254 work. The kernel uses x2APIC
//! where the processor has it and it is needed: the firmware left it on,
//! a core's id is past 254, or the command line says `roving.apic=x2apic`.
//! Otherwise xAPIC, which QEMU's deterministic `-icount` mode also runs
//! (it stops, "Bad icount read", at an x2APIC timer read). The mode is
//! chosen once, on the boot core, before any core uses its APIC; every
//! core then enters the same one.
//!
//! Only three vectors exist for the kernel: [`WAKE_VECTOR`], sent by a core
//! that rings a deep-sleeping core's doorbell; [`TIMER_VECTOR`], this
//! core's deadline; and [`SPURIOUS_VECTOR`], which needs no EOI.

use crate::mmio::Registers;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use x86_64::registers::model_specific::Msr;

/// The IPI that ends a core's deep (HLT) sleep.
pub(super) const WAKE_VECTOR: u8 = 0xF0;
/// This core's timer deadline.
pub(super) const TIMER_VECTOR: u8 = 0xEF;
/// What the APIC delivers when an interrupt vanished before acknowledgement.
pub(super) const SPURIOUS_VECTOR: u8 = 0xFF;

const TPR: usize = 0x080;
const EOI: usize = 0x0B0;
/// The first of the eight interrupt request registers.
const IRR: usize = 0x200;
const SVR: usize = 0x0F0;
const ESR: usize = 0x280;
const ICR_LOW: usize = 0x300;
const ICR_HIGH: usize = 0x310;
const LVT_TIMER: usize = 0x320;
const TIMER_INITIAL: usize = 0x380;
const TIMER_CURRENT: usize = 0x390;
const TIMER_DIVIDE: usize = 0x3E0;

const SVR_ENABLE: u32 = 1 << 8;
const LVT_MASKED: u32 = 1 << 16;
/// Divide configuration 0b0011: the timer counts at the bus clock / 16.
const DIVIDE_BY_16: u32 = 0b0011;
const ICR_DELIVERY_PENDING: u32 = 1 << 12;
const ICR_ASSERT: u32 = 1 << 14;
const ICR_LEVEL: u32 = 1 << 15;
const ICR_INIT: u32 = 0b101 << 8;
const ICR_STARTUP: u32 = 0b110 << 8;
const IA32_APIC_BASE: u32 = 0x1B;
const APIC_GLOBAL_ENABLE: u64 = 1 << 11;
/// IA32_APIC_BASE: x2APIC mode (with the global enable).
const APIC_X2_ENABLE: u64 = 1 << 10;
/// x2APIC registers are MSRs from here, one per 16 bytes of xAPIC offset.
const X2APIC_MSR_BASE: u32 = 0x800;

/// Nothing is kept per core: a core's APIC is addressed by its APIC id,
/// which `CoreLocal` already holds.
#[derive(Debug)]
pub(crate) struct CoreApic;

impl CoreApic {
    pub(crate) const fn new() -> Self {
        Self
    }
}

/// Where every core's APIC registers appear (each core sees its own): the
/// architectural address until the MADT names another.
static BASE: AtomicUsize = AtomicUsize::new(0xFEE0_0000);

/// Whether every core's APIC runs in x2APIC mode.
static X2APIC: AtomicBool = AtomicBool::new(false);

/// Records the APIC base the MADT names. Boot core, before any use.
pub(super) fn set_base(base: usize) {
    BASE.store(base, Relaxed);
}

/// Chooses the mode (module docs) from the cores the MADT listed and the
/// command line. Boot core, before any use of an APIC.
pub(super) fn choose_mode(info: &crate::boot_info::BootInfo) {
    // SAFETY: IA32_APIC_BASE exists on every x86_64 processor; reading it
    // changes nothing.
    let base = unsafe { Msr::new(IA32_APIC_BASE).read() };
    let left_on = base & APIC_X2_ENABLE != 0;
    let ids_need_it = info.cores.iter().any(|&id| id > u64::from(MAX_XAPIC_ID));
    let asked = info.bootarg("roving.apic") == Some("x2apic");
    X2APIC.store(super::cpu::has_x2apic() && (left_on || ids_need_it || asked), Relaxed);
}

/// xAPIC mode addresses ids 0..=254 (255 is the broadcast id).
pub(super) const MAX_XAPIC_ID: u32 = 254;

/// Whether the APICs run in x2APIC mode (APIC ids past 254 reachable).
pub(super) fn is_x2apic() -> bool {
    X2APIC.load(Relaxed)
}

/// Where the APIC registers are.
pub(super) fn base() -> usize {
    BASE.load(Relaxed)
}

/// The calling core's xAPIC registers.
fn registers() -> Registers {
    // SAFETY: the local APIC's registers (from the MADT), identity-mapped
    // uncached; each offset used is a 32-bit register of the calling
    // core's APIC.
    unsafe { Registers::at(base()) }
}

fn x2apic_msr(offset: usize) -> Msr {
    Msr::new(X2APIC_MSR_BASE + (offset >> 4) as u32)
}

fn write(offset: usize, value: u32) {
    if is_x2apic() {
        // SAFETY: in x2APIC mode each xAPIC register at `offset` is the MSR
        // at 0x800 + offset / 16, of the calling core's APIC.
        unsafe { x2apic_msr(offset).write(u64::from(value)) };
        return;
    }
    registers().write32(offset, value)
}

fn read(offset: usize) -> u32 {
    if is_x2apic() {
        // SAFETY: as in `write`; every register read here is readable.
        return unsafe { x2apic_msr(offset).read() } as u32;
    }
    registers().read32(offset)
}

/// Enables the calling core's APIC, its timer stopped (one-shot, its
/// vector unmasked: arming it is then the one write of a count).
pub(super) fn init_this_core() {
    let mut base = Msr::new(IA32_APIC_BASE);
    // SAFETY: IA32_APIC_BASE exists on every x86_64 processor; setting its
    // global enable bit keeps the base address.
    unsafe {
        let value = base.read();
        let mode = if is_x2apic() { APIC_GLOBAL_ENABLE | APIC_X2_ENABLE } else { APIC_GLOBAL_ENABLE };
        // From xAPIC (or disabled) to x2APIC is one write; a core that is
        // already in the mode (a restart) is left alone.
        if value & mode != mode {
            base.write(value | mode);
        }
    }
    write(TPR, 0);
    write(SVR, SVR_ENABLE | u32::from(SPURIOUS_VECTOR));
    write(TIMER_DIVIDE, DIVIDE_BY_16);
    write(TIMER_INITIAL, 0);
    write(LVT_TIMER, u32::from(TIMER_VECTOR));
    write(ESR, 0);
    eoi();
}

/// Acknowledges the interrupt being handled.
pub(super) fn eoi() {
    write(EOI, 0);
}

/// Whether `vector` is pending at this core's APIC (its bit in the
/// interrupt request register: delivered, not yet taken).
pub(super) fn vector_pending(vector: u8) -> bool {
    read(IRR + 0x10 * usize::from(vector / 32)) & (1 << (vector % 32)) != 0
}

/// Sends an IPI. Masked: in xAPIC mode a handler that sent one of its own
/// between the two writes would send this one to its target.
fn send(apic_id: u64, command: u32) {
    if is_x2apic() {
        // One 64-bit write: destination in the high half; x2APIC has no
        // delivery-pending bit to wait for.
        // SAFETY: the ICR's MSR of the calling core's APIC, in x2APIC mode.
        unsafe { x2apic_msr(ICR_LOW).write(apic_id << 32 | u64::from(command)) };
        return;
    }
    crate::masking::without_interrupts(|| {
        while read(ICR_LOW) & ICR_DELIVERY_PENDING != 0 {
            core::hint::spin_loop();
        }
        write(ICR_HIGH, (apic_id as u32) << 24);
        write(ICR_LOW, command);
    });
}

/// Sends the wake-up IPI to the core with APIC id `apic_id`. The caller has
/// made the ring it announces visible first.
pub(super) fn send_wake(apic_id: u64) {
    send(apic_id, ICR_ASSERT | u32::from(WAKE_VECTOR));
}

/// Sends `vector` to the core with APIC id `apic_id`, as a device's
/// interrupt would arrive (fixed delivery, edge).
pub(super) fn send_vector(apic_id: u64, vector: u8) {
    send(apic_id, ICR_ASSERT | u32::from(vector));
}

/// INIT: the core resets and waits for a STARTUP.
pub(super) fn send_init(apic_id: u64) {
    send(apic_id, ICR_INIT | ICR_ASSERT | ICR_LEVEL);
}

/// STARTUP: the core begins in real mode at `page * 4096`.
pub(super) fn send_startup(apic_id: u64, page: u8) {
    send(apic_id, ICR_STARTUP | ICR_ASSERT | u32::from(page));
}

/// Starts the one-shot timer: it interrupts after `counts` (divide-by-16
/// clock); 0 stops it. One write: the vector stays unmasked, and a stopped
/// timer raises nothing.
pub(super) fn timer_start(counts: u32) {
    write(TIMER_INITIAL, counts);
}

/// Stops the timer: a count of 0 stops a one-shot timer (Intel SDM vol. 3,
/// 10.5.4), with no interrupt.
pub(super) fn timer_stop() {
    write(TIMER_INITIAL, 0);
}

/// The counts left of the running timer.
pub(super) fn timer_remaining() -> u32 {
    read(TIMER_CURRENT)
}

/// Starts the timer counting down from the maximum, masked: for
/// calibration, which ends with [`timer_end_masked`].
pub(super) fn timer_start_masked() {
    write(LVT_TIMER, LVT_MASKED | u32::from(TIMER_VECTOR));
    write(TIMER_INITIAL, u32::MAX);
}

/// Stops the timer that [`timer_start_masked`] started and unmasks its
/// vector again, as [`init_this_core`] left it.
pub(super) fn timer_end_masked() {
    write(TIMER_INITIAL, 0);
    write(LVT_TIMER, u32::from(TIMER_VECTOR));
}

//! Registers that describe or steer the calling core.

use crate::cores::CoreLocal;
use aarch64_cpu::registers::{DAIF, MPIDR_EL1, Readable, SCTLR_EL1, TPIDR_EL0, TPIDR_EL1, Writeable};
use core::arch::asm;

/// The affinity fields of MPIDR_EL1: this core's hardware id as the device
/// tree and PSCI name it.
pub(crate) fn hw_id() -> u64 {
    MPIDR_EL1.get() & 0xff_00ff_ffff
}

/// Points TPIDR_EL1 at this core's [`CoreLocal`], and TPIDR_EL0 too (the
/// record outside an interrupt handler: see [`core_local_outside_handler`]).
/// Touches no memory. roving-kernel runs nothing at EL0, so TPIDR_EL0 is
/// its own.
pub(crate) fn set_core_local(local: &'static CoreLocal) {
    let raw = local as *const CoreLocal as u64;
    TPIDR_EL1.set(raw);
    TPIDR_EL0.set(raw);
}

/// This core's [`CoreLocal`], or `None` before [`set_core_local`].
pub(crate) fn core_local() -> Option<&'static CoreLocal> {
    let ptr = TPIDR_EL1.get() as *const CoreLocal;
    // SAFETY: TPIDR_EL1 is zero at reset and is only ever set by
    // `set_core_local` to a `&'static CoreLocal`.
    unsafe { ptr.as_ref() }
}

/// This core's [`CoreLocal`] unless the core runs an interrupt handler,
/// from one read of TPIDR_EL0, which holds the record outside handlers
/// and zero inside them. One read, because a strand may be preempted at
/// any instruction and resumed on another core: a record read first and a
/// handler mark read from it after could be two cores' answers.
pub(crate) fn core_local_outside_handler() -> Option<&'static CoreLocal> {
    let ptr = TPIDR_EL0.get() as *const CoreLocal;
    // SAFETY: TPIDR_EL0 is set only by `set_core_local` (to a `&'static
    // CoreLocal`), `enter_handler` (to zero) and `leave_handler` (back).
    // Zero at reset on the cores roving-kernel starts; a core that had it
    // set by firmware runs nothing before `set_core_local`.
    unsafe { ptr.as_ref() }
}

/// Marks the calling core as running an interrupt handler, until
/// [`leave_handler`] is given what this returns (handlers may nest: an
/// inner one restores the mark the outer one set).
pub(crate) fn enter_handler() -> u64 {
    let outside = TPIDR_EL0.get();
    TPIDR_EL0.set(0);
    outside
}

/// Ends the mark [`enter_handler`] returned `saved` for.
pub(crate) fn leave_handler(saved: u64) {
    TPIDR_EL0.set(saved);
}

/// Whether this core's MMU is on (and atomics are safe to use).
pub(crate) fn mmu_enabled() -> bool {
    SCTLR_EL1.is_set(SCTLR_EL1::M)
}

/// Masks IRQs and FIQs; returns the previous DAIF for [`restore_interrupts`].
pub(crate) fn disable_interrupts() -> usize {
    let saved = DAIF.get() as usize;
    // SAFETY: masking interrupts has no memory effects; callers restore.
    unsafe { asm!("msr daifset, #3", options(nomem, nostack, preserves_flags)) };
    saved
}

/// Restores a DAIF value saved by [`disable_interrupts`].
pub(crate) fn restore_interrupts(saved: usize) {
    DAIF.set(saved as u64);
}

/// Whether a state [`disable_interrupts`] returned had IRQs unmasked.
pub(crate) fn enabled_in(saved: usize) -> bool {
    saved & (1 << 7) == 0 // DAIF.I
}

/// Unmasks IRQs (and FIQs) on this core: work runs with them open.
pub(crate) fn enable_interrupts() {
    // SAFETY: the handlers save and restore all state they touch.
    unsafe { asm!("msr daifclr, #3", options(nomem, nostack, preserves_flags)) };
}

/// Lets any pending IRQ be taken now, then masks IRQs again.
pub(crate) fn take_pending_interrupts() {
    // SAFETY: the IRQ handler saves and restores all state it touches; the
    // ISB makes the unmask take effect before IRQs are masked again.
    unsafe { asm!("msr daifclr, #2", "isb", "msr daifset, #2", options(nomem, nostack, preserves_flags)) };
}

/// Runs `f` with IRQs unmasked, then masks them again.
pub(crate) fn with_interrupts_enabled<R>(f: impl FnOnce() -> R) -> R {
    // SAFETY: as in `take_pending_interrupts`.
    unsafe { asm!("msr daifclr, #2", options(nomem, nostack, preserves_flags)) };
    let result = f();
    // SAFETY: masking has no memory effects.
    unsafe { asm!("msr daifset, #2", options(nomem, nostack, preserves_flags)) };
    result
}

/// Discards the data cache lines covering `[start, start + len)` without
/// writing them back: for memory written with the caches off, so no stale
/// copy shadows what is now in RAM.
pub(crate) fn invalidate_dcache_range(start: usize, len: usize) {
    for_each_dcache_line(start, len, |address| {
        // SAFETY: invalidating lines of memory this core just wrote with
        // caches off loses nothing; the address is mapped (or the MMU is off).
        unsafe { asm!("dc ivac, {}", in(reg) address, options(nostack, preserves_flags)) };
    });
}

/// Writes the data cache lines covering `[start, start + len)` back to
/// memory and drops them: for data a core with its caches off will read.
pub(crate) fn clean_dcache_range(start: usize, len: usize) {
    for_each_dcache_line(start, len, |address| {
        // SAFETY: cleaning and invalidating a mapped line keeps its data.
        unsafe { asm!("dc civac, {}", in(reg) address, options(nostack, preserves_flags)) };
    });
}

/// Calls `f` with the address of every data cache line covering
/// `[start, start + len)`, then waits for the maintenance to complete.
fn for_each_dcache_line(start: usize, len: usize, mut f: impl FnMut(usize)) {
    let ctr: usize;
    // SAFETY: reading CTR_EL0 has no side effects.
    unsafe { asm!("mrs {}, ctr_el0", out(reg) ctr, options(nomem, nostack, preserves_flags)) };
    let line = 4usize << ((ctr >> 16) & 0xf); // CTR_EL0.DminLine: log2 of words per line
    let mut address = start & !(line - 1);
    while address < start + len {
        f(address);
        address += line;
    }
    // SAFETY: a barrier has no memory effects of its own.
    unsafe { asm!("dsb sy", options(nostack, preserves_flags)) };
}

/// Stops this core for good, with interrupts masked.
pub(crate) fn halt() -> ! {
    disable_interrupts();
    loop {
        aarch64_cpu::asm::wfi();
    }
}

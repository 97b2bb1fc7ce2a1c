//! Registers that describe or steer the calling core.

use crate::boot_info::MAX_CORES;
use crate::cores::CoreLocal;
use core::arch::asm;
use core::sync::atomic::{AtomicPtr, Ordering::Relaxed};
use x86_64::registers::model_specific::GsBase;

/// Each core's [`CoreLocal`]; a core's GS base points at its own entry, so
/// one `mov` from `gs:[0]` finds it.
static CORE_LOCAL: [AtomicPtr<CoreLocal>; MAX_CORES] =
    [const { AtomicPtr::new(core::ptr::null_mut()) }; MAX_CORES];

/// Points the calling core's GS base at its [`CoreLocal`]. The first thing
/// each core does in Rust: until then `core_local` must not be called.
pub(crate) fn set_core_local(local: &'static CoreLocal) {
    let slot = &CORE_LOCAL[local.index];
    slot.store(local as *const CoreLocal as *mut CoreLocal, Relaxed);
    GsBase::write(x86_64::VirtAddr::from_ptr(slot.as_ptr()));
}

/// This core's [`CoreLocal`].
pub(crate) fn core_local() -> Option<&'static CoreLocal> {
    let ptr: *const CoreLocal;
    // SAFETY: GS base points at this core's `CORE_LOCAL` slot (set first
    // thing on every core), which holds a `&'static CoreLocal` or null.
    unsafe { asm!("mov {}, gs:[0]", out(reg) ptr, options(nostack, readonly, preserves_flags)) };
    // SAFETY: as above.
    unsafe { ptr.as_ref() }
}

/// The calling core's APIC id: the 32-bit x2APIC id (CPUID leaf 0xB, EDX)
/// where that leaf exists, else the 8-bit initial id (leaf 1, EBX bits
/// 31:24). Below 255 the two agree, and the MADT lists the same id.
/// (`boot.s`'s trampoline reads it the same way.)
pub(crate) fn apic_id() -> u64 {
    if core::arch::x86_64::__cpuid(0).eax >= 0xB {
        return u64::from(core::arch::x86_64::__cpuid_count(0xB, 0).edx);
    }
    // CPUID leaf 1 exists on every x86_64 processor.
    let leaf = core::arch::x86_64::__cpuid(1);
    u64::from(leaf.ebx >> 24)
}

/// Whether the processor has x2APIC mode (CPUID.1:ECX bit 21).
pub(crate) fn has_x2apic() -> bool {
    core::arch::x86_64::__cpuid(1).ecx & (1 << 21) != 0
}

/// Whether CPUID reports MONITOR/MWAIT.
pub(crate) fn has_mwait() -> bool {
    let leaf = core::arch::x86_64::__cpuid(1);
    leaf.ecx & (1 << 3) != 0
}

/// Whether the processor maps 1 GiB pages (CPUID `pdpe1gb`).
pub(crate) fn has_gigabyte_pages() -> bool {
    // Leaf 0x8000_0000 says which extended leaves exist.
    let highest = core::arch::x86_64::__cpuid(0x8000_0000).eax;
    highest >= 0x8000_0001 && core::arch::x86_64::__cpuid(0x8000_0001).edx & (1 << 26) != 0
}

/// The interrupt flag of RFLAGS.
const IF: usize = 1 << 9;

/// Disables interrupts; returns the previous RFLAGS for [`restore_interrupts`].
pub(crate) fn disable_interrupts() -> usize {
    let flags: usize;
    // SAFETY: reads RFLAGS and clears IF; callers restore.
    unsafe { asm!("pushfq", "pop {}", "cli", out(reg) flags, options(nomem, preserves_flags)) };
    flags
}

/// Restores the interrupt flag saved by [`disable_interrupts`].
pub(crate) fn restore_interrupts(saved: usize) {
    if saved & IF != 0 {
        x86_64::instructions::interrupts::enable();
    }
}

/// Whether a state [`disable_interrupts`] returned had interrupts enabled.
pub(crate) fn enabled_in(saved: usize) -> bool {
    saved & IF != 0
}

/// Enables interrupts on this core: work runs with them open.
pub(crate) fn enable_interrupts() {
    x86_64::instructions::interrupts::enable();
}

/// Paging is always on in long mode.
pub(crate) fn mmu_enabled() -> bool {
    true
}

/// Stops this core for good, with interrupts disabled.
pub(crate) fn halt() -> ! {
    disable_interrupts();
    loop {
        x86_64::instructions::hlt();
    }
}

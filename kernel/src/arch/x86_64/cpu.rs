//! Registers that describe or steer the calling core.

use crate::boot_info::MAX_CORES;
use crate::cores::CoreLocal;
use core::arch::asm;
use core::sync::atomic::{AtomicPtr, Ordering::Relaxed};
use x86_64::registers::model_specific::GsBase;

/// A core's entry in [`CORE_LOCAL`]. GS base points at the calling
/// core's, so one `mov` relative to GS reads a field of the core that runs
/// it.
#[repr(C)]
struct Slot {
    /// At `gs:[0]`: the core's record.
    local: AtomicPtr<CoreLocal>,
    /// At `gs:[8]`: the same, outside interrupt handlers; null inside
    /// them.
    outside_handler: AtomicPtr<CoreLocal>,
}

/// Each core's [`Slot`].
static CORE_LOCAL: [Slot; MAX_CORES] = [const {
    Slot {
        local: AtomicPtr::new(core::ptr::null_mut()),
        outside_handler: AtomicPtr::new(core::ptr::null_mut()),
    }
}; MAX_CORES];

/// Points the calling core's GS base at its [`CoreLocal`]. The first thing
/// each core does in Rust: until then `core_local` must not be called.
pub(crate) fn set_core_local(local: &'static CoreLocal) {
    let slot = &CORE_LOCAL[local.index];
    let record = local as *const CoreLocal as *mut CoreLocal;
    slot.local.store(record, Relaxed);
    slot.outside_handler.store(record, Relaxed);
    GsBase::write(x86_64::VirtAddr::from_ptr(slot));
}

/// This core's [`CoreLocal`].
pub(crate) fn core_local() -> Option<&'static CoreLocal> {
    let ptr: *const CoreLocal;
    // SAFETY: GS base points at this core's `CORE_LOCAL` slot (set first
    // thing on every core), whose first field holds a `&'static
    // CoreLocal` or null.
    unsafe { asm!("mov {}, gs:[0]", out(reg) ptr, options(nostack, readonly, preserves_flags)) };
    // SAFETY: as above.
    unsafe { ptr.as_ref() }
}

/// This core's [`CoreLocal`] unless the core runs an interrupt handler,
/// from one `mov` from `gs:[8]`. One read, because a strand may be
/// preempted at any instruction and resumed on another core: a record
/// read first and a handler mark read from it after could be two cores'
/// answers.
pub(crate) fn core_local_outside_handler() -> Option<&'static CoreLocal> {
    let ptr: *const CoreLocal;
    // SAFETY: as in `core_local`; the second field is the record or null
    // (`enter_handler`, `leave_handler`).
    unsafe { asm!("mov {}, gs:[8]", out(reg) ptr, options(nostack, readonly, preserves_flags)) };
    // SAFETY: as above.
    unsafe { ptr.as_ref() }
}

/// Marks the calling core as running an interrupt handler, until
/// [`leave_handler`] is given what this returns (handlers may nest: an
/// inner one restores the mark the outer one set).
pub(crate) fn enter_handler() -> usize {
    let outside: usize;
    // SAFETY: as in `core_local`; only this core writes its slot after
    // `set_core_local`.
    unsafe {
        asm!("mov {}, gs:[8]", out(reg) outside, options(nostack, readonly, preserves_flags));
        asm!("mov qword ptr gs:[8], 0", options(nostack, preserves_flags));
    }
    outside
}

/// Ends the mark [`enter_handler`] returned `saved` for.
pub(crate) fn leave_handler(saved: usize) {
    // SAFETY: as in `enter_handler`.
    unsafe { asm!("mov gs:[8], {}", in(reg) saved, options(nostack, preserves_flags)) };
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

//! Starting a core: INIT, then STARTUP twice, into the real-mode
//! trampoline of `boot.s`.
//!
//! The trampoline is copied once to [`TRAMPOLINE`] (a page below 1 MiB,
//! as STARTUP requires); a started core climbs from real mode to long mode
//! on the boot core's page tables, finds its dense index by its APIC id in
//! [`INDEX_BY_APIC_ID`], and calls the kernel's secondary entry on its own
//! boot stack. Nothing in the trampoline is per start, so cores can be
//! started from several cores at once.

use super::{apic, timer};
use core::sync::atomic::{AtomicU8, Ordering::Relaxed};
use core::time::Duration;

/// Where the trampoline runs: page 8, free RAM on every PC once the BIOS
/// has handed over.
pub(super) const TRAMPOLINE: usize = 0x8000;

/// The dense index of the core with each APIC id, read by the trampoline.
pub(super) static INDEX_BY_APIC_ID: [AtomicU8; 256] = [const { AtomicU8::new(0) }; 256];

/// APIC ids the trampoline can look up.
const INVALID_PARAMETERS: i64 = -2;

unsafe extern "C" {
    static _roving_trampoline_start: u8;
    static _roving_trampoline_end: u8;
}

static COPIED: spin::Once = spin::Once::new();

/// Starts the core with APIC id `hw_id` as core `index`.
pub(super) fn start(index: usize, hw_id: u64) -> Result<(), i64> {
    let slot = INDEX_BY_APIC_ID.get(hw_id as usize).ok_or(INVALID_PARAMETERS)?;
    COPIED.call_once(|| {
        let start = &raw const _roving_trampoline_start;
        let length = &raw const _roving_trampoline_end as usize - start as usize;
        // SAFETY: the trampoline's bytes, copied to a page of low RAM that
        // nothing else uses, identity-mapped and writable.
        unsafe { core::ptr::copy_nonoverlapping(start, TRAMPOLINE as *mut u8, length) };
    });
    slot.store(index as u8, Relaxed);
    // SeqCst orders the copy and the index before the IPIs' MMIO writes.
    core::sync::atomic::fence(core::sync::atomic::Ordering::SeqCst);
    apic::send_init(hw_id);
    pause(Duration::from_millis(10));
    for _ in 0..2 {
        apic::send_startup(hw_id, (TRAMPOLINE >> 12) as u8);
        pause(Duration::from_micros(200));
    }
    Ok(())
}

/// Busy-waits on the TSC.
fn pause(duration: Duration) {
    let ticks = duration.as_nanos() as u64 * timer::hz() / 1_000_000_000;
    let end = timer::ticks() + ticks;
    while timer::ticks() < end {
        core::hint::spin_loop();
    }
}

//! Starting a core: INIT, then STARTUP twice, into the real-mode
//! trampoline of `boot.s`.
//!
//! The trampoline is copied once to [`TRAMPOLINE`] (a page below 1 MiB,
//! as STARTUP requires); a started core climbs from real mode to long mode
//! on the boot core's page tables, finds its dense index by looking its
//! APIC id up in [`APIC_ID_BY_INDEX`], and calls the kernel's secondary
//! entry on its own boot stack. Nothing in the trampoline is per start, so
//! cores can be started from several cores at once. (A search, not a table
//! indexed by id: x2APIC ids are 32 bits and may have gaps.)

use super::{apic, timer};
use crate::boot_info::MAX_CORES;
use core::sync::atomic::{AtomicU32, Ordering::Relaxed};
use core::time::Duration;

/// Where the trampoline runs: page 8, free RAM on every PC once the BIOS
/// has handed over.
pub(super) const TRAMPOLINE: usize = 0x8000;

/// The APIC id of each core being or having been started, by its dense
/// index, searched by the trampoline; `NOT_STARTED` elsewhere. (The boot
/// core's slot stays `NOT_STARTED`: it never runs the trampoline.)
pub(super) static APIC_ID_BY_INDEX: [AtomicU32; MAX_CORES] =
    [const { AtomicU32::new(NOT_STARTED) }; MAX_CORES];

/// No x2APIC id is all ones (that is the broadcast id).
const NOT_STARTED: u32 = u32::MAX;

/// An index or APIC id the trampoline cannot look up.
const INVALID_PARAMETERS: i64 = -2;

unsafe extern "C" {
    static _roving_trampoline_start: u8;
    static _roving_trampoline_end: u8;
}

static COPIED: spin::Once = spin::Once::new();

/// Starts the core with APIC id `hw_id` as core `index`.
pub(super) fn start(index: usize, hw_id: u64) -> Result<(), i64> {
    let slot = APIC_ID_BY_INDEX.get(index).ok_or(INVALID_PARAMETERS)?;
    let apic_id = u32::try_from(hw_id).ok().filter(|&id| id != NOT_STARTED).ok_or(INVALID_PARAMETERS)?;
    COPIED.call_once(|| {
        let start = &raw const _roving_trampoline_start;
        let length = &raw const _roving_trampoline_end as usize - start as usize;
        // SAFETY: the trampoline's bytes, copied to a page of low RAM that
        // nothing else uses, identity-mapped and writable.
        unsafe { core::ptr::copy_nonoverlapping(start, TRAMPOLINE as *mut u8, length) };
    });
    slot.store(apic_id, Relaxed);
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

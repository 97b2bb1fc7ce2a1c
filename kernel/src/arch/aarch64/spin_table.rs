//! Starting a core held in a firmware spin table (the Raspberry Pi's
//! `armstub8`, and QEMU's imitation of it).
//!
//! Every core but the boot core waits in the firmware: `WFE`, then load an
//! 8-byte slot, and jump to that address once it is non-zero, with its MMU
//! and caches off and `x0 = 0`. The device tree names each core's slot
//! (`cpu-release-addr`); without a tree, the board's table holds core
//! Aff0's at `release + 8 * aff0`.
//! Releasing core `index` is therefore:
//!
//! 1. record `index` where the core's first instructions will look it up,
//!    by Aff0, since the firmware passes nothing in `x0`
//!    (`_roving_spin_start` in `boot.s` loads it and joins the PSCI path);
//! 2. write the entry address into the core's slot;
//! 3. clean both lines to memory (`dc civac`): the waiting core reads RAM,
//!    not this core's cache;
//! 4. `dsb sy`, then `sev` to end its `WFE`.
//!
//! A spin-table core cannot be powered off again; once started it parks in
//! the kernel's own idle loop between entries (see `cores.rs`).

use super::cpu;
use crate::boot_info::MAX_CORES;
use aarch64_cpu::asm::{self, barrier};
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// The dense index of the core with each Aff0, read by `_roving_spin_start`
/// with its caches off.
pub(super) static SPIN_INDEX: [AtomicU64; MAX_CORES] = [const { AtomicU64::new(0) }; MAX_CORES];

/// The error returned for a core whose Aff0 has no slot this kernel
/// handles (PSCI's INVALID_PARAMETERS, for a uniform report).
const INVALID_PARAMETERS: i64 = -2;

unsafe extern "C" {
    fn _roving_spin_start();
}

/// Releases core `index` (hardware id `hw_id`) from the spin-table slot at
/// `slot`.
pub(super) fn release(slot: usize, index: usize, hw_id: u64) -> Result<(), i64> {
    let aff0 = (hw_id & 0xff) as usize;
    let Some(index_slot) = SPIN_INDEX.get(aff0) else {
        return Err(INVALID_PARAMETERS);
    };
    index_slot.store(index as u64, Relaxed);
    cpu::clean_dcache_range(index_slot.as_ptr() as usize, 8);
    let slot = slot as *mut u64;
    // SAFETY: the tree or the board names the slot as the core's; it is
    // RAM the firmware reserved for this, mapped normal memory, and only
    // this core writes it (`cores::start` hands a core to one starter).
    unsafe { slot.write_volatile(_roving_spin_start as *const () as u64) };
    cpu::clean_dcache_range(slot as usize, 8);
    barrier::dsb(barrier::SY);
    asm::sev();
    Ok(())
}

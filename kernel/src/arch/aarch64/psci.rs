//! Starting cores through PSCI, over the conduit the device tree names.

use super::dtb::Conduit;
use crate::boot_info::boot_info;
use smccc::{Hvc, Smc, psci};

/// PSCI's NOT_SUPPORTED, reported when the tree names no PSCI at all.
pub(super) const NOT_SUPPORTED: i64 = -1;

/// Powers on the core with affinity `hw_id` at `entry`, with `context` in
/// its x0. Returns the PSCI error code on failure.
pub(super) fn cpu_on(hw_id: u64, entry: usize, context: usize) -> Result<(), i64> {
    // The new core starts with its caches off: everything it reads before
    // turning them on must already be in memory.
    aarch64_cpu::asm::barrier::dsb(aarch64_cpu::asm::barrier::SY);
    let (entry, context) = (entry as u64, context as u64);
    let result = match boot_info().arch.psci {
        Some(Conduit::Hvc) => psci::cpu_on::<Hvc>(hw_id, entry, context),
        Some(Conduit::Smc) => psci::cpu_on::<Smc>(hw_id, entry, context),
        None => return Err(NOT_SUPPORTED),
    };
    result.map_err(i64::from)
}

//! The two idle tiers' instructions (the wait itself is `crate::idle`).
//!
//! - Light: `MONITOR` the doorbell's line, check the doorbell again, then
//!   `MWAIT`: a ringer's store to the doorbell ends it, and so does an
//!   interrupt (the deadline). Without MWAIT (CPUID), the light tier
//!   returns at once and the caller's loop spins. Under QEMU TCG `MWAIT`
//!   does not sleep, so a light sleeper burns a host core either way.
//! - Deep: `STI; HLT`. Woken only by an interrupt: the wake-up IPI, or the
//!   timer when the wait has a deadline. `STI` takes effect after the next
//!   instruction, so an interrupt that arrived after the doorbell check is
//!   taken by the `HLT`, not before it: none is missed.
//!
//! The wait runs with interrupts disabled (`crate::idle`) except inside
//! these instructions.

use super::apic;
use crate::boot_info::boot_info;
use crate::cores::CoreLocal;
use core::arch::asm;
use roving::platform::WakeSignal;

/// The local APIC always can end a deep sleep.
pub(crate) fn can_sleep_deep() -> bool {
    true
}

/// MONITOR/MWAIT where CPUID has it; otherwise return at once and let the
/// caller's loop spin.
pub(crate) fn sleep_light(me: &CoreLocal) {
    if boot_info().arch.mwait {
        monitor_wait(me);
    } else {
        core::hint::spin_loop();
    }
}

/// `STI; HLT; CLI`: the interrupt that ends it is taken inside.
pub(crate) fn sleep_deep() {
    // SAFETY: enables interrupts for exactly the HLT (the STI shadow),
    // then disables them again; the handlers save everything they touch.
    unsafe { asm!("sti", "hlt", "cli", options(nomem, nostack)) };
}

/// Nothing left to take: `sleep_deep` took it.
pub(crate) fn take_interrupts(_me: &CoreLocal) {}

/// MONITOR the doorbell, re-check it, MWAIT with interrupts enabled.
fn monitor_wait(me: &CoreLocal) {
    let line = &me.doorbell as *const _ as usize;
    // SAFETY: MONITOR only arms address monitoring of a mapped line.
    unsafe { asm!("monitor", in("rax") line, in("ecx") 0, in("edx") 0, options(nostack, preserves_flags)) };
    if me.doorbell.is_rung() {
        return;
    }
    // SAFETY: MWAIT waits for a store to the monitored line or an
    // interrupt; interrupts are enabled only across it.
    unsafe { asm!("sti", "mwait", "cli", in("eax") 0, in("ecx") 0, options(nostack)) };
}

/// Sends what a ring of `target`'s doorbell asked for.
pub(crate) fn signal(target: &CoreLocal, signal: WakeSignal) {
    match signal {
        // The ring's store to the doorbell is what ends a monitored MWAIT.
        WakeSignal::None | WakeSignal::Event => {}
        WakeSignal::Interrupt => apic::send_wake(target.hw_id()),
    }
}

/// Nothing to send: a light sleeper monitors its own doorbell, so the
/// rings themselves woke every one.
pub(crate) fn broadcast_event() {}

//! The two idle tiers, under the doorbell protocol (roving's
//! `platform::doorbell` has the protocol and its proof).
//!
//! - Light: `WFE`. Woken by `SEV` from a ringer, by any interrupt, or by the
//!   event register already being set. Cheap on hardware; under QEMU TCG a
//!   `WFE` returns at once, so a light sleeper burns a host core.
//! - Deep: `WFI`. Woken only by an interrupt: the wake-up SGI, or the timer
//!   when the wait has a deadline. Costs an IPI to wake; uses no host CPU
//!   under QEMU.
//!
//! IRQs are masked in kernel code except here. The light tier unmasks them
//! around `WFE` so the timer's interrupt is taken; its handler executes
//! `SEVL`, so a `WFE` reached after the interrupt was taken still returns.
//! The deep tier keeps them masked across the doorbell check and `WFI`
//! (a pending interrupt ends `WFI` even when masked, so none is missed), then
//! unmasks them briefly to take and acknowledge it.

use super::{cpu, irq, timer};
use crate::cores::CoreLocal;
use aarch64_cpu::asm::{self, barrier};
use core::sync::atomic::Ordering::Relaxed;
use roving::platform::{Depth, Signal};

/// Waits on the calling core's doorbell (see `Platform::wait_for_event`).
pub(crate) fn wait(me: &CoreLocal, depth: Depth, deadline: Option<u64>) {
    if me.doorbell.answer() {
        me.stats.rings_answered.fetch_add(1, Relaxed);
        return;
    }
    if let Some(deadline) = deadline {
        if timer::ticks() >= deadline {
            return;
        }
        timer::arm(deadline);
    }
    // Without an interrupt controller nothing could end a WFI.
    let depth = if irq::available() { depth } else { Depth::Light };
    match depth {
        Depth::Light => {
            me.stats.light_sleeps.fetch_add(1, Relaxed);
            // A ring after the answer above comes with SEV, which sets the
            // event register this WFE then consumes.
            cpu::with_interrupts_enabled(asm::wfe);
        }
        Depth::Deep => {
            me.stats.deep_sleeps.fetch_add(1, Relaxed);
            if me.doorbell.enter_deep() {
                asm::wfi();
                if me.doorbell.leave_deep() {
                    me.stats.rings_answered.fetch_add(1, Relaxed);
                }
            } else {
                me.stats.rings_answered.fetch_add(1, Relaxed);
            }
            cpu::take_pending_interrupts();
        }
    }
    if deadline.is_some() {
        timer::disarm();
    }
}

/// Sends what a ring of `target`'s doorbell asked for.
pub(crate) fn signal(target: &CoreLocal, signal: Signal) {
    match signal {
        Signal::None => {}
        Signal::Event => broadcast_event(),
        Signal::Interrupt => {
            barrier::dsb(barrier::ISH);
            irq::send_wake(target);
        }
    }
}

/// `SEV` to every core: one is enough for any number of rings that asked
/// for an event.
pub(crate) fn broadcast_event() {
    barrier::dsb(barrier::ISH);
    asm::sev();
}

//! The two idle tiers' instructions (the wait itself is `crate::idle`).
//!
//! - Light: `WFE`. Woken by `SEV` from a ringer, by any interrupt, or by the
//!   event register already being set. Cheap on hardware; under QEMU TCG a
//!   `WFE` returns at once, so a light sleeper burns a host core.
//! - Deep: `WFI`. Woken only by an interrupt: the wake-up SGI, or the timer
//!   when the wait has a deadline. Costs an IPI to wake; uses no host CPU
//!   under QEMU.
//!
//! The wait runs with IRQs masked (`crate::idle`). The light tier unmasks
//! them around `WFE` so the timer's interrupt is taken; its handler
//! executes `SEVL`, so a `WFE` reached after the interrupt was taken still
//! returns. The deep tier keeps them masked across the doorbell check and
//! `WFI` (a pending interrupt ends `WFI` even when masked, so none is
//! missed), then serves it in place, or unmasks briefly to take it
//! through the vector ([`take_interrupts`]).

use super::{boot, cpu, exception, irq};
use crate::cores::CoreLocal;
use aarch64_cpu::asm::{self, barrier};
use roving::platform::WakeSignal;

/// Whether a deep sleep can end: an interrupt controller is running.
pub(crate) fn can_sleep_deep() -> bool {
    irq::available()
}

/// `WFE` with IRQs unmasked, so a deadline's interrupt is taken. A ring
/// after the doorbell check comes with `SEV`, which sets the event
/// register this `WFE` then consumes.
pub(crate) fn sleep_light(_me: &CoreLocal) {
    cpu::with_interrupts_enabled(asm::wfe);
}

/// `WFI` with IRQs masked: a pending interrupt ends it all the same.
pub(crate) fn sleep_deep() {
    asm::wfi();
}

/// Takes and acknowledges whatever interrupt ended (or raced with) a deep
/// sleep.
///
/// A core that waited in its own loop, on its boot stack, serves the
/// interrupt where it is, still masked, as the IRQ vector would: the
/// handler, then the tick's question to roving. That skips the
/// exception's entry and return (about 130 instructions between a handler
/// that woke a strand and the idle core's loop). A wait on a strand's
/// stack takes the interrupt through the vector, so that no handler runs
/// on a strand's stack.
pub(crate) fn take_interrupts(me: &CoreLocal) {
    if boot::on_boot_stack(me.index) {
        exception::serve_irq_in_place();
    } else {
        cpu::take_pending_interrupts();
    }
}

/// Sends what a ring of `target`'s doorbell asked for.
pub(crate) fn signal(target: &CoreLocal, signal: WakeSignal) {
    match signal {
        WakeSignal::None => {}
        WakeSignal::Event => broadcast_event(),
        WakeSignal::Interrupt => {
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

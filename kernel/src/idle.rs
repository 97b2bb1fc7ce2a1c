//! A core's wait for an event, in either tier, under the doorbell
//! protocol (roving's `platform::doorbell` has the protocol and its proof).
//! Each architecture's `idle` module supplies only the instructions:
//! `sleep_light` (WFE, MONITOR/MWAIT), `sleep_deep` (WFI, HLT) and
//! `take_interrupts`.
//!
//! The wait runs with interrupts masked, from the doorbell check to the
//! sleep instruction, so an interrupt that rings the doorbell in between
//! cannot be taken (and its ring missed) before the core sleeps: it stays
//! pending and ends the sleep instead. Each tier opens interrupts for the
//! sleep itself, or takes them right after it.

use crate::cores::CoreLocal;
use crate::{arch, masking};
use core::sync::atomic::Ordering::{Relaxed, Release};
use roving::platform::Depth;

/// Waits on the calling core's doorbell (see `Platform::wait_for_event`).
pub(crate) fn wait(me: &CoreLocal, depth: Depth, deadline: Option<u64>) {
    let saved = masking::disable();
    wait_masked(me, depth, deadline);
    masking::restore(saved);
}

fn wait_masked(me: &CoreLocal, depth: Depth, deadline: Option<u64>) {
    if me.doorbell.answer() {
        me.stats.rings_answered.fetch_add(1, Relaxed);
        return;
    }
    if let Some(deadline) = deadline {
        if arch::timer::ticks() >= deadline {
            return;
        }
        arch::timer::arm(deadline);
    }
    // Without an interrupt controller nothing could end a deep sleep.
    let depth = if arch::idle::can_sleep_deep() { depth } else { Depth::Light };
    match depth {
        Depth::Light => {
            me.stats.light_sleeps.fetch_add(1, Relaxed);
            arch::idle::sleep_light(me);
            masking::woke();
        }
        Depth::Deep => {
            let answered = if me.doorbell.enter_deep() {
                me.stats.last_deep_sleep.store(arch::timer::cycles(), Relaxed);
                // Counted once committed, and after the time it began: a
                // reader that sees the count (Acquire) sees that time.
                me.stats.deep_sleeps.fetch_add(1, Release);
                arch::idle::sleep_deep();
                me.stats.last_deep_wake.store(arch::timer::cycles(), Relaxed);
                masking::woke();
                me.doorbell.leave_deep()
            } else {
                true
            };
            if answered {
                me.stats.rings_answered.fetch_add(1, Relaxed);
            }
            arch::idle::take_interrupts(me);
        }
    }
    if deadline.is_some() {
        arch::timer::disarm();
    }
}

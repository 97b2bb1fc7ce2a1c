//! The strand layer's side of holding preemption off
//! (`crate::preempt::deferral`): its own deferrals, which find the running
//! strand directly, and the hooks it installs so that the layers below
//! can defer too.

use super::scheduler;
use crate::atomics::unmodelled::{AtomicU8, Ordering::Relaxed};
use crate::platform;
use crate::preempt::deferral::{self, Deferral, any_pool_preempts};
use core::ptr::NonNull;

/// What the strand layer installs as each pool is built, the first before
/// any strand exists (`deferral::install`).
pub(crate) static DEFERRAL_HOOKS: deferral::Hooks =
    deferral::Hooks { running_count, after_wait: ask_for_tick_again };

/// The running strand's deferral count (`deferral::Hooks::running_count`).
fn running_count() -> Option<NonNull<AtomicU8>> {
    // SAFETY: the running strand's header, live while it runs.
    scheduler::current().map(|me| NonNull::from(&unsafe { me.as_ref() }.no_preempt))
}

/// Defers preemption of the running strand, found directly: the strand
/// layer's own deferrals do not go through the hooks.
#[inline]
pub(crate) fn defer() -> Deferral {
    if !any_pool_preempts() {
        return deferral::raise(None);
    }
    deferral::raise(running_count())
}

/// Asks again for the running strand's tick after it waited in
/// `platform::wait_for_event` (`deferral::after_wait`).
fn ask_for_tick_again() {
    if scheduler::current().is_none() {
        return;
    }
    let _deferral = defer();
    if let Some((shared, me)) = scheduler::here()
        && shared.slice_ticks() != 0
    {
        // SAFETY: `me` is the calling core, held by our deferral.
        platform::request_tick(Some(unsafe { shared.own_turn(me) }.slice_end.load(Relaxed)));
    }
}

/// Keeps the running strand from being preempted while it lives: what a
/// strand holds around a stretch that must not be cut by a time slice (a
/// timed exchange with a device, a measurement), the way roving's own code
/// holds a deferral. From [`hold_preemption`](super::hold_preemption).
///
/// It holds off only ticks: the strand still gives up its core where it
/// blocks or yields, and interrupt handlers still run. A cancelled strand
/// that computes is not stopped while it holds one, as under a
/// [`Shield`](super::Shield). Holds nest. It stays with the strand that
/// made it (it is neither `Send` nor `Sync`).
#[must_use = "preemption is held off only while the hold lives"]
pub struct PreemptionHold {
    _deferral: Deferral,
    _not_send: core::marker::PhantomData<*const ()>,
}

/// Holds off preemption of the running strand until the result is dropped
/// ([`PreemptionHold`]). Outside strands, and while no pool has a time
/// slice, it costs one load and does nothing.
///
/// A hold kept for long turns the strand's slice into cooperative
/// scheduling: its core's other work waits until the strand blocks,
/// yields or drops the hold.
pub fn hold_preemption() -> PreemptionHold {
    PreemptionHold { _deferral: defer(), _not_send: core::marker::PhantomData }
}

impl core::fmt::Debug for PreemptionHold {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("PreemptionHold")
    }
}

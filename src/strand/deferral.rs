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

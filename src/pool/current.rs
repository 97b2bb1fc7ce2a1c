//! Which pool the calling core is working for, so the free functions
//! [`spawn_task`](crate::spawn_task) and [`post`](crate::post) need no handle.
//!
//! On the host a thread-local holds it (several host machines may run at
//! once, with overlapping core indices). On bare metal a slot per core
//! index does, since a core is one thread of execution.

use super::seam::PoolRef;
use super::shared::Shared;

/// The worker a core is being, on that core's stack while it works.
pub(crate) struct Worker {
    pub(crate) shared: *const Shared,
    pub(crate) core: usize,
}

impl Worker {
    /// The pool the core works for. Not to be kept past the caller's turn
    /// on this core: a pool outlives its time as a core's worker, not
    /// longer.
    #[inline]
    pub(crate) fn pool(&self) -> PoolRef<'static> {
        // SAFETY: a worker's pool outlives its time as the current worker
        // (`enter`'s contract), and callers use the view only meanwhile.
        PoolRef::new(unsafe { &*self.shared })
    }
}

/// Clears the calling core's worker when dropped.
pub(crate) struct Entered {
    previous: *const Worker,
}

#[cfg(feature = "std")]
mod slot {
    use super::Worker;
    use std::cell::Cell;

    std::thread_local! {
        static CURRENT: Cell<*const Worker> = const { Cell::new(core::ptr::null()) };
    }

    // Never inlined: a strand may resume on another thread (core) after a
    // switch, and a thread-local's address computed before the switch and
    // kept in a register would then be the old thread's.
    #[inline(never)]
    pub(super) fn get() -> *const Worker {
        CURRENT.with(Cell::get)
    }

    #[inline(never)]
    pub(super) fn set(worker: *const Worker) -> *const Worker {
        CURRENT.with(|current| current.replace(worker))
    }

    /// The host delivers no interrupts to cores: the same as [`get`].
    pub(super) fn get_outside_interrupt() -> *const Worker {
        get()
    }
}

#[cfg(not(feature = "std"))]
mod slot {
    use super::Worker;
    use crate::atomics::unmodelled::{AtomicPtr, Ordering::Relaxed};
    use crate::platform;
    use core::ptr;

    /// Core indices a bare-metal pool may use.
    pub(crate) const SLOTS: usize = 1024;

    static CURRENT: [AtomicPtr<Worker>; SLOTS] = [const { AtomicPtr::new(ptr::null_mut()) }; SLOTS];

    pub(super) fn get() -> *const Worker {
        at(platform::current_core())
    }

    /// [`get`], or null in an interrupt handler: one question to the
    /// platform for both.
    #[inline]
    pub(super) fn get_outside_interrupt() -> *const Worker {
        at(platform::current_core_outside_interrupt())
    }

    /// The worker of `core`, if any.
    #[inline]
    fn at(core: Option<usize>) -> *const Worker {
        match core {
            Some(core) if core < SLOTS => CURRENT[core].load(Relaxed),
            _ => ptr::null(),
        }
    }

    pub(super) fn set(worker: *const Worker) -> *const Worker {
        let core = platform::current_core().expect("a worker runs on a core");
        CURRENT[core].swap(worker.cast_mut(), Relaxed)
    }
}

#[cfg(not(feature = "std"))]
pub(crate) use slot::SLOTS;

/// The most cores a pool may have on this build, given `available`.
pub(crate) fn limit(available: usize) -> usize {
    #[cfg(not(feature = "std"))]
    return available.min(slot::SLOTS);
    #[cfg(feature = "std")]
    return available;
}

/// Makes `worker` the calling core's worker until the guard drops.
///
/// # Safety
///
/// `worker` outlives the guard, and guards are dropped in reverse order.
pub(crate) unsafe fn enter(worker: &Worker) -> Entered {
    Entered { previous: slot::set(worker) }
}

impl Drop for Entered {
    fn drop(&mut self) {
        slot::set(self.previous);
    }
}

/// Calls `f` with the calling core's worker, if it is one. An interrupt
/// handler is no worker, even on a pool's core: it reaches pools as code
/// outside them does, through mailboxes, and never touches the queues or
/// the running strand of the code it interrupted. (The host delivers no
/// interrupts to cores, so only bare metal asks.)
#[inline]
pub(crate) fn with<R>(f: impl FnOnce(Option<&Worker>) -> R) -> R {
    if !crate::preempt::deferral::any_pool_preempts() {
        // No strand can be preempted (`preempt::defer` says why), so none
        // moves while `f` runs. Apart from the path below because a
        // deferral's guard around every join, even a guard that does
        // nothing, cost 9 ns of the 25 a join took on the host.
        // SAFETY: nothing is moved, and an interrupt handler finds no
        // worker through this look.
        return unsafe { with_held(f) };
    }
    with_deferred(f)
}

/// [`with`] for a caller that cannot be moved to another core while `f`
/// runs, so it takes no deferral.
///
/// An interrupt handler is told it is no worker, as by [`with`].
///
/// # Safety
///
/// The caller holds a deferral, or is no strand, or no pool preempts: it
/// is never moved while `f` runs.
#[inline]
pub(crate) unsafe fn with_held<R>(f: impl FnOnce(Option<&Worker>) -> R) -> R {
    // SAFETY: a non-null slot points at a live `Worker` (contract of
    // `enter`), used only on the core that set it, which is ours until `f`
    // returns (contract).
    f(unsafe { slot::get_outside_interrupt().as_ref() })
}

/// [`with`] for a strand that may be preempted.
#[inline(never)]
fn with_deferred<R>(f: impl FnOnce(Option<&Worker>) -> R) -> R {
    // A strand must not move to another core while `f` uses this one's.
    // An interrupt handler has no worker, and nothing to defer.
    #[cfg(not(feature = "std"))]
    if crate::platform::in_interrupt() {
        return f(None);
    }
    let _deferral = crate::preempt::deferral::defer();
    // SAFETY: a non-null slot points at a live `Worker` (contract of
    // `enter`), used only on the core that set it.
    f(unsafe { slot::get().as_ref() })
}

/// The pool and core index of the core an interrupt handler interrupted,
/// if that core is a pool's: for the time slice's tick (`crate::preempt`),
/// which looks at the strand it interrupted and nothing else.
pub(crate) fn interrupted_worker() -> Option<(PoolRef<'static>, usize)> {
    // SAFETY: as in `with`; the pool outlives its time as the core's
    // worker, and the tick uses the view only before it returns.
    unsafe { slot::get().as_ref() }.map(|worker| (worker.pool(), worker.core))
}

/// Records `event` for the core an interrupt handler runs on, if that core
/// works for a pool (`crate::trace::interrupt_begins`): an interrupt
/// handler is no worker, but the core it interrupted may be one.
#[cfg(feature = "trace")]
pub(crate) fn trace_interrupted(event: crate::trace::event::TraceEvent) {
    if let Some((pool, core)) = interrupted_worker() {
        pool.record_trace(core, event);
    }
}

/// Records `event` for the calling core, if it is a worker of a pool
/// (`trace_here!`).
#[cfg(feature = "trace")]
pub(crate) fn trace_here(event: crate::trace::event::TraceEvent) {
    with(|worker| {
        if let Some(worker) = worker {
            worker.pool().record_trace(worker.core, event);
        }
    });
}

//! A panic in a task's poll on bare metal, contained: the task fails, its
//! handle gives [`TaskError::Failed`](super::TaskError::Failed), and the
//! core goes on with its other work, as it does when a strand panics.
//!
//! On the host the poll runs under `catch_unwind`. Bare metal does not
//! unwind, and a poll runs on the core's own stack, not a fibre that could
//! be abandoned. So each poll runs under a catch point on that stack
//! (`context::catch`), one per core; the kernel's panic handler calls
//! [`fail_running_task`], which records the failure and throws back to it.
//!
//! The frames of the failed poll are abandoned, not unwound, so nothing in
//! them is dropped. Neither is the future: it may have been interrupted
//! halfway through changing itself, and what it had lent out (a waiter
//! record queued in a `sync` object, a timer entry) must stay where the
//! lender points. The task's allocation is kept for ever (leaked, a few
//! hundred bytes), and whatever the future held (an async mutex guard, a
//! permit) stays held.

use crate::atomics::unmodelled::{AtomicBool, AtomicPtr, Ordering::Relaxed};
use crate::context::catch::{CatchSlot, catching, throw};
use crate::platform;
use crate::pool::current::SLOTS;
use crate::strand::{Failure, FailureKind, Location};
use alloc::boxed::Box;
use core::ptr;

/// Each core's catch point while it polls a task.
static CATCH: [CatchSlot; SLOTS] = [const { CatchSlot::new() }; SLOTS];
/// The failure a thrown poll ends with, per core.
static FAILED: [AtomicPtr<Failure>; SLOTS] = [const { AtomicPtr::new(ptr::null_mut()) }; SLOTS];
/// Set while a core builds a failure: a panic then is not contained.
static FAILING: [AtomicBool; SLOTS] = [const { AtomicBool::new(false) }; SLOTS];

fn this_core() -> Option<usize> {
    platform::current_core().filter(|&core| core < SLOTS)
}

/// Runs a poll (`f`) so that a panic in it fails the task. `Err` with the
/// failure if it panicked: the future must then be leaked, not dropped
/// (module docs).
pub(super) fn catching_panic<R>(f: impl FnOnce() -> R) -> Result<R, Failure> {
    let Some(core) = this_core().filter(|&core| !CATCH[core].is_set()) else { return Ok(f()) };
    match catching(&CATCH[core], f) {
        Some(value) => Ok(value),
        None => {
            FAILING[core].store(false, Relaxed);
            let failure = FAILED[core].swap(ptr::null_mut(), Relaxed);
            // SAFETY: stored by `fail_running_task` from a `Box`, taken once.
            Err(*unsafe { Box::from_raw(failure) })
        }
    }
}

/// Whether this core is polling a task now (and not in an interrupt
/// handler, whose panic is its own): what a panic handler asks before it
/// reports a task's failure and calls [`fail_running_task`].
pub fn running_task() -> bool {
    !platform::in_interrupt()
        && this_core().is_some_and(|core| CATCH[core].is_set() && !FAILING[core].load(Relaxed))
}

/// Fails the async task this core is polling with the panic `info`: its
/// handle gets [`TaskError::Failed`](super::TaskError::Failed), and the
/// core goes back to its loop. Returns only if no task is being polled
/// here (see [`running_task`]), or if this panic came while a task's
/// failure was being made (out of memory): then the panic is the
/// caller's to handle.
///
/// This is what a bare-metal `#[panic_handler]` calls after
/// [`strand::fail_running`](crate::strand::fail_running): a panic in a
/// task stops that task, not its core. The task's future is leaked, not
/// dropped (nothing unwinds on bare metal).
pub fn fail_running_task(info: &core::panic::PanicInfo<'_>) {
    if !running_task() {
        return;
    }
    let Some(core) = this_core() else { return };
    FAILING[core].store(true, Relaxed);
    let failure = Box::new(Failure::new(
        FailureKind::Panicked,
        alloc::format!("{}", info.message()),
        info.location().map(Location::from),
        None,
    ));
    FAILED[core].store(Box::into_raw(failure), Relaxed);
    // SAFETY: this core's catch point is set, so a poll runs under it on
    // this stack, and the panic handler runs below it; the poll's frames
    // are not used again (module docs).
    unsafe { throw(&CATCH[core]) }
}

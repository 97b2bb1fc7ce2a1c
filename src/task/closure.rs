//! Work that runs once as a task: closures, and the crate's own kinds
//! (actor turns).
//!
//! Small work lives in one storage block together with its header (the
//! common case: a few captured words); see [`boxed`].

use super::boxed::{self, Boxed};
use super::storage::BlockCache;
use super::{Action, IntoTask, Task};
use core::ptr::NonNull;

/// Work a task runs once. Discarding it (the pool shut down first) drops
/// it unrun.
pub(crate) trait RunOnce: Send + 'static {
    /// Does the work.
    fn run_once(self);
}

/// A closure to be run as a task.
pub(crate) struct Closure<F>(pub(crate) F);

impl<F: FnOnce() + Send + 'static> RunOnce for Closure<F> {
    fn run_once(self) {
        (self.0)()
    }
}

impl<W: RunOnce> IntoTask for W {
    fn into_task(self, cache: Option<&mut BlockCache>) -> Result<NonNull<Task>, Self> {
        boxed::new(Task::new(call::<W>), self, cache).map(NonNull::cast)
    }

    unsafe fn from_task(task: NonNull<Task>, cache: Option<NonNull<BlockCache>>) -> Self {
        // SAFETY: forwarded contract: made by `into_task` with this `W`.
        unsafe { boxed::take(task.cast::<Boxed<Task, W>>(), cache) }
    }
}

/// The `TaskFn` of a run-once task: frees the storage first (so work that
/// posts more tasks can reuse the block at once), then runs or drops it.
///
/// # Safety
///
/// As for [`TaskFn`](super::TaskFn); `task` was made by
/// [`IntoTask::into_task`] with this `W`.
unsafe fn call<W: RunOnce>(task: NonNull<Task>, action: Action, cache: NonNull<BlockCache>) {
    // SAFETY: forwarded contract.
    let work = unsafe { W::from_task(task, Some(cache)) };
    match action {
        Action::Run => work.run_once(),
        Action::Discard => drop(work),
    }
}

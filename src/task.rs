//! Tasks: the unit every core runs.
//!
//! A task is a header (a `next` link and one function pointer) at the start
//! of some storage; running it is one indirect call. Closures become tasks
//! in [`closure`]; later layers (strands, actor turns) embed the same header
//! in their own structures. The header's link lets a task sit in exactly one
//! list at a time without any allocation: a mailbox, the injector, a core's
//! local queue, or (as freed storage) a free list.

// Storage for work, used by the pool (not built under loom).
#[cfg(not(loom))]
pub mod boxed;
#[cfg(not(loom))]
pub mod closure;
pub mod queue;
pub mod storage;

use core::cell::UnsafeCell;
use core::ptr::{self, NonNull};
use storage::BlockCache;

/// Work that travels as a task and, if a queue refuses it, comes back
/// whole, so it can be returned to whoever gave it.
#[cfg(not(loom))]
pub(crate) trait IntoTask: Sized {
    /// Makes the task, in `cache`'s storage where it fits. Gives the work
    /// back if memory is exhausted.
    fn into_task(self, cache: Option<&mut BlockCache>) -> Result<NonNull<Task>, Self>;

    /// Takes back a task that was refused, freeing its storage.
    ///
    /// # Safety
    ///
    /// `task` was made by [`IntoTask::into_task`] of this type, was never
    /// run, and is owned by the caller, who never touches it again;
    /// `cache` is as for [`boxed::take`].
    unsafe fn from_task(task: NonNull<Task>, cache: Option<NonNull<BlockCache>>) -> Self;
}

/// What the core wants done with a task it hands to [`Task::call`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Run it, then release its storage.
    Run,
    /// Do not run it: drop what it owns and release its storage (the pool
    /// is shutting down and this task was never started).
    Discard,
}

/// The function behind a task. It receives the calling core's block cache
/// so the task can give its storage back without a lock. The cache comes as
/// a pointer, not a reference, because the task may post more tasks (which
/// borrows the cache again) once it has released its own block.
///
/// # Safety
///
/// Called at most once per enqueued task, on the core that owns `cache`,
/// with `task` pointing at the header the function was installed in.
pub type TaskFn = unsafe fn(task: NonNull<Task>, action: Action, cache: NonNull<BlockCache>);

/// The intrusive header at the start of every task.
#[repr(C)]
pub struct Task {
    /// The next task in whichever single list holds this one. Written only
    /// by the task's current owner before it publishes the task (with a
    /// release operation on the list head), read only after an acquire.
    next: UnsafeCell<*mut Task>,
    call: TaskFn,
}

impl Task {
    /// A header that runs `call`, linked to nothing.
    pub const fn new(call: TaskFn) -> Self {
        Self { next: UnsafeCell::new(ptr::null_mut()), call }
    }

    /// The link of `task`.
    ///
    /// # Safety
    ///
    /// `task` is a live header owned by the caller (not yet published, or
    /// taken out of a list by the caller).
    #[inline]
    pub unsafe fn next(task: NonNull<Task>) -> *mut Task {
        // SAFETY: the caller owns the header, so nobody writes the link now.
        // A raw read: free storage blocks reuse only this first word.
        unsafe { (&raw const (*task.as_ptr()).next).cast::<*mut Task>().read() }
    }

    /// Sets the link of `task`.
    ///
    /// # Safety
    ///
    /// As for [`Task::next`].
    #[inline]
    pub unsafe fn set_next(task: NonNull<Task>, next: *mut Task) {
        // SAFETY: the caller owns the header, so nobody reads the link now.
        // A raw write: the header may be uninitialised storage being linked
        // into a free list.
        unsafe { (&raw mut (*task.as_ptr()).next).cast::<*mut Task>().write(next) }
    }

    /// Runs or discards `task`: one indirect call.
    ///
    /// # Safety
    ///
    /// `task` was taken out of a list by the caller, which now owns it, and
    /// is never touched again afterwards; `cache` belongs to the calling core.
    #[inline]
    pub unsafe fn call(task: NonNull<Task>, action: Action, cache: NonNull<BlockCache>) {
        // SAFETY: the header is live and owned by the caller.
        let call = unsafe { (*task.as_ptr()).call };
        // SAFETY: forwarded from this function's contract.
        unsafe { call(task, action, cache) }
    }
}

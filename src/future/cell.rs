//! A future's one allocation: the task that computes the result, the
//! result itself, and whoever waits for it.
//!
//! The cell *is* the message sent to the core: its first field is the
//! task header, so posting it queues the cell itself, with no second
//! block. The work runs there and leaves its result in the same cell,
//! where every handle reads it.
//!
//! # Completing and waiting
//!
//! The task writes the result, then, under the waiters' lock, raises
//! `ready` and takes every waiter: strands blocked in `wait`, async
//! wakers, and continuations (`then`). A waiter registers under the same
//! lock unless it finds `ready` raised, so no waiter is missed. Readers
//! that see `ready` (with acquire) see the result.

use super::FutureError;
use crate::atomics::unmodelled::{AtomicBool, Ordering::*};
use crate::spin_lock::SpinLock;
use crate::strand::BlockReason;
use crate::strand::wait::{self, WaitQueue};
use crate::sync::WaitError;
use crate::task::storage::BlockCache;
use crate::task::{Action, IntoTask, Task};
use alloc::boxed::Box;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::cell::UnsafeCell;
use core::mem::{self, ManuallyDrop};
use core::ptr::NonNull;
use core::task::Waker;

/// The work a future's task does once.
pub(crate) trait Work<T>: Send + 'static {
    fn run(self) -> Result<T, FutureError>;
}

/// What a `.then` leaves with the future it follows.
type Continuation = Box<dyn FnOnce(bool) + Send>;

/// Who waits, guarded by the header's lock.
struct Waiters {
    ready: bool,
    strands: WaitQueue,
    wakers: Vec<Waker>,
    /// The first continuation to start once the result is there, told
    /// whether the future broke. Kept apart from the rest: a chain of
    /// `.then`s has one per future, and a vector for it would be one more
    /// allocation, freed on another core, per hop.
    first_then: Option<Continuation>,
    /// Any further continuations, in the order they were added.
    more_then: Vec<Continuation>,
}

/// What every handle of one future reads: the result and its waiters.
pub(crate) struct FutureHeader<T> {
    ready: AtomicBool,
    waiters: SpinLock<Waiters>,
    /// Written once by the task before `ready`; then read by handles.
    result: UnsafeCell<Option<Result<T, FutureError>>>,
}

// SAFETY: the result is written once before `ready` is published (release)
// and read after it is seen (acquire); `T: Send` lets it be taken on
// another core, and shared handles only hand out `&T` when `T: Sync`.
unsafe impl<T: Send> Send for FutureHeader<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for FutureHeader<T> {}

impl<T> FutureHeader<T> {
    fn new() -> Self {
        Self {
            ready: AtomicBool::new(false),
            waiters: SpinLock::new(Waiters {
                ready: false,
                strands: WaitQueue::new(),
                wakers: Vec::new(),
                first_then: None,
                more_then: Vec::new(),
            }),
            result: UnsafeCell::new(None),
        }
    }

    pub(crate) fn is_ready(&self) -> bool {
        self.ready.load(Acquire)
    }

    /// Stores the result and wakes every waiter. Called once, by the task
    /// (or by its drop if it never runs).
    fn complete(&self, result: Result<T, FutureError>) {
        let broken = result.is_err();
        // SAFETY: only the one task writes, and nobody reads before `ready`.
        unsafe { *self.result.get() = Some(result) };
        let (wakers, first, more) = {
            let mut waiters = self.waiters.lock();
            waiters.ready = true;
            self.ready.store(true, Release);
            waiters.strands.wake_all();
            (mem::take(&mut waiters.wakers), waiters.first_then.take(), mem::take(&mut waiters.more_then))
        };
        trace_here!(crate::trace::event::TraceEvent::FutureCompleted { broken });
        wakers.into_iter().for_each(Waker::wake);
        first.into_iter().chain(more).for_each(|start| start(broken));
    }

    /// Registers `waker` to be woken when ready; `false` if it is ready.
    pub(crate) fn register(&self, waker: &Waker) -> bool {
        let mut waiters = self.waiters.lock();
        if waiters.ready {
            return false;
        }
        if !waiters.wakers.iter().any(|w| w.will_wake(waker)) {
            waiters.wakers.push(waker.clone());
        }
        true
    }

    /// Runs `start` once the result is there: now, or from the task that
    /// completes it. It is told whether the future broke.
    pub(crate) fn on_ready(&self, start: Continuation) {
        let mut waiters = self.waiters.lock();
        if waiters.ready {
            drop(waiters);
            start(matches!(self.get(), Some(Err(_))));
        } else if waiters.first_then.is_none() {
            waiters.first_then = Some(start);
        } else {
            waiters.more_then.push(start);
        }
    }

    /// Blocks the calling strand until the result is there. A cancel
    /// that comes as the result does loses to it: the waiter learns what
    /// happened to the work (its value, or that it broke).
    pub(crate) fn wait(&self) -> Result<(), WaitError> {
        if self.is_ready() {
            return Ok(());
        }
        let waited = wait::wait_in(&self.waiters, BlockReason::Future, None, |w| &mut w.strands, |w| w.ready);
        if self.is_ready() { Ok(()) } else { waited }
    }

    /// The result, once ready.
    pub(crate) fn get(&self) -> Option<&Result<T, FutureError>> {
        // SAFETY: seen ready (acquire), so written once and never again.
        self.is_ready().then(|| unsafe { (*self.result.get()).as_ref() }).flatten()
    }

    /// Moves the result out, once ready.
    ///
    /// # Safety
    ///
    /// The caller is the only handle that reads the result.
    pub(crate) unsafe fn take(&self) -> Option<Result<T, FutureError>> {
        // SAFETY: ready, so the task is done with it; exclusive (contract).
        self.is_ready().then(|| unsafe { (*self.result.get()).take() }).flatten()
    }
}

/// A handle's view of a cell, whatever its work.
pub(crate) trait ResultSlot<T>: Send + Sync {
    fn header(&self) -> &FutureHeader<T>;
}

/// The cell: the task header first, so the cell is the task.
#[repr(C)]
pub(crate) struct FutureCell<W, T> {
    task: Task,
    header: FutureHeader<T>,
    work: UnsafeCell<Option<W>>,
}

// SAFETY: the task header's link is written only by whoever holds the
// task in a list; the work is touched only by whoever owns the task (the
// core that runs it, or the sender it was refused to); the header is
// `Sync`.
unsafe impl<W: Send, T: Send> Sync for FutureCell<W, T> {}
// SAFETY: as above; the work and the result are `Send`.
unsafe impl<W: Send, T: Send> Send for FutureCell<W, T> {}

impl<W: Work<T>, T: Send + 'static> ResultSlot<T> for FutureCell<W, T> {
    fn header(&self) -> &FutureHeader<T> {
        &self.header
    }
}

impl<W: Work<T>, T: Send + 'static> FutureCell<W, T> {
    pub(crate) fn new(work: W) -> Arc<Self> {
        Arc::new(Self {
            task: Task::new(call::<W, T>),
            header: FutureHeader::new(),
            work: UnsafeCell::new(Some(work)),
        })
    }
}

/// The cell, travelling as its task. Dropped without running (refused, or
/// discarded at a shutdown), it breaks the future.
pub(crate) struct Run<W: Work<T>, T: Send + 'static>(pub(crate) Arc<FutureCell<W, T>>);

impl<W: Work<T>, T: Send + 'static> Run<W, T> {
    /// Takes the work back out of a task that was refused.
    pub(crate) fn into_work(self) -> W {
        // SAFETY: a refused task is owned by the caller; nothing else
        // touches the work.
        let work = unsafe { (*self.0.work.get()).take() };
        work.expect("the work is taken once")
    }

    fn run(self) {
        let this = ManuallyDrop::new(self);
        // SAFETY: moved out of the `ManuallyDrop` once; it is not used again.
        let cell = unsafe { core::ptr::read(&this.0) };
        // SAFETY: the running task owns the work.
        let work = unsafe { (*cell.work.get()).take() };
        let Some(work) = work else { return };
        run_catching_panic(work, |result| cell.header.complete(result));
    }
}

/// Runs `work` and hands its result to `complete`. On the host a panic in
/// it is recorded as the pool's failure and the pool refuses work *before*
/// the future breaks, so whoever sees it broken also sees the pool stopped
/// (a post then fails) and the panic recorded; and it breaks *before* the
/// wind-down cancels the pool's strands, so a strand waiting for it wakes
/// to `Broken`, the cause, not to the cancel. Bare metal does not unwind:
/// the kernel's panic handler deals with it.
fn run_catching_panic<W: Work<T>, T>(work: W, complete: impl FnOnce(Result<T, FutureError>)) {
    #[cfg(feature = "std")]
    match std::panic::catch_unwind(core::panic::AssertUnwindSafe(|| work.run())) {
        Ok(result) => complete(result),
        Err(payload) => crate::pool::task_panicked(payload, || complete(Err(FutureError::Broken))),
    }
    #[cfg(not(feature = "std"))]
    complete(work.run());
}

impl<W: Work<T>, T: Send + 'static> Drop for Run<W, T> {
    fn drop(&mut self) {
        // Never run. A work taken back by `into_work` belongs to a future
        // nobody holds; breaking it is harmless.
        // SAFETY: the owner of the task owns the work.
        drop(unsafe { (*self.0.work.get()).take() });
        self.0.header.complete(Err(FutureError::Broken));
    }
}

impl<W: Work<T>, T: Send + 'static> IntoTask for Run<W, T> {
    fn into_task(self, _: Option<&mut BlockCache>) -> Result<NonNull<Task>, Self> {
        let this = ManuallyDrop::new(self);
        // SAFETY: moved out of the `ManuallyDrop` once.
        let cell = unsafe { core::ptr::read(&this.0) };
        // The cell's first field is its task header (`repr(C)`).
        Ok(NonNull::new(Arc::into_raw(cell).cast_mut()).expect("an Arc is never null").cast())
    }

    unsafe fn from_task(task: NonNull<Task>, _: Option<NonNull<BlockCache>>) -> Self {
        // SAFETY: made by `into_task` from an `Arc` of this cell type.
        Run(unsafe { Arc::from_raw(task.cast::<FutureCell<W, T>>().as_ptr()) })
    }
}

/// The `TaskFn` of a future's cell.
///
/// # Safety
///
/// As for [`TaskFn`](crate::task::TaskFn); `task` was made by
/// [`Run::into_task`] with these types.
unsafe fn call<W: Work<T>, T: Send + 'static>(
    task: NonNull<Task>,
    action: Action,
    cache: NonNull<BlockCache>,
) {
    // SAFETY: forwarded contract.
    let run = unsafe { Run::<W, T>::from_task(task, Some(cache)) };
    match action {
        Action::Run => run.run(),
        Action::Discard => drop(run),
    }
}

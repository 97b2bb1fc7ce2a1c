//! An async task's one allocation: the header every core, waker and
//! handle reaches it by, the output, and the future.
//!
//! The header starts with the scheduler's task header, so the task itself
//! is what travels through the mailboxes and run queues: a wake queues the
//! allocation it already has and allocates nothing. The output comes
//! right after the header, at an offset that depends only on the output's
//! type ([`Head`]), so a [`TaskHandle`](super::TaskHandle) reads it
//! without knowing the future's type.

use super::TaskError;
use crate::atomics::unmodelled::AtomicUsize;
use crate::atomics::unmodelled::Ordering::Relaxed;
use crate::pool::Pool;
use crate::pool::async_tasks::{AsyncOps, LiveLink};
#[cfg(not(feature = "std"))]
use crate::pool::contain;
#[cfg(feature = "std")]
use crate::pool::polling;
use crate::pool::seam::PoolRef;
use crate::protocol::async_state::{AfterPending, AsyncState, Start, Wake};
use crate::spin_lock::SpinLock;
use crate::strand::Failure;
#[cfg(not(feature = "std"))]
use crate::strand::lock::refuse_locks;
use crate::strand::lock::{Poller, TaskLocks, forget_locks};
use crate::task::storage::BlockCache;
use crate::task::{Action, Task};
use alloc::boxed::Box;
use core::cell::UnsafeCell;
use core::future::Future;
use core::mem::ManuallyDrop;
use core::pin::Pin;
use core::ptr::{self, NonNull};
use core::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};

/// `pin` of a task any core may run.
pub(super) const UNPINNED: usize = usize::MAX;

/// What code that knows only the header needs from the future's type.
pub(super) struct Vtable {
    /// Drops the stored output (nobody will read it).
    drop_output: unsafe fn(NonNull<AsyncHeader>),
    /// Drops the future, storing [`TaskError::Stopped`] as the output.
    abandon: unsafe fn(NonNull<AsyncHeader>),
    /// Frees the allocation.
    free: unsafe fn(NonNull<AsyncHeader>),
}

/// The [`Vtable`] of future `F`, as a constant so a `'static` reference
/// to it is free.
struct VtableOf<F>(core::marker::PhantomData<F>);

impl<F: Future> VtableOf<F> {
    const VTABLE: Vtable =
        Vtable { drop_output: drop_output::<F>, abandon: abandon_stopped::<F>, free: free::<F> };
}

/// The part of every task that is the same whatever its future.
#[repr(C)]
pub(crate) struct AsyncHeader {
    /// First: the task is its own queue node.
    task: Task,
    /// Second, where a mutex finds it from the task alone
    /// (`strand::lock::task_locks`): the task's async mutex locks.
    locks: TaskLocks,
    pub(super) state: AsyncState,
    vtable: &'static Vtable,
    /// The pool, held until the task is freed, so a late waker never finds
    /// it gone.
    pool: ManuallyDrop<Pool>,
    /// The core that last polled it: a wake sends it back there.
    home: AtomicUsize,
    pin: usize,
    /// The handle's waker, woken when the task completes.
    pub(super) join: SpinLock<Option<Waker>>,
    /// Its place in the pool's list of live tasks (`crate::pool::async_tasks`).
    live: LiveLink,
}

const _: () = assert!(
    core::mem::offset_of!(AsyncHeader, locks) == size_of::<Task>(),
    "an async task's TaskLocks come right after its Task (strand::lock::task_locks)"
);

/// The header and the output: all a handle of output `T` reads.
#[repr(C)]
pub(super) struct Head<T> {
    pub(super) header: AsyncHeader,
    /// Written by the task's poller before `DONE`; then the handle's, or
    /// dropped by the poller if there is no handle.
    pub(super) output: UnsafeCell<Option<Result<T, TaskError>>>,
}

/// The whole allocation.
#[repr(C)]
struct Cell<F: Future> {
    head: Head<F::Output>,
    /// Present until the task completes; touched only by its poller.
    future: UnsafeCell<Option<F>>,
}

impl AsyncHeader {
    pub(super) fn pool(&self) -> PoolRef<'_> {
        self.pool.pool_ref()
    }

    pub(super) fn pinned(&self) -> Option<usize> {
        (self.pin != UNPINNED).then_some(self.pin)
    }

    /// The task as the scheduler's queues see it.
    pub(super) fn as_task(header: NonNull<AsyncHeader>) -> NonNull<Task> {
        header.cast()
    }

    /// The task's link in its pool's list of live tasks, as a pointer the
    /// list may hand back to [`AsyncHeader::from_live`]: derived from the
    /// header's pointer, so its provenance covers the whole allocation.
    pub(super) fn live(header: NonNull<AsyncHeader>) -> NonNull<LiveLink> {
        // SAFETY: a field of a live header; in bounds, so not null.
        unsafe { NonNull::new_unchecked(&raw mut (*header.as_ptr()).live) }
    }

    /// The header whose link is `link`.
    fn from_live(link: NonNull<LiveLink>) -> NonNull<AsyncHeader> {
        // SAFETY: the list holds only links made by `live`, so `link` points
        // into a header, `offset_of` bytes in.
        unsafe { link.byte_sub(core::mem::offset_of!(AsyncHeader, live)).cast() }
    }
}

/// What a pool's list of live tasks does to a task (`AsyncOps`). The list
/// calls each on a live task it holds a reference to.
pub(super) static ASYNC_OPS: AsyncOps = AsyncOps {
    // SAFETY: live while the list's reference is.
    acquire: |link| unsafe { AsyncHeader::from_live(link).as_ref() }.state.acquire(),
    // SAFETY: the list gives up its reference, as `release` asks.
    release: |link| unsafe { release(AsyncHeader::from_live(link)) },
    // SAFETY: a live task, as `cancel` asks.
    cancel: |link| unsafe { cancel(AsyncHeader::from_live(link)) },
    // SAFETY: the list calls it only as `LiveTasks::tear_down`'s contract
    // allows: nothing else polls the task.
    tear_down: |link| unsafe { tear_down(AsyncHeader::from_live(link)) },
};

/// Makes a task of `future` for `shared`, queued on nothing yet, with
/// three references: its handle's, the pool's list's and the first run
/// queue's. `None` if memory ran out (the future comes back).
pub(super) fn allocate<F>(
    future: F,
    pool: &Pool,
    pin: usize,
    home: usize,
    shard: usize,
) -> Result<NonNull<AsyncHeader>, F>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let layout = core::alloc::Layout::new::<Cell<F>>();
    // SAFETY: the layout has a non-zero size (it holds a header).
    let Some(memory) = NonNull::new(unsafe { alloc::alloc::alloc(layout) }.cast::<Cell<F>>()) else {
        return Err(future);
    };
    let header = AsyncHeader {
        task: Task::new(run::<F>),
        locks: TaskLocks::new(),
        state: AsyncState::new(3),
        vtable: &VtableOf::<F>::VTABLE,
        pool: ManuallyDrop::new(pool.clone()),
        home: AtomicUsize::new(home),
        pin,
        join: SpinLock::new(None),
        live: LiveLink::new(shard),
    };
    let cell =
        Cell { head: Head { header, output: UnsafeCell::new(None) }, future: UnsafeCell::new(Some(future)) };
    // SAFETY: fresh memory with this layout.
    unsafe { memory.write(cell) };
    Ok(memory.cast())
}

/// Takes the future back out of a task that was never queued, and frees
/// it.
///
/// # Safety
///
/// The caller holds every reference (it has just made the task, which
/// was refused), and the future's type is `F`.
pub(super) unsafe fn take_back<F: Future>(header: NonNull<AsyncHeader>) -> F {
    let cell = header.cast::<Cell<F>>();
    // SAFETY: a task nobody else knows of (contract); read once.
    let future = unsafe { (*(*cell.as_ptr()).future.get()).take() };
    // SAFETY: as above; nothing is stored in the output yet.
    unsafe { free::<F>(header) };
    future.expect("a task never queued still has its future")
}

/// Drops a reference; the last frees the task.
///
/// # Safety
///
/// The caller holds a reference to the live task and gives it up.
pub(super) unsafe fn release(header: NonNull<AsyncHeader>) {
    // SAFETY: live while the caller's reference is (contract).
    let header_ref = unsafe { header.as_ref() };
    if header_ref.state.release() {
        // SAFETY: the last reference: nobody else can reach it.
        unsafe { (header_ref.vtable.free)(header) };
    }
}

/// Frees the allocation.
///
/// # Safety
///
/// The caller gives up the last reference; the future's type is `F`.
unsafe fn free<F: Future>(header: NonNull<AsyncHeader>) {
    let cell = header.cast::<Cell<F>>();
    // SAFETY: the last reference (caller's contract), so ours alone; the
    // pool's reference is dropped once, here.
    unsafe {
        ManuallyDrop::drop(&mut (*cell.as_ptr()).head.header.pool);
        ptr::drop_in_place(cell.as_ptr());
        alloc::alloc::dealloc(cell.as_ptr().cast(), core::alloc::Layout::new::<Cell<F>>());
    }
}

/// Drops the stored output.
///
/// # Safety
///
/// The task is done and the caller owns its output: the handle is gone,
/// or the caller is the handle. The future's type is `F`.
unsafe fn drop_output<F: Future>(header: NonNull<AsyncHeader>) {
    let cell = header.cast::<Cell<F>>();
    // SAFETY: the caller owns the output (the handle is gone and the task
    // is done, or it is the handle and the task is done).
    let output = unsafe { (*(*cell.as_ptr()).head.output.get()).take() };
    // SAFETY: live: the caller holds a reference.
    drop_output_value(unsafe { header.as_ref() }, output);
}

/// Drops an output nobody will read; a failure in it becomes the pool's,
/// as a strand's that nobody joins does.
pub(super) fn drop_output_value<T>(header: &AsyncHeader, output: Option<Result<T, TaskError>>) {
    if let Some(Err(TaskError::Failed(failure))) = output {
        header.pool().fail(Some(Box::new(failure)));
    }
}

/// Queues the task on the core that last polled it (through the
/// mailboxes), or on its pinned core. The caller won the wake and gives
/// the queue its reference. If the pool has stopped, the task stays
/// where it is for the pool's tear-down, and the reference is dropped.
///
/// # Safety
///
/// The caller holds the reference the wake added.
// Out of line: a wake that finds the task queued or being polled (the
// common case in a busy pool) then saves no registers for this.
#[inline(never)]
pub(super) unsafe fn schedule(header: NonNull<AsyncHeader>) {
    // SAFETY: live while the caller's reference is.
    let header_ref = unsafe { header.as_ref() };
    let to = header_ref.pinned().unwrap_or_else(|| header_ref.home.load(Relaxed));
    let shared = header_ref.pool();
    if !shared.schedule_fibre(AsyncHeader::as_task(header), to, header_ref.pinned().is_some()) {
        // SAFETY: refused: the reference is still the caller's.
        unsafe { release(header) };
    }
}

/// A wake by reference: what every waker of the task does.
///
/// # Safety
///
/// `header` is live (the caller holds a reference).
#[inline]
pub(super) unsafe fn wake(header: NonNull<AsyncHeader>) {
    // SAFETY: live (contract).
    if unsafe { header.as_ref() }.state.wake() == Wake::Queue {
        // SAFETY: the wake added the reference the queue now owns.
        unsafe { schedule(header) };
    }
}

/// Cancels the task (see `state`).
///
/// # Safety
///
/// As for [`wake`].
pub(super) unsafe fn cancel(header: NonNull<AsyncHeader>) {
    // SAFETY: live (contract).
    if unsafe { header.as_ref() }.state.cancel() == Wake::Queue {
        // SAFETY: the cancel added the reference the queue now owns.
        unsafe { schedule(header) };
    }
}

static WAKER: RawWakerVTable = RawWakerVTable::new(waker_clone, waker_wake, waker_wake_by_ref, waker_drop);

unsafe fn waker_clone(data: *const ()) -> RawWaker {
    // SAFETY: the waker being cloned holds a reference.
    unsafe { (*data.cast::<AsyncHeader>()).state.acquire() };
    RawWaker::new(data, &WAKER)
}

unsafe fn waker_wake(data: *const ()) {
    // SAFETY: the waker's own reference, given up after the wake.
    unsafe {
        waker_wake_by_ref(data);
        waker_drop(data);
    }
}

unsafe fn waker_wake_by_ref(data: *const ()) {
    // SAFETY: the waker holds a reference.
    unsafe { wake(NonNull::new_unchecked(data.cast_mut().cast())) }
}

unsafe fn waker_drop(data: *const ()) {
    // SAFETY: the waker's own reference.
    unsafe { release(NonNull::new_unchecked(data.cast_mut().cast())) }
}

/// The `TaskFn` of a task of future `F`: poll it, or (the pool is
/// stopping) drop it.
///
/// # Safety
///
/// As for [`TaskFn`](crate::task::TaskFn): the caller took the task out
/// of a queue and holds the queue's reference.
unsafe fn run<F>(task: NonNull<Task>, action: Action, cache: NonNull<BlockCache>)
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    // SAFETY: the calling core's cache (contract), read for its index.
    let me = unsafe { cache.as_ref() }.core();
    let header = task.cast::<AsyncHeader>();
    // SAFETY: the queue's reference keeps it live.
    let header_ref = unsafe { header.as_ref() };
    let start = header_ref.state.start_poll();
    let ending = match (action, start) {
        (Action::Discard, _) => Some(TaskError::Stopped),
        (Action::Run, Start::Cancelled) => Some(TaskError::Cancelled),
        (Action::Run, Start::Poll) => {
            // SAFETY: we hold the queue's reference and `RUNNING`.
            match unsafe { poll::<F>(header, me) } {
                Some(()) => None,
                None => match header_ref.state.end_pending() {
                    AfterPending::Idle => {
                        // SAFETY: the queue's reference, not used again.
                        unsafe { release(header) };
                        return;
                    }
                    AfterPending::Requeue => {
                        header_ref.pool().requeue_local(me, task, header_ref.pinned().is_some());
                        return;
                    }
                    AfterPending::Cancelled => Some(TaskError::Cancelled),
                },
            }
        }
    };
    if let Some(error) = ending {
        // SAFETY: we hold `RUNNING`, so the future is ours.
        unsafe { abandon::<F>(header, error) };
    }
    // SAFETY: we hold `RUNNING` and the queue's reference.
    unsafe { complete(header) };
}

/// Polls the future once. `Some` if it finished: the output (or the
/// failure it panicked with) is stored and the future dropped.
///
/// # Safety
///
/// The caller holds `RUNNING` and a reference.
unsafe fn poll<F>(header: NonNull<AsyncHeader>, me: usize) -> Option<()>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let cell = header.cast::<Cell<F>>();
    // SAFETY: live; the future is touched only under `RUNNING`, ours.
    let (header_ref, future) = unsafe { (header.as_ref(), &mut *(*cell.as_ptr()).future.get()) };
    header_ref.home.store(me, Relaxed);
    // A waker that borrows the poller's reference: cloning it takes one.
    // SAFETY: the vtable's functions keep its contract.
    let waker = ManuallyDrop::new(unsafe { Waker::from_raw(RawWaker::new(header.as_ptr().cast(), &WAKER)) });
    let mut context = Context::from_waker(&waker);
    let future = future.as_mut().expect("a task being polled has its future");
    // SAFETY: the future never moves: it stays in the allocation until it
    // is dropped in place.
    let mut future = unsafe { Pin::new_unchecked(future) };
    // On the host a panic unwinds to here; on bare metal the core's loop
    // catches it and calls `fail_polled` instead (`crate::pool::contain`).
    #[cfg(feature = "std")]
    let polled = {
        let _polling = polling::Polling::enter(header.cast());
        catching_panic(|| future.as_mut().poll(&mut context))
    };
    #[cfg(not(feature = "std"))]
    let polled: Result<_, Failure> = {
        contain::polling(me, header.cast(), fail_polled::<F>);
        let polled = future.as_mut().poll(&mut context);
        contain::polled(me);
        Ok(polled)
    };
    let output = match polled {
        Ok(Poll::Pending) => return None,
        Ok(Poll::Ready(value)) => Ok(value),
        Err(failure) => Err(TaskError::Failed(failure)),
    };
    // SAFETY: as above.
    unsafe { finish_future::<F>(header, output) };
    Some(())
}

/// Fails a task whose poll panicked on bare metal, once the core's loop
/// has caught the panic (`crate::pool::contain`): the future is neither
/// dropped nor moved, and a reference never given back keeps its memory.
///
/// # Safety
///
/// `task` is the header of a task of future `F` whose poll was abandoned;
/// the poller's `RUNNING` and queue reference are the caller's.
#[cfg(not(feature = "std"))]
unsafe fn fail_polled<F>(task: NonNull<()>, failure: Failure)
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let header = task.cast::<AsyncHeader>();
    let cell = header.cast::<Cell<F>>();
    // SAFETY: live: the abandoned poller's reference is ours (contract).
    let header_ref = unsafe { header.as_ref() };
    header_ref.state.acquire();
    // The kept future's guards will never be dropped: their mutexes are
    // refused, so that nobody waits for them for ever.
    refuse_locks(Poller::Task(&header_ref.locks));
    // SAFETY: the output is written only by the poller, before `DONE`; the
    // poller's part is ours.
    unsafe { *(*cell.as_ptr()).head.output.get() = Some(Err(TaskError::Failed(failure))) };
    // SAFETY: we hold `RUNNING` and the queue's reference (contract).
    unsafe { complete(header) };
}

/// Drops the future and stores `error` as the output.
///
/// # Safety
///
/// As for [`poll`].
unsafe fn abandon<F: Future>(header: NonNull<AsyncHeader>, error: TaskError) {
    // SAFETY: forwarded.
    unsafe { finish_future::<F>(header, Err(error)) }
}

/// [`abandon`] for a pool that stopped, as the vtable has it.
///
/// # Safety
///
/// As for [`poll`].
unsafe fn abandon_stopped<F: Future>(header: NonNull<AsyncHeader>) {
    // SAFETY: forwarded.
    unsafe { abandon::<F>(header, TaskError::Stopped) }
}

/// Drops the future in place (a panic in its drop is the task's failure)
/// and stores the output.
///
/// In place, never moved out first: the future is pinned, and a part of
/// it may be linked by its address into a wait queue, a signal's word or
/// the timer heap until its own drop unlinks it.
///
/// # Safety
///
/// As for [`poll`].
unsafe fn finish_future<F: Future>(header: NonNull<AsyncHeader>, output: Result<F::Output, TaskError>) {
    let cell = header.cast::<Cell<F>>();
    // SAFETY: ours under `RUNNING`.
    let slot = unsafe { (*cell.as_ptr()).future.get() };
    let dropped = catching_panic(|| {
        // SAFETY: ours under `RUNNING`.
        if let Some(future) = unsafe { (*slot).as_mut() } {
            // SAFETY: dropped once, where it lies; marked gone below
            // without a second drop.
            unsafe { ptr::drop_in_place(future) };
        }
    });
    if cfg!(feature = "std") || dropped.is_ok() {
        // SAFETY: dropped (a drop that unwound dropped the rest on its way
        // out): marked gone without being dropped again.
        unsafe { ptr::write(slot, None) };
    } else {
        // Abandoned mid-drop on bare metal (`contain`): left as it is, in
        // memory kept for ever by a reference never given back.
        // SAFETY: live; the caller holds a reference.
        unsafe { header.as_ref() }.state.acquire();
    }
    let output = match (output, dropped) {
        (Ok(_), Err(failure)) => Err(TaskError::Failed(failure)),
        (output, _) => output,
    };
    // SAFETY: the output is written only here, before `DONE`.
    unsafe { *(*cell.as_ptr()).head.output.get() = Some(output) };
}

/// The poller's last steps: `DONE`, out of the pool's list, the handle
/// woken, and the queue's reference dropped.
///
/// # Safety
///
/// The caller holds `RUNNING` and a reference, has stored the output and
/// dropped the future.
pub(super) unsafe fn complete(header: NonNull<AsyncHeader>) {
    // SAFETY: live (contract).
    let header_ref = unsafe { header.as_ref() };
    // Its name off the guards it sent away, before it can be reused.
    forget_locks(Poller::Task(&header_ref.locks));
    if !header_ref.state.complete() {
        // SAFETY: no handle will read the output: it is ours.
        unsafe { (header_ref.vtable.drop_output)(header) };
    }
    let shared = header_ref.pool();
    // SAFETY: in the list since it was spawned; the list's reference.
    unsafe {
        shared.async_tasks().remove(AsyncHeader::live(header));
        release(header);
    }
    let waker = header_ref.join.lock().take();
    if let Some(waker) = waker {
        waker.wake();
    }
    // SAFETY: the caller's reference, not used again.
    unsafe { release(header) };
}

/// Drops the future of a task no core will poll again (the pool's
/// tear-down, see `state`), completing it with `TaskError::Stopped`.
/// False if it was not claimed (it is done, or being polled).
///
/// # Safety
///
/// `header` is live, and the caller holds a reference for the call.
pub(super) unsafe fn tear_down(header: NonNull<AsyncHeader>) -> bool {
    // SAFETY: live (contract).
    let header_ref = unsafe { header.as_ref() };
    if !header_ref.state.claim_for_teardown() {
        return false;
    }
    header_ref.state.acquire();
    // SAFETY: claimed: `RUNNING` is ours, and so is the future. The
    // reference taken above is the one `complete` gives up.
    unsafe {
        (header_ref.vtable.abandon)(header);
        complete(header);
    }
    true
}

/// Runs `f`; a panic in it becomes a failure: caught as it unwinds on the
/// host, thrown back to by the kernel's panic handler on bare metal
/// (`crate::pool::contain`).
fn catching_panic<R>(f: impl FnOnce() -> R) -> Result<R, Failure> {
    #[cfg(feature = "std")]
    return std::panic::catch_unwind(core::panic::AssertUnwindSafe(f))
        .map_err(|payload| *crate::strand::from_task_unwind(payload));
    #[cfg(not(feature = "std"))]
    return contain::catching_drop(f);
}

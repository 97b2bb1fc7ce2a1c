//! Async tasks: `async fn` code polled on a pool's cores, stolen like any
//! other work.
//!
//! [`Pool::spawn_async`] (or [`spawn_async`] from a core of the pool)
//! starts a future as a task and returns its [`TaskHandle`], itself a
//! future of the task's output that a strand can also
//! [`join`](TaskHandle::join). [`Pool::spawn_async_on`] pins a task to one
//! core. [`block_on`] runs a future to completion inside a strand: the
//! strand waits between polls and its core runs other work.
//!
//! # What "task" means
//!
//! In roving a *task* is the one unit every core runs (`crate::task`): a
//! posted closure, a fibre's turn, an actor's turn, and an async task's
//! poll are all tasks. An *async task* is a task whose body is a future:
//! its header is a task header, and it travels as one. So on this page
//! "task" is short for "async task", and the public names keep it
//! ([`TaskHandle`], [`TaskError`], [`spawn_async`]); what the executor keeps
//! inside is named `Async...` (`AsyncHeader`, `AsyncState`) so that no
//! name means the other kind of task.
//!
//! # How a task runs
//!
//! - A task is one allocation whose header is the scheduler's own task
//!   header, so the task itself goes through the mailboxes and run queues.
//!   Waking it allocates nothing.
//! - Its `Waker` queues it on the core that last polled it, through the
//!   mailbox of the pair of cores (or that core's own queue). Once there it
//!   is stealable like any spawned work, unless it is pinned.
//! - A wake while the task is being polled causes exactly one more poll,
//!   and any number of wakes while a poll is owed cause one. The state
//!   word's protocol, and why it holds, are in `protocol/async_state.rs`.
//! - Waking is interrupt-safe: a handler may call `wake_by_ref` on a
//!   task's waker. It takes no lock and allocates nothing; the task
//!   reaches its pool as a strand woken from a handler does. (Dropping
//!   the last reference to a task frees it, so a handler should keep the
//!   waker, as [`Signal`](crate::sync::Signal) does, rather than drop it.)
//!
//! # How a task ends
//!
//! Its future returns, and the handle gives the output. Or:
//!
//! - it panics: the task fails, not its core, and the handle gives
//!   [`TaskError::Failed`] (a detached task's failure becomes the pool's,
//!   as a strand's that nobody joins does). On the host the panic is
//!   caught as it unwinds and the future dropped. Bare metal does not
//!   unwind: the core's loop runs under a catch point on its stack, and
//!   the kernel's panic handler throws back to it (`fail_running_task`);
//!   the future is then leaked, not dropped, with whatever it held (an
//!   async mutex it held is refused: its waiters get `Poisoned`, see
//!   [`Mutex::lock_async`](crate::sync::Mutex::lock_async));
//! - its handle cancels it ([`TaskHandle::cancel`]): the future is dropped
//!   at its next await point, and the handle gives [`TaskError::Cancelled`];
//! - its pool stops first: a task waiting for a wake, or queued, has its
//!   future dropped, is counted in [`CoreStats::discarded`](crate::CoreStats::discarded),
//!   and its handle gives [`TaskError::Stopped`].
//!
//! While any task is alive, its pool is not quiescent: [`Pool::run`]
//! returns once the tasks have ended too. A pool whose only live work is
//! tasks that nothing can wake (no deadline armed, no interrupt bound, no
//! strand to wake them) is deadlocked, as one of blocked strands is (see
//! [`OnDeadlock`](crate::OnDeadlock)): the tasks are then cancelled.
//!
//! ```
//! use roving::{Pool, executor, platform::host::Machine};
//!
//! Machine::new(2).unwrap().run(|| {
//!     let pool = Pool::new().unwrap();
//!     let sum = pool.run(|| {
//!         let tasks: Vec<_> = (0..4u64)
//!             .map(|i| executor::spawn_async(async move { i * i }).unwrap())
//!             .collect();
//!         tasks.into_iter().map(|task| task.join().unwrap()).sum::<u64>()
//!     });
//!     assert_eq!(sum.unwrap(), 14);
//! }).unwrap();
//! ```

mod cell;
mod handle;

#[cfg(not(feature = "std"))]
pub use crate::pool::contain::{
    RunningWork, fail_running_task, next_panic_is_fault, running_task, running_work,
};
use crate::pool::{Pool, PostError};
use crate::strand::{self, Failure, WaitError};
use crate::task::storage::BlockCache;
use crate::task::{IntoTask, Task};
use alloc::boxed::Box;
use core::future::Future;
use core::pin::Pin;
use core::ptr::NonNull;
use core::task::{Context, Poll};
pub use handle::TaskHandle;

/// Why a task has no output.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskError {
    /// Its handle cancelled it; the future was dropped.
    Cancelled,
    /// It panicked (on the host); the future was dropped.
    Failed(Failure),
    /// Its pool stopped before it finished; the future was dropped.
    Stopped,
    /// Joining it from a strand failed: the caller is not a strand, or was
    /// cancelled while it waited. The task runs on, detached.
    Wait(WaitError),
}

error_messages! {
    impl TaskError {
        Self::Cancelled => "the task was cancelled";
        Self::Failed(failure) => "the task failed: {failure}";
        Self::Stopped => "the task's pool stopped before it finished";
        Self::Wait(error) => "joining the task failed: {error}";
    }
}

/// A task about to be queued for the first time, as the pool's posting
/// paths carry it: refused, it gives the future back.
struct NewAsyncTask<F> {
    header: NonNull<AsyncHeader>,
    future: core::marker::PhantomData<F>,
}

use cell::AsyncHeader;

impl Pool {
    /// Spawns `future` as an async task on this pool, on whichever core
    /// gets to it first (from a core of the pool, that core, which offers
    /// it to idle ones). Returns its handle.
    ///
    /// # Errors
    ///
    /// [`PostError::Stopped`], [`PostError::OutOfMemory`] or
    /// [`PostError::OtherDomain`], each carrying `future` back.
    pub fn spawn_async<F>(&self, future: F) -> Result<TaskHandle<F::Output>, PostError<F>>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        spawn_in(self, None, future)
    }

    /// Spawns `future` as an async task pinned to `core`: it is polled
    /// only there, unless that core leaves the pool (its pin then lapses).
    ///
    /// # Errors
    ///
    /// [`PostError::NoSuchCore`], [`PostError::NotAMember`], and as for
    /// [`Pool::spawn_async`], each carrying `future` back.
    pub fn spawn_async_on<F>(&self, core: usize, future: F) -> Result<TaskHandle<F::Output>, PostError<F>>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        spawn_in(self, Some(core), future)
    }
}

/// [`Pool::spawn_async`] on the pool the calling core works for.
///
/// # Errors
///
/// [`PostError::NotInPool`] outside a pool's cores; otherwise as for
/// [`Pool::spawn_async`].
#[inline]
pub fn spawn_async<F>(future: F) -> Result<TaskHandle<F::Output>, PostError<F>>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    match Pool::current() {
        Some(pool) => pool.spawn_async(future),
        None => Err(PostError::NotInPool(future)),
    }
}

/// [`Pool::spawn_async_on`] on the pool the calling core works for.
///
/// # Errors
///
/// [`PostError::NotInPool`] outside a pool's cores; otherwise as for
/// [`Pool::spawn_async_on`].
pub fn spawn_async_on<F>(core: usize, future: F) -> Result<TaskHandle<F::Output>, PostError<F>>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    match Pool::current() {
        Some(pool) => pool.spawn_async_on(core, future),
        None => Err(PostError::NotInPool(future)),
    }
}

fn spawn_in<F>(pool: &Pool, pin: Option<usize>, future: F) -> Result<TaskHandle<F::Output>, PostError<F>>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    crate::platform::refuse_in_handler("spawning an async task", crate::platform::HANDLERS_DO_NOT_ALLOCATE);
    #[cfg(feature = "std")]
    strand::install_hook();
    // The core found below must stay ours while we use it.
    let _deferral = crate::strand::deferral::defer();
    let shared = pool.pool_ref();
    let me = shared.worker_core();
    let shard = shared.async_tasks().shard_for(me);
    let home = pin.or(me).unwrap_or(0);
    let header = cell::allocate(future, pool, pin.unwrap_or(cell::UNPINNED), home, shard)
        .map_err(PostError::OutOfMemory)?;
    let task = NewAsyncTask { header, future: core::marker::PhantomData::<F> };
    let posted = match pin {
        Some(core) => shared.post(core, task),
        None => shared.spawn(task),
    };
    match posted {
        // SAFETY: the task's output type is `F::Output`; the handle's
        // reference is one of the three it was made with.
        Ok(()) => Ok(unsafe { TaskHandle::new(header) }),
        // SAFETY: refused, so never queued and never listed: ours alone.
        Err(refused) => Err(refused.map(|task| unsafe { cell::take_back::<F>(task.header) })),
    }
}

/// Wires a pool being built to the executor: the pool learns what to do
/// with the async tasks it lists (`crate::pool::async_tasks`), so that a
/// spawn need not tell it.
pub(crate) fn wire(pool: crate::pool::seam::PoolRef<'_>) {
    pool.async_tasks().attach(&cell::ASYNC_OPS);
}

impl<F: Send + 'static> IntoTask for NewAsyncTask<F> {
    /// Lists the task as live in its pool: this runs only once the pool
    /// has accepted the post (inside its window for outside posts), so a
    /// pool's tear-down never misses a task it accepted.
    fn into_task(self, _: Option<&mut BlockCache>) -> Result<NonNull<Task>, Self> {
        // SAFETY: the task is new, listed nowhere; its shard is the list's.
        unsafe {
            let header = self.header.as_ref();
            header.pool().async_tasks().insert(AsyncHeader::live(self.header));
        }
        Ok(AsyncHeader::as_task(self.header))
    }

    unsafe fn from_task(task: NonNull<Task>, _: Option<NonNull<BlockCache>>) -> Self {
        let header = task.cast::<AsyncHeader>();
        // SAFETY: refused after `into_task` listed it (contract): unlisted
        // again, it is the caller's alone.
        unsafe { header.as_ref().pool().async_tasks().remove(AsyncHeader::live(header)) };
        Self { header, future: core::marker::PhantomData }
    }
}

// SAFETY: a new task belongs to whoever spawns it until it is queued; its
// future is `Send`.
unsafe impl<F: Send> Send for NewAsyncTask<F> {}

/// Runs `future` to completion in the calling strand: polls it, and
/// between polls parks the strand until the future's waker is woken. The
/// strand's core runs other work meanwhile.
///
/// The future is moved to the heap first (one allocation). A strand that
/// waits is not always resident on its fibre: another strand may have the
/// stack meanwhile (copy-swap). A pending future may have given out its
/// own address, as roving's waits do (a waiter record in the future, found
/// by whoever wakes it), and nothing may reach into the stack of a strand
/// that is not resident.
///
/// # Errors
///
/// [`WaitError::NotAStrand`] outside a strand (an async task awaits
/// instead); [`WaitError::OutOfMemory`] if there was no memory to move the
/// future to; [`WaitError::Interrupted`] if the strand is cancelled while
/// it waits. The future is dropped in each case.
pub fn block_on<F: Future>(future: F) -> Result<F::Output, WaitError> {
    let waker = strand::unparker()?.into_waker();
    let future = pin_on_heap(future).map_err(|_| WaitError::OutOfMemory)?;
    poll_in_strand(future, &waker)
}

/// [`block_on`] for a future that gives out no address of its own, so it
/// may stay on the strand's stack: a [`TaskHandle`], whose waker is kept
/// in the task's header.
pub(crate) fn block_on_unmoved<F: Future + Unpin>(future: F) -> Result<F::Output, WaitError> {
    let waker = strand::unparker()?.into_waker();
    poll_in_strand(future, &waker)
}

fn poll_in_strand<F: Future + Unpin>(
    mut future: F,
    waker: &core::task::Waker,
) -> Result<F::Output, WaitError> {
    let mut context = Context::from_waker(waker);
    loop {
        if let Poll::Ready(output) = Pin::new(&mut future).poll(&mut context) {
            return Ok(output);
        }
        if let Err(error) = strand::park() {
            // Cancelled as the future settled: its outcome (a task's
            // failure, say) is the answer, not the cancel.
            return match Pin::new(&mut future).poll(&mut context) {
                Poll::Ready(output) => Ok(output),
                Poll::Pending => Err(error),
            };
        }
    }
}

/// `future` in a heap allocation, pinned there; gives it back if memory
/// ran out (where `Box::pin` would abort).
fn pin_on_heap<F>(future: F) -> Result<Pin<Box<F>>, F> {
    let layout = core::alloc::Layout::new::<F>();
    if layout.size() == 0 {
        return Ok(Box::pin(future));
    }
    // SAFETY: the layout has a non-zero size.
    let Some(memory) = NonNull::new(unsafe { alloc::alloc::alloc(layout) }.cast::<F>()) else {
        return Err(future);
    };
    // SAFETY: fresh memory with `F`'s layout, which the box frees with the
    // same layout from the global allocator.
    Ok(Box::into_pin(unsafe {
        memory.write(future);
        Box::from_raw(memory.as_ptr())
    }))
}

impl Pool {
    /// Async tasks of this pool that have been spawned and have not
    /// finished (queued, being polled, or waiting for a wake).
    pub fn live_tasks(&self) -> usize {
        self.pool_ref().async_tasks().count()
    }
}

/// Gives the core to other work once: the task is queued again behind
/// what its core has queued, and resumes when polled next.
pub fn yield_now() -> YieldNow {
    YieldNow { yielded: false }
}

/// The future of [`yield_now`].
#[derive(Debug)]
#[must_use = "futures do nothing unless awaited"]
pub struct YieldNow {
    yielded: bool,
}

impl Future for YieldNow {
    type Output = ();

    fn poll(mut self: core::pin::Pin<&mut Self>, context: &mut Context<'_>) -> Poll<()> {
        if self.yielded {
            return Poll::Ready(());
        }
        self.yielded = true;
        context.waker().wake_by_ref();
        Poll::Pending
    }
}

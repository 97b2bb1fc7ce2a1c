//! A panic in an async task's poll on bare metal, contained: the task
//! fails, its handle gives `TaskError::Failed`, and the core goes on with
//! its other work, as it does when a strand panics. A panic in a `join`
//! half that a core's loop took (not a strand) is contained the same way
//! ([`running_join_half`]): the half fails, and the join passes the
//! failure on in the strand that owns it.
//!
//! On the host a poll runs under `catch_unwind`. Bare metal does not
//! unwind, and a poll runs on the core's own stack, not a fibre that could
//! be abandoned. So the core's loop runs under a catch point
//! (`raw::context::catch`) on that stack, set once when the loop starts,
//! not once per poll; the poller marks the task it polls ([`polling`]),
//! and the kernel's panic handler calls [`fail_running_task`], which
//! records the failure and throws back to the loop. The loop hands the
//! failure to the task's own failure function and goes on.
//!
//! A throw to the loop abandons the frames of whatever the loop ran, and
//! the loop reuses them at once. Join jobs may live there: one the loop
//! took and is running for another strand, or one a half or a poll
//! published, which a thief may be running and will write its result
//! into. So before the throw, the loop context's jobs are settled
//! (`abandon_loop_jobs`): the ones it runs end with the failure (their
//! owners fail with it), and the ones it published are taken back or
//! waited out, while those frames still stand.
//!
//! What is dropped on the way out of a poll (a finished future, in place)
//! runs under a catch point of its own ([`catching_drop`]): it is rare, and
//! it also happens outside any loop (a pool's tear-down).
//!
//! The frames of the failed poll are abandoned, not unwound, so nothing in
//! them is dropped. Neither is the future: it may have been interrupted
//! halfway through changing itself, and what it had lent out (a waiter
//! record queued in a `sync` object, a timer entry) must stay where the
//! lender points. The task's allocation is kept for ever (leaked, a few
//! hundred bytes), and whatever the future held (a permit, a channel's
//! slot) stays held. An async mutex it held is refused, so that nobody
//! waits for it for ever (`crate::strand::lock`).
//!
//! # One catch point per core
//!
//! Loops do not nest on a core: a pool's loop runs on a core only while
//! the pool holds it (`super::core_owners`), so a strand or task cannot
//! start a second pool's loop there. Nor do polls: a poll cannot block.
//! So each core has one loop catch point and one poll mark at a time.

mod handler;

pub use handler::{catching_handler, fail_running_handler, running_handler};

use super::current::SLOTS;
use super::failure::{Failure, FailureKind};
use crate::atomics::CachePadded;
use crate::atomics::unmodelled::{AtomicBool, AtomicPtr, AtomicUsize, Ordering::Relaxed};
use crate::platform;
use crate::raw::context::catch::{CatchSlot, catching, throw};
use alloc::boxed::Box;
use core::ptr::{self, NonNull};

/// What fails a task whose poll a panic abandoned; given the task the
/// poller marked and the failure. The task's poller never returns, so the
/// function owns the reference the poller held.
pub(crate) type FailPoll = unsafe fn(task: NonNull<()>, failure: Failure);

/// What a panic contained on a core's loop stops: the work the loop runs
/// under its catch point ([`running_work`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunningWork {
    /// An async task's poll: the task fails (`TaskError::Failed`).
    AsyncTask,
    /// The second half of a `join` that the core's loop took from the
    /// strand that published it: the half fails, and the join passes the
    /// failure on in its owner, which fails with it.
    JoinHalf,
}

impl core::fmt::Display for RunningWork {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            Self::AsyncTask => "an async task",
            Self::JoinHalf => "a join half",
        })
    }
}

/// One core's part; only that core writes it.
struct CoreContainment {
    /// The catch point of the loop running tasks on this core (null: none).
    loop_catch: AtomicPtr<CatchSlot>,
    /// The task being polled or the join half being run (null: none), its
    /// [`FailPoll`], and which of the two it is (true: a join half).
    task: AtomicPtr<()>,
    fail: AtomicUsize,
    join_half: AtomicBool,
    /// The catch point of a drop on the way out of a poll.
    drop_catch: CatchSlot,
    /// The failure a thrown poll or drop ends with.
    failed: AtomicPtr<Failure>,
    /// Set while the core builds a failure: a panic then is not contained.
    failing: AtomicBool,
}

static CORES: [CachePadded<CoreContainment>; SLOTS] = [const {
    CachePadded(CoreContainment {
        loop_catch: AtomicPtr::new(ptr::null_mut()),
        task: AtomicPtr::new(ptr::null_mut()),
        fail: AtomicUsize::new(0),
        join_half: AtomicBool::new(false),
        drop_catch: CatchSlot::new(),
        failed: AtomicPtr::new(ptr::null_mut()),
        failing: AtomicBool::new(false),
    })
}; SLOTS];

/// Per core: the next panic there carries a contained fault
/// ([`next_panic_is_fault`]).
static FAULTS: [AtomicBool; SLOTS] = [const { AtomicBool::new(false) }; SLOTS];

/// Says that the next panic on this core is a synchronous fault the
/// kernel contained (it panics with the fault's words, on the faulting
/// code's stack): the failure it makes is [`FailureKind::Faulted`], with
/// no source location (that of the kernel's `panic!` is no place of the
/// faulting code's). For a kernel's fault handling, just before that
/// panic.
pub fn next_panic_is_fault() {
    if let Some(core) = this_core() {
        FAULTS[core].store(true, Relaxed);
    }
}

/// The kind and source location of the failure that a panic at
/// `location` makes on this core (taking the mark [`next_panic_is_fault`]
/// left).
pub(crate) fn panic_kind<'a>(
    location: Option<&'a core::panic::Location<'a>>,
) -> (FailureKind, Option<&'a core::panic::Location<'a>>) {
    match this_core() {
        Some(core) if FAULTS[core].swap(false, Relaxed) => (FailureKind::Faulted, None),
        _ => (FailureKind::Panicked, location),
    }
}

fn this_core() -> Option<usize> {
    platform::current_core().filter(|&core| core < SLOTS)
}

/// Runs core `me`'s loop, `body`, under a catch point: a poll that fails
/// inside it is failed with its task's [`FailPoll`], and the loop starts
/// again. `body` returns when the loop is over.
pub(crate) fn run_loop(me: usize, mut body: impl FnMut()) {
    let Some(core) = CORES.get(me) else { return body() };
    let slot = CatchSlot::new();
    debug_assert!(core.loop_catch.load(Relaxed).is_null(), "a loop inside a loop");
    core.loop_catch.store(ptr::from_ref(&slot).cast_mut(), Relaxed);
    while catching(&slot, &mut body).is_none() {
        let failure = core.failed.swap(ptr::null_mut(), Relaxed);
        if failure.is_null() {
            // A join half, failed before the throw (`fail_running_task`).
            continue;
        }
        let task = core.task.swap(ptr::null_mut(), Relaxed);
        let fail = core.fail.swap(0, Relaxed);
        core.failing.store(false, Relaxed);
        // SAFETY: stored by `fail_running_task` from a `Box`, taken once.
        let failure = *unsafe { Box::from_raw(failure) };
        // SAFETY: `fail` was stored from a `FailPoll` by `polling`, with
        // `task` beside it; the poll it marked was abandoned, so its
        // reference is the function's now.
        unsafe {
            let fail: FailPoll = core::mem::transmute::<usize, FailPoll>(fail);
            fail(NonNull::new_unchecked(task), failure);
        }
    }
    core.loop_catch.store(ptr::null_mut(), Relaxed);
}

/// Marks `task` as being polled on core `me` until [`polled`], failed by
/// `fail` if the poll panics. Polls do not nest on a core: a poll cannot
/// block, nor run a pool's loop (the core is its pool's already).
#[inline]
pub(crate) fn polling(me: usize, task: NonNull<()>, fail: FailPoll) {
    mark(me, task, fail, false);
}

#[inline]
fn mark(me: usize, work: NonNull<()>, fail: FailPoll, join_half: bool) {
    if let Some(core) = CORES.get(me) {
        debug_assert!(core.task.load(Relaxed).is_null(), "a poll inside a poll");
        core.task.store(work.as_ptr(), Relaxed);
        core.fail.store(fail as usize, Relaxed);
        core.join_half.store(join_half, Relaxed);
    }
}

/// Runs `half`, a join half that core `me`'s loop took, marked as
/// [`RunningWork::JoinHalf`]: if it panics (on bare metal, where nothing
/// unwinds), it fails with the jobs of the loop's context
/// ([`fail_running_task`]), and the loop goes on. Inside other contained
/// work (an outer half, or a poll that joined and helps while it waits)
/// it runs unmarked: a panic then fails that work, as it would unwind
/// through it. Outside a loop with a catch point, `half` just runs.
#[inline]
pub(crate) fn running_join_half<R>(me: usize, half: impl FnOnce() -> R) -> R {
    let outermost = CORES
        .get(me)
        .is_some_and(|core| !core.loop_catch.load(Relaxed).is_null() && core.task.load(Relaxed).is_null());
    if !outermost {
        return half();
    }
    // The half itself is on the loop's list of jobs being run, which is
    // how it fails; the mark only says that contained work is running.
    mark(me, NonNull::dangling(), fail_nothing, true);
    let value = half();
    polled(me);
    value
}

/// The [`FailPoll`] of a join half's mark: the half failed with the loop's
/// jobs before the throw ([`fail_running_task`]), so nothing is left.
unsafe fn fail_nothing(_: NonNull<()>, _: Failure) {}

/// Ends every job of core `me`'s loop context, whose frames a throw to the
/// loop's catch point is about to abandon: jobs it was running for others
/// (a join half among them) end with `failure`, and jobs it published are
/// taken back or waited out while those frames still stand.
fn abandon_loop_jobs(failure: &Failure) {
    super::current::with(|worker| {
        let Some(worker) = worker else { return };
        let stack = worker.pool().join_stack(worker.core);
        if !stack.is_null() {
            // SAFETY: the loop context's own join stack, on its core; its
            // jobs live in the frames about to be abandoned, still there.
            let _ = unsafe { super::fork_join::abandon_jobs(stack, Some(worker.pool()), failure) };
        }
    });
}

/// Ends the mark [`polling`] made.
#[inline]
pub(crate) fn polled(me: usize) {
    if let Some(core) = CORES.get(me) {
        core.task.store(ptr::null_mut(), Relaxed);
    }
}

/// Runs `f` (the drop of a finished future) so that a panic in it comes
/// back as `Err` with the failure: what `f` was dropping must then be
/// leaked, not touched again.
pub(crate) fn catching_drop<R>(f: impl FnOnce() -> R) -> Result<R, Failure> {
    let Some(core) = this_core().map(|core| &CORES[core]).filter(|core| !core.drop_catch.is_set()) else {
        return Ok(f());
    };
    match catching(&core.drop_catch, f) {
        Some(value) => Ok(value),
        None => {
            core.failing.store(false, Relaxed);
            let failure = core.failed.swap(ptr::null_mut(), Relaxed);
            // SAFETY: stored by `fail_running_task` from a `Box`, taken once.
            Err(*unsafe { Box::from_raw(failure) })
        }
    }
}

/// Where a panic on this core now would be thrown to, if it is in a poll
/// or a contained drop (and not in an interrupt handler, whose panic is
/// its own, nor already building a failure).
fn contained_here() -> Option<(&'static CoreContainment, *const CatchSlot)> {
    if platform::in_interrupt() {
        return None;
    }
    let core = &CORES[this_core()?];
    if core.failing.load(Relaxed) {
        return None;
    }
    if core.drop_catch.is_set() {
        return Some((core, &raw const core.drop_catch));
    }
    let loop_catch = core.loop_catch.load(Relaxed);
    (!core.task.load(Relaxed).is_null() && !loop_catch.is_null()).then_some((core, loop_catch.cast_const()))
}

/// The header of the async task this core is polling (not a join half
/// it runs), outside interrupt handlers.
pub(crate) fn polled_task() -> Option<NonNull<crate::task::Task>> {
    if platform::in_interrupt() {
        return None;
    }
    let core = &CORES[this_core()?];
    if core.join_half.load(Relaxed) {
        return None;
    }
    NonNull::new(core.task.load(Relaxed).cast())
}

/// Whether this core is polling an async task, or running a join half on
/// its loop, now (and not in an interrupt handler, whose panic is its
/// own): what a panic handler asks before it reports that work's failure
/// and calls [`fail_running_task`].
pub fn running_task() -> bool {
    contained_here().is_some()
}

/// Which work a panic on this core now would fail through
/// [`fail_running_task`], if any: as [`running_task`], saying which, for
/// the report.
pub fn running_work() -> Option<RunningWork> {
    let (core, _) = contained_here()?;
    Some(if core.join_half.load(Relaxed) { RunningWork::JoinHalf } else { RunningWork::AsyncTask })
}

/// Fails the async task this core is polling with the panic `info`: its
/// handle gets `TaskError::Failed`, and the core goes back to its loop.
/// For a join half the loop runs ([`RunningWork::JoinHalf`]), the half
/// fails, and its join passes the failure on in the strand that owns it.
/// Returns only if no task is being polled here (see [`running_task`]),
/// or if no failure could be made (the heap and the failure reserve both
/// empty: `super::failure_reserve`): then the panic is the caller's to
/// handle.
///
/// This is what a bare-metal `#[panic_handler]` calls after
/// `strand::fail_running`: a panic in a task stops that task, not its
/// core. The task's future is leaked, not dropped (nothing unwinds on
/// bare metal).
pub fn fail_running_task(info: &core::panic::PanicInfo<'_>) {
    let Some((core, slot)) = contained_here() else { return };
    core.failing.store(true, Relaxed);
    let (kind, location) = panic_kind(info.location());
    let failure =
        super::failure_reserve::panic_failure(kind, format_args!("{}", info.message()), location, None);
    let Some(failure) = failure else {
        core.failing.store(false, Relaxed);
        return;
    };
    if !core.drop_catch.is_set() {
        // Thrown to the loop: the jobs its context holds (a join half it
        // runs, jobs a half or a poll published, which thieves may be
        // running) live in the frames the throw abandons, which the loop
        // reuses at once; they are settled first, while those frames stand.
        abandon_loop_jobs(&failure);
    }
    if core.join_half.load(Relaxed) && !core.drop_catch.is_set() {
        // The half ended with the loop's jobs: nothing is left to fail.
        core.task.store(ptr::null_mut(), Relaxed);
        core.fail.store(0, Relaxed);
        core.failing.store(false, Relaxed);
    } else {
        core.failed.store(Box::into_raw(failure), Relaxed);
    }
    // SAFETY: the catch point is set on this stack, below which the poll
    // (or drop) and this panic handler run; their frames are not used
    // again (module docs).
    unsafe { throw(&*slot) }
}

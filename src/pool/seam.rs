//! The seam between a pool and the layers built on it: [`PoolRef`].
//!
//! Strands, `sync`, fork-join, time slicing, the executor, actors, event
//! loops and futures reach a pool only through this view, never through
//! its shared state: what they may do is listed here, each with the file
//! that does it. Everything else about a pool (its lists, its sleep
//! protocol, its state word) is the pool's own.
//!
//! A `PoolRef` is a reference: it costs nothing to make or pass, and its
//! methods are inlined into their callers as the shared state's were.
//! What must keep a pool alive holds a [`Pool`] (counted), or its raw form
//! ([`Pool::into_raw`]).

use super::Pool;
use super::async_tasks::LiveTasks;
use super::core_turn::CoreTurn;
use super::domain_id::DomainId;
use super::end_waiters::EndWaiters;
use super::error::{PinError, PostError};
use super::failure::Failure;
pub(crate) use super::fibres::AfterPreemption;
use super::fork_join::{Job, JoinStack, Slot};
use super::shared::Shared;
use super::strands::Strands;
use crate::atomics::unmodelled::AtomicUsize;
use crate::task::storage::BlockCache;
use crate::task::{IntoTask, Task};
use crate::timers::Timers;
use alloc::boxed::Box;
use alloc::sync::{Arc, Weak};
use core::ptr::NonNull;

/// A pool, as the layers above it reach it (module docs).
#[derive(Clone, Copy)]
pub(crate) struct PoolRef<'a>(&'a Shared);

impl<'a> PoolRef<'a> {
    #[inline]
    pub(crate) fn new(shared: &'a Shared) -> Self {
        Self(shared)
    }

    /// The pool `raw` names ([`Pool::into_raw`], [`PoolRef::as_raw`]).
    ///
    /// # Safety
    ///
    /// The pool is alive for as long as `'a`.
    #[inline]
    pub(crate) unsafe fn from_raw(raw: *const ()) -> Self {
        // SAFETY: a pool's pointer, alive for `'a` (contract).
        Self(unsafe { &*raw.cast::<Shared>() })
    }

    /// The pool as a pointer, for what keeps a pool alive by other means
    /// and must name it without a lifetime ([`PoolRef::from_raw`]).
    #[inline]
    pub(crate) fn as_raw(self) -> *const () {
        core::ptr::from_ref(self.0).cast()
    }

    /// A counted handle to the pool.
    #[inline]
    pub(crate) fn to_pool(self) -> Pool {
        // The pointer comes from the pool's own `Weak`, not from `self.0`:
        // a reference to `Shared` may reach only `Shared`, while the counts
        // sit beside it in the `Arc`'s allocation.
        let shared = self.0.this.as_ptr();
        // SAFETY: `shared` is the pointer `Arc::into_raw` would give for
        // the `Arc` this `Shared` was built in (`Shared::new`), and a view
        // is made only from what keeps that `Arc` alive (a `Pool`, a
        // fibre's or a worker's hold on it), so its strong count is above
        // zero; one more is taken before the new `Arc` is made. (An upgrade
        // of `this` would do the same with a compare-exchange loop, on
        // every `Pool::current`.)
        unsafe {
            Arc::increment_strong_count(shared);
            Pool { shared: Arc::from_raw(shared) }
        }
    }

    /// A reference that does not keep the pool alive (a failure's origin).
    pub(crate) fn downgrade(self) -> Weak<Shared> {
        self.0.this.clone()
    }

    /// Whether two views are of one pool.
    #[inline]
    pub(crate) fn same(self, other: PoolRef<'_>) -> bool {
        core::ptr::eq(self.0, other.0)
    }

    /// The domain the pool belongs to.
    #[inline]
    pub(crate) fn domain(self) -> DomainId {
        self.0.domain
    }

    // Work in (`post.rs`).

    /// Posts `work` to run on core `to` (`Shared::post`).
    #[inline]
    pub(crate) fn post<W: IntoTask>(self, to: usize, work: W) -> Result<(), PostError<W>> {
        self.0.post(to, work)
    }

    /// Posts `work` to the core it is pinned to, or any if that left.
    #[inline]
    pub(crate) fn post_pinned<W: IntoTask>(self, core: usize, work: W) -> Result<(), PostError<W>> {
        self.0.post_pinned(core, work)
    }

    /// Spawns `work` to run on any core.
    #[inline]
    pub(crate) fn spawn<W: IntoTask>(self, work: W) -> Result<(), PostError<W>> {
        self.0.spawn(work)
    }

    /// Queues `work` behind core `me`'s other work (a task yielding).
    #[inline]
    pub(crate) fn requeue<W: IntoTask>(self, me: usize, work: W, pinned: bool) -> Result<(), W> {
        self.0.requeue(me, work, pinned)
    }

    /// Queues a task of core `me`'s behind its other work.
    #[inline]
    pub(crate) fn requeue_local(self, me: usize, task: NonNull<Task>, pinned: bool) {
        self.0.requeue_local(me, task, pinned)
    }

    /// Whether work can be pinned to `core` now.
    #[inline]
    pub(crate) fn check_pin(self, core: usize) -> Result<(), PinError<()>> {
        self.0.check_pin(core)
    }

    /// Whether `core` is one of the pool's cores now.
    #[inline]
    pub(crate) fn is_member(self, core: usize) -> bool {
        self.0.is_member(core)
    }

    /// The calling core's index if it is a worker of this pool.
    #[inline]
    pub(crate) fn worker_core(self) -> Option<usize> {
        self.0.worker_core()
    }

    /// Calls `f` with the calling core's block cache if it is a worker of
    /// this pool.
    #[inline]
    pub(crate) fn with_cache<R>(self, f: impl FnOnce(Option<&mut BlockCache>) -> R) -> R {
        self.0.with_cache(f)
    }

    /// [`PoolRef::with_cache`] for a caller that knows its core.
    ///
    /// # Safety
    ///
    /// As for `Shared::with_cache_at`.
    #[inline]
    pub(crate) unsafe fn with_cache_at<R>(
        self,
        me: Option<usize>,
        f: impl FnOnce(Option<&mut BlockCache>) -> R,
    ) -> R {
        // SAFETY: forwarded.
        unsafe { self.0.with_cache_at(me, f) }
    }

    /// Counts `n` things dropped unrun because the pool stopped.
    #[inline]
    pub(crate) fn count_discarded(self, n: u64) {
        self.0.count_discarded(n)
    }

    /// Announces `jobs` new jobs core `me` made for any core.
    #[inline]
    pub(crate) fn announce_for(self, me: usize, jobs: usize) {
        self.0.announce_for(me, jobs)
    }

    /// Whether some core other than `me` is idle or asleep.
    #[inline]
    pub(crate) fn anyone_idle(self, me: usize) -> bool {
        self.0.sleep.anyone_idle(me)
    }

    // Fibres (`fibres.rs`), and each core's turn (`core_turn.rs`).

    /// Sends a just-scheduled fibre to core `to` (`Shared::schedule_fibre`).
    #[inline]
    pub(crate) fn schedule_fibre(self, task: NonNull<Task>, to: usize, pinned: bool) -> bool {
        self.0.schedule_fibre(task, to, pinned)
    }

    /// [`PoolRef::schedule_fibre`] from core `me` of this pool, or from
    /// outside it (`None`).
    ///
    /// # Safety
    ///
    /// As for `Shared::schedule_fibre_from`.
    #[inline]
    pub(crate) unsafe fn schedule_fibre_from(
        self,
        me: Option<usize>,
        task: NonNull<Task>,
        to: usize,
        pinned: bool,
    ) -> bool {
        // SAFETY: forwarded.
        unsafe { self.0.schedule_fibre_from(me, task, to, pinned) }
    }

    /// Queues a woken fibre on the core a handler interrupted
    /// (`Shared::queue_from_handler_on`).
    ///
    /// # Safety
    ///
    /// As for `Shared::queue_from_handler_on`.
    #[inline]
    pub(crate) unsafe fn queue_from_handler_on(self, me: usize, task: NonNull<Task>, pinned: bool) -> bool {
        // SAFETY: forwarded.
        unsafe { self.0.queue_from_handler_on(me, task, pinned) }
    }

    /// Queues a preempted strand's fibre for its turn at `level`.
    #[inline]
    pub(crate) fn requeue_preempted(self, me: usize, task: NonNull<Task>, pinned: bool, level: u8) {
        self.0.requeue_preempted(me, task, pinned, level)
    }

    /// Whether core `me`'s running task may go on in place of a requeue.
    #[inline]
    pub(crate) fn continues_in_place(self, me: usize) -> bool {
        self.0.continues_in_place(me)
    }

    /// Takes the fibre core `me` would run next, for a hand-off.
    #[inline]
    pub(crate) fn take_next_fibre(
        self,
        me: usize,
        is_fibre: impl FnOnce(NonNull<Task>) -> bool,
        ready: impl FnOnce() -> bool,
    ) -> Option<NonNull<Task>> {
        self.0.take_next_fibre(me, is_fibre, ready)
    }

    /// Takes the fibre core `me` would run next after a preemption, for a
    /// hand-off (`Shared::take_fibre_after_preemption`).
    #[inline]
    pub(crate) fn take_fibre_after_preemption(
        self,
        me: usize,
        level: u8,
        is_fibre: impl FnOnce(NonNull<Task>) -> bool,
        ready: impl FnOnce() -> bool,
    ) -> Option<AfterPreemption> {
        self.0.take_fibre_after_preemption(me, level, is_fibre, ready)
    }

    /// What core `me`'s loop does after each task.
    #[inline]
    pub(crate) fn after_task(self, me: usize) {
        self.0.after_task(me)
    }

    /// Whether core `me` has other work queued (`Shared::has_work_for`).
    ///
    /// # Safety
    ///
    /// As for `Shared::has_work_for`.
    #[inline]
    pub(crate) unsafe fn has_work_for(self, me: usize) -> bool {
        // SAFETY: forwarded.
        unsafe { self.0.has_work_for(me) }
    }

    /// Core `me`'s turn: the strand it runs, and its time slice.
    ///
    /// # Safety
    ///
    /// `me` is the calling core, running this pool (as for
    /// `Shared::own_core`). Unchecked: a switch asks for its core's turn
    /// several times, and a bounds check is three instructions each time.
    #[inline]
    pub(crate) unsafe fn own_turn(self, me: usize) -> &'a CoreTurn {
        // SAFETY: per the contract.
        unsafe { &self.0.own_core(me).turn }
    }

    /// Core `core`'s turn, if the pool has such a core.
    #[inline]
    pub(crate) fn turn_of(self, core: usize) -> Option<&'a CoreTurn> {
        self.0.cores.get(core).map(|core| &*core.turn)
    }

    /// A strand of level `level` (a `Priority` as `u8`) is being made
    /// runnable for core `to`: if the pool has a time slice and the strand
    /// outranks the one running there, marks the core so that its next
    /// tick preempts at once, and returns `true`: the caller then asks for
    /// that tick (`platform::request_tick_on`) once the strand is queued.
    /// Interrupt-safe: a handler's wake comes here.
    #[inline]
    pub(crate) fn woken(self, level: u8, to: usize) -> bool {
        self.0.slice_ticks != 0 && self.turn_of(to).is_some_and(|turn| turn.urgent.woken(level))
    }

    /// Whether a strand stopped without unwinding has its fibre quarantined
    /// (`Config::reuse_stopped_stacks` not set).
    pub(crate) fn quarantines_stopped_stacks(self) -> bool {
        !self.0.config.reuse_stopped_stacks
    }

    /// Counts an answer to a ping of the watch for silent cores, on core
    /// `me`, the calling core, in its timer interrupt; never returns on a
    /// core taken out of the pool (`super::silent`).
    #[inline]
    pub(crate) fn answer_ping(self, me: usize) {
        self.0.answer_ping(me)
    }

    /// The time slice in platform ticks, or 0 for a cooperative pool.
    #[inline]
    pub(crate) fn slice_ticks(self) -> u64 {
        self.0.slice_ticks
    }

    /// Counts a preemption on core `me`.
    #[inline]
    pub(crate) fn count_preempted(self, me: usize) {
        // SAFETY: the tick passes the core it runs on, which its look-up
        // found running this pool, so `me` has a slot.
        super::stats::add(&unsafe { self.0.own_core(me) }.stats.preempted, 1);
    }

    // Fork-join (`fork_join.rs`).

    /// Core `core`'s slot for a published job.
    #[inline]
    pub(crate) fn join_slot(self, core: usize) -> &'a Slot {
        &self.0.cores[core].join_slot
    }

    /// The join stack of core `core`'s own loop.
    #[inline]
    pub(crate) fn join_stack(self, core: usize) -> *mut JoinStack {
        self.0.loop_joins[core].get()
    }

    /// Takes a published job from a window of other cores' slots, and
    /// moves the window on (`Shared::take_published_job_in_window`).
    #[inline]
    pub(crate) fn take_published_job(self, me: usize, window: &mut u32) -> Option<NonNull<Job>> {
        self.0.take_published_job_in_window(me, window)
    }

    /// Join owners waiting for their stolen jobs.
    #[inline]
    pub(crate) fn join_helpers(self) -> &'a AtomicUsize {
        &self.0.join_helpers
    }

    // What lives in the pool without being queued.

    /// The pool's strands (`strands.rs`).
    #[inline]
    pub(crate) fn strands(self) -> &'a Strands {
        &self.0.strands
    }

    /// The pool's live async tasks (`async_tasks.rs`).
    #[inline]
    pub(crate) fn async_tasks(self) -> &'a LiveTasks {
        &self.0.async_tasks
    }

    /// Who waits for an object of the pool to end (`end_waiters.rs`).
    #[inline]
    pub(crate) fn end_waiters(self) -> &'a EndWaiters {
        &self.0.actor_ends
    }

    /// Strands waiting for what code outside the pool raises.
    #[inline]
    pub(crate) fn outside_waits(self) -> &'a AtomicUsize {
        &self.0.outside_waits
    }

    /// The pool's deadlines (`timers.rs`).
    #[inline]
    pub(crate) fn timers(self) -> &'a Timers {
        &self.0.timers
    }

    // The pool's life (`stop.rs`, `failure.rs`).

    /// Whether the pool takes no new work (stopped, or winding down).
    #[inline]
    pub(crate) fn refuses_work(self) -> bool {
        self.0.refuses_work()
    }

    /// Whether the pool is being destroyed (no new strands).
    #[inline]
    pub(crate) fn closing(self) -> bool {
        self.0.closing.load(crate::atomics::unmodelled::Ordering::SeqCst)
    }

    /// A strand of the pool ended.
    #[inline]
    pub(crate) fn strand_ended(self) {
        self.0.strand_ended()
    }

    /// A failure reached the pool with nobody to handle it.
    pub(crate) fn fail(self, failure: Option<Box<Failure>>) {
        self.0.fail(failure)
    }

    /// Records `event` in core `core`'s trace.
    #[cfg(feature = "trace")]
    #[inline]
    pub(crate) fn record_trace(self, core: usize, event: crate::trace::event::TraceEvent) {
        self.0.record_trace(core, event)
    }
}

//! A fork-join job and the protocol by which it changes hands. Kept free
//! of the pool so that `tests/loom_join.rs` model-checks this very code.
//!
//! # The parties
//!
//! The *owner* is the code inside `join(a, b)`: it made the job (`b`), on
//! its own stack, and will not return before the job is settled. A *thief*
//! is any core that takes the job out of the slot it was published in:
//! an idle core, or an owner waiting for another job, helping.
//!
//! # The state word
//!
//! ```text
//!   PRIVATE --publish--> PUBLISHED --owner waits--> WAITING(core)
//!                           |                           |
//!                           +--------thief ends---------+--> DONE / RETURNED
//! ```
//!
//! - Only the owner writes `PRIVATE` → `PUBLISHED` (before the slot store
//!   that publishes the job) and `PUBLISHED` → `WAITING(core)` (a
//!   compare-exchange, after it failed to take the job back).
//! - Only the thief that took the job writes the end: `DONE` (it ran `b`
//!   and stored the result or the failure) or `RETURNED` (it was told to
//!   discard it: the owner runs `b` itself). It does so with one swap, and
//!   never touches the job again: the owner may return the moment it sees
//!   the end, and the job dies with the owner's stack frame.
//! - The swap returns what the owner last wrote. If that was
//!   `WAITING(core)`, the thief rings `core`'s doorbell.
//!
//! # Slots
//!
//! Each core has one slot, a pointer to a published job or null.
//!
//! - Publishing: the owner compare-exchanges null → job (release), so a
//!   thief that sees the job sees everything written to it before.
//! - Taking, by a thief: a swap to null (acquire). Taking back, by the
//!   owner: a compare-exchange job → null. Exactly one of the two gets a
//!   given job, so a job runs once, and only the winner of the slot ever
//!   writes the end.
//!
//! # No lost wake-up
//!
//! The owner's compare-exchange to `WAITING(core)` and the thief's swap to
//! the end are read-modify-writes of the same word, so one comes first.
//! If the owner's does, the thief's swap returns `WAITING(core)` and rings
//! the doorbell; the doorbell keeps a ring that comes before the owner
//! waits, so the owner's wait returns. If the thief's comes first, the
//! owner's compare-exchange fails and it sees the end without waiting.
//! Owners also wait with a short deadline, because a waiter that helps
//! may move to another core (a strand that blocks inside a helped job),
//! and then the core it gave is stale.

use crate::atomics::{AtomicPtr, AtomicU32, Ordering::*};
use crate::task::{Action, Task, TaskFn};
use core::cell::Cell;
use core::ptr::{self, NonNull};

/// Not published: only the owner knows of it.
pub const PRIVATE: u32 = 0;
/// In a slot, or taken by a thief that is running it.
pub const PUBLISHED: u32 = 1;
/// A thief ran it; the result (or failure) is stored.
pub const DONE: u32 = 2;
/// A thief handed it back unrun: the owner runs it.
pub const RETURNED: u32 = 3;
/// `WAITING + core`: the owner waits on `core` for the thief.
pub const WAITING: u32 = 4;

/// The type-erased head of a job; the typed rest follows it in memory.
/// `F` is what a failed thief passes to the owner (a strand's failure; a
/// loom model has none).
#[repr(C)]
pub struct Frame<F> {
    /// How a thief runs it, through a core's ordinary task path.
    pub task: Task,
    state: AtomicU32,
    /// The core whose slot it was published in.
    pub published_in: Cell<u32>,
    /// The next job in the list of jobs the thief is running (nested when
    /// a helper's job joins and helps in turn); the thief's to touch.
    pub next_stolen: Cell<*const Frame<F>>,
    /// Ends the job with a failure instead of a result (a thief that failed
    /// while running it on bare metal, where nothing unwinds).
    pub fail: unsafe fn(NonNull<Frame<F>>, &F),
    /// How many failures a job that ended `DONE` holds, dropping its
    /// outcome: for an owner failing on bare metal, whose joins are
    /// settled without their types.
    pub failures: unsafe fn(NonNull<Frame<F>>) -> usize,
}

// SAFETY: the cells are touched by one party at a time, as the module docs
// say: `published_in` by the owner before publishing, `next_stolen` by the
// thief after taking.
unsafe impl<F> Sync for Frame<F> {}

/// How the end of a job reaches its owner: which core to ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WakeOwner(pub Option<usize>);

impl<F> Frame<F> {
    /// A private job that a thief runs with `run`, or fails with `fail`;
    /// `failures` counts what a `DONE` job failed with.
    #[inline]
    pub fn new(
        run: TaskFn,
        fail: unsafe fn(NonNull<Frame<F>>, &F),
        failures: unsafe fn(NonNull<Frame<F>>) -> usize,
    ) -> Self {
        Self {
            task: Task::new(run),
            state: AtomicU32::new(PRIVATE),
            published_in: Cell::new(0),
            next_stolen: Cell::new(ptr::null()),
            fail,
            failures,
        }
    }

    /// The owner marks it published, just before the slot store.
    pub fn mark_published(&self, core: usize) {
        self.published_in.set(u32::try_from(core).unwrap_or(u32::MAX));
        self.state.store(PUBLISHED, Relaxed);
    }

    /// The owner's look at the state (acquire: a `DONE` brings the result).
    pub fn state(&self) -> u32 {
        self.state.load(Acquire)
    }

    /// The owner asks to be rung on `core` when the job ends. Returns the
    /// end if it came first.
    pub fn wait_on(&self, core: usize) -> Option<u32> {
        let waiting = WAITING + u32::try_from(core).unwrap_or(u32::MAX - WAITING);
        match self.state.compare_exchange(PUBLISHED, waiting, AcqRel, Acquire) {
            Ok(_) => None,
            Err(end @ (DONE | RETURNED)) => Some(end),
            // Already waiting (from an earlier round on this core).
            Err(_) => None,
        }
    }

    /// The thief ends the job with `end` (`DONE` or `RETURNED`). After this
    /// the job may be gone: the caller rings what the result says and
    /// touches nothing else.
    ///
    /// # Safety
    ///
    /// The caller took the job from its slot, and for `DONE` stored the
    /// result first.
    pub unsafe fn end(job: NonNull<Frame<F>>, end: u32) -> WakeOwner {
        // SAFETY: the job is live until this swap lets the owner go.
        let before = unsafe { job.as_ref() }.state.swap(end, AcqRel);
        WakeOwner(before.checked_sub(WAITING).map(|core| core as usize))
    }

    /// Runs or discards a job taken from a slot, as a core runs any task.
    ///
    /// # Safety
    ///
    /// The caller took `job` from its slot (and so owns its end).
    pub unsafe fn call(job: NonNull<Frame<F>>, action: Action) {
        // The job's function ignores the cache: it allocates nothing.
        // SAFETY: a job's task is called once, by whoever took it.
        unsafe { Task::call(job.cast(), action, NonNull::dangling()) }
    }
}

/// A core's slot: at most one published job.
pub struct JobSlot<F>(AtomicPtr<Frame<F>>);

impl<F> JobSlot<F> {
    /// An empty slot.
    pub fn new() -> Self {
        Self(AtomicPtr::new(ptr::null_mut()))
    }

    /// Whether no job is published here.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.0.load(Relaxed).is_null()
    }

    /// Publishes `job` if the slot is empty; returns whether it did.
    ///
    /// # Safety
    ///
    /// `job` is marked published and stays live until it is taken back or
    /// its thief ends it.
    pub unsafe fn publish(&self, job: NonNull<Frame<F>>) -> bool {
        self.0.compare_exchange(ptr::null_mut(), job.as_ptr(), Release, Relaxed).is_ok()
    }

    /// A thief takes whatever job is there.
    pub fn take(&self) -> Option<NonNull<Frame<F>>> {
        if self.is_empty() {
            return None;
        }
        NonNull::new(self.0.swap(ptr::null_mut(), Acquire))
    }

    /// The owner takes `job` back, if no thief took it first.
    pub fn take_back(&self, job: NonNull<Frame<F>>) -> bool {
        self.0.compare_exchange(job.as_ptr(), ptr::null_mut(), Acquire, Relaxed).is_ok()
    }
}

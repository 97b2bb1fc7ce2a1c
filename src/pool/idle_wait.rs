//! A core's idle wait, and the work an interrupt handler on that core
//! queues there.
//!
//! A handler is no core of the pool, so a strand it wakes goes to the
//! strand's core as a message from outside: into a mailbox, with a wake-up.
//! When the handler interrupted that very core while it waited for work in
//! its loop's sleep (`super::worker::CoreSleeper::wait`), the core's queues
//! are as the loop left them, untouched until the handler returns: the loop
//! holds no reference to them across the wait, and no other core writes
//! them. The handler then stands in for the core and queues the fibre where
//! the core itself would (its LIFO slot, or its pinned queue), and the core
//! finds it first when the wait ends, without draining a mailbox.
//!
//! # Protocol
//!
//! - The core sets its `waiting_idle` mark just before the platform's wait
//!   and clears it just after, with compiler fences on the inner sides: a
//!   handler on the core sees the mark only while the loop is inside the
//!   wait, and every write the loop made to its queues before it.
//! - A handler queues into the core's lists only if it interrupted that core
//!   (the core's worker slot names this pool), the mark is set, and the pool
//!   neither stopped nor is taking the core out: the same conditions under
//!   which the core itself would queue a woken fibre of its own.
//! - The core is still counted asleep when the handler returns. Its sleep
//!   loop re-checks [`Shared::queued_in_idle_wait`] after every return from
//!   the wait (`crate::sleep`, step 7) and ends the sleep itself, as it
//!   would for work in a mailbox; nothing needs ringing, since the handler
//!   runs on the core that must see the work.
//!
//! The mark lives in the core's private state, read and written only by
//! the core and by handlers on that core, which do not nest with the loop's
//! code: a plain flag, ordered by the fences.

use super::shared::Shared;
use crate::task::Task;
use core::ptr::NonNull;
use core::sync::atomic::{Ordering::SeqCst, compiler_fence};

impl Shared {
    /// Runs `wait` (the platform's wait for an event) as core `me`'s idle
    /// wait: an interrupt handler on `me` that wakes a strand of `me`'s
    /// meanwhile may queue its fibre on `me` directly (module docs).
    ///
    /// # Safety
    ///
    /// The caller is core `me` running this pool, in its loop's sleep
    /// (between tasks), and holds no reference to its private state.
    #[inline(always)]
    pub(super) unsafe fn wait_idle(&self, me: usize, wait: impl FnOnce()) {
        // SAFETY: per the contract; the reference ends with the statement.
        unsafe { self.local(me) }.waiting_idle = true;
        compiler_fence(SeqCst);
        wait();
        compiler_fence(SeqCst);
        // SAFETY: as above.
        unsafe { self.local(me) }.waiting_idle = false;
    }

    /// For an interrupt handler: queues a woken fibre's task on core `to`,
    /// as `to` itself would, if the handler interrupted `to`'s idle wait in
    /// this pool (module docs). Returns false, doing nothing, otherwise.
    ///
    /// # Safety
    ///
    /// The task is the caller's to give, and in no list; `to` is one of
    /// the pool's slots.
    #[inline(never)]
    pub(super) unsafe fn queue_in_idle_wait(&self, task: NonNull<Task>, to: usize, pinned: bool) -> bool {
        if !crate::platform::in_interrupt() {
            return false;
        }
        let Some((pool, me)) = super::current::interrupted_worker() else { return false };
        if me != to || !pool.same(super::seam::PoolRef::new(self)) {
            return false;
        }
        // SAFETY: a handler on core `me`, which runs this pool: the loop's
        // code is interrupted, between two statements that hold no
        // reference to the core's private state (`wait_idle`), so this
        // handler stands in for the core.
        let local = unsafe { self.local(me) };
        if !local.waiting_idle || self.stopped() || self.is_leaving(me) {
            return false;
        }
        // Inside the loop's section, which its sleep keeps open.
        let _lists = self.own_lists(me);
        if pinned {
            // SAFETY: the task is ours to give (the contract).
            unsafe { local.pinned.push_back(task) };
            return true;
        }
        // SAFETY: we stand in for core `me`, the slot's owner (above); the
        // task is ours to give.
        if let Some(previous) = unsafe { self.own_core(me).lifo.put(task) } {
            // Two wakes in one handler: the older waits in the queue, as
            // for the core's own wakes.
            // SAFETY: the displaced task is ours.
            unsafe { local.queue.push_back(previous) };
        }
        true
    }

    /// Whether a handler queued work on core `me` during its idle wait
    /// ([`Shared::queue_in_idle_wait`]): the sleep's re-check after each
    /// return from the wait.
    ///
    /// # Safety
    ///
    /// The caller is core `me` running this pool, between tasks, and holds
    /// no reference to its private state.
    #[inline(always)]
    pub(super) unsafe fn queued_in_idle_wait(&self, me: usize) -> bool {
        // SAFETY: per the contract.
        let (local, core) = unsafe { (self.local(me), self.own_core(me)) };
        core.lifo.is_occupied() || local.pinned.len() > 0
    }
}

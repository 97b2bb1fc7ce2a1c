//! A core's LIFO slot: the newest task it spawned or woke for itself,
//! which it runs next, and which an idle core may take once it has sat
//! there a while.
//!
//! # Why a slot
//!
//! A strand that spawns a strand and then waits for it (a join, a channel
//! hand-off, a `.then`) is the commonest spawn. The child should run on
//! the same core as soon as the parent blocks: its data are in this core's
//! cache, and the parent's wake-up stays local. Offering it to an idle core
//! at once would move it away and make the parent's wake-up cross cores. So
//! a spawn puts the task here and wakes nobody. It is still stealable: a
//! parent that goes on computing must not keep its child from an idle core
//! for long.
//!
//! # Protocol
//!
//! The slot is one pointer, null when empty.
//!
//! - **Put** (the owner only): if the slot is empty, store the task
//!   (release); no one else ever makes it non-empty, so a plain store
//!   cannot overwrite anything. Otherwise swap it in and return what was
//!   there: the displaced task, or null if a thief took it meanwhile.
//! - **Take** (the owner): load; if non-empty, swap in null (acquire) and
//!   return what the swap read.
//! - **Steal** (another core): a thief takes only a task it saw in the slot
//!   on its previous look ([`LifoSlot::steal_if_seen`]): compare-exchange
//!   that pointer with null. The age check gives the owner's strand the
//!   time to block and hand its core to the child; it is a heuristic
//!   only, and a reused address that makes a new task look old only
//!   makes a steal early.
//!
//! Every task leaves the slot through exactly one successful swap or
//! compare-exchange, each of which reads the pointer and writes null (or
//! the next task) in one step, so no task is taken twice or lost: a put's
//! swap returns the one it displaced to the owner. A thief's
//! acquire pairs with the put's release, so it sees the task's contents.
//! `tests/loom_lifo.rs` checks this with an owner that puts, replaces and
//! takes while a thief steals.

use crate::atomics::{AtomicPtr, Ordering::*};
use crate::task::Task;
use core::ptr::{self, NonNull};

/// One core's LIFO slot (module docs).
pub struct LifoSlot(AtomicPtr<Task>);

impl LifoSlot {
    /// An empty slot.
    pub fn new() -> Self {
        Self(AtomicPtr::new(ptr::null_mut()))
    }

    /// Puts `task` in the slot; returns the task it displaced, if any.
    ///
    /// # Safety
    ///
    /// Only the slot's owner core calls this, and `task` is its to give.
    #[inline]
    pub unsafe fn put(&self, task: NonNull<Task>) -> Option<NonNull<Task>> {
        if self.0.load(Relaxed).is_null() {
            self.0.store(task.as_ptr(), Release);
            return None;
        }
        NonNull::new(self.0.swap(task.as_ptr(), AcqRel))
    }

    /// Takes the task in the slot, if any: the owner's way.
    #[inline]
    pub fn take(&self) -> Option<NonNull<Task>> {
        if self.0.load(Relaxed).is_null() {
            return None;
        }
        NonNull::new(self.0.swap(ptr::null_mut(), Acquire))
    }

    /// The task in the slot now, which may be taken by the time the caller
    /// looks at it: only its owner may rely on it staying, and only until
    /// a thief takes it.
    #[inline]
    pub fn peek(&self) -> Option<NonNull<Task>> {
        NonNull::new(self.0.load(Acquire))
    }

    /// Takes the task in the slot if it is `seen`, the one the caller
    /// found there on its previous look (module docs, "Steal").
    pub fn steal_if_seen(&self, seen: NonNull<Task>) -> Option<NonNull<Task>> {
        self.0.compare_exchange(seen.as_ptr(), ptr::null_mut(), Acquire, Relaxed).ok().and_then(NonNull::new)
    }

    /// Whether the slot holds a task.
    #[inline]
    pub fn is_occupied(&self) -> bool {
        !self.0.load(Relaxed).is_null()
    }
}

impl Default for LifoSlot {
    fn default() -> Self {
        Self::new()
    }
}

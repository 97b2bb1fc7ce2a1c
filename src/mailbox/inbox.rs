//! An inbox: a multi-producer list of tasks for one owner, and whether the
//! owner is scheduled. The push that finds the owner idle obliges its
//! pusher to schedule the owner; the owner drains the inbox while
//! scheduled and, when it finds it empty, unschedules itself.
//!
//! Fibres use it for the strands made runnable on them.
//!
//! # Protocol
//!
//! The inbox is one [`AtomicList`], and the owner is *idle* exactly when
//! the list's head carries the armed tag (`super::list`).
//!
//! - **Push** (anyone): push the item. If the push replaced the armed tag,
//!   the owner was idle and is now scheduled: this pusher schedules it.
//! - **Drain** (the owner, only while scheduled): take the whole list.
//!   The head of a scheduled owner's list has no tag, and a take leaves it
//!   so.
//! - **Finish** (the owner, when it has nothing left): arm the list if it
//!   is empty, with one compare-exchange. If it is not empty, the owner
//!   stays scheduled and drains again.
//!
//! # Why no item is stranded, the owner never runs twice at once, and a
//! pusher never touches an owner that may be gone
//!
//! Every operation is a read-modify-write of the one head word, so they
//! are totally ordered. The armed tag is removed only by a push (which
//! then schedules the owner) and set only by the owner's finish (which
//! unschedules it): at most one party holds the schedule at a time.
//!
//! An item pushed while the owner is scheduled is in the list when the
//! owner's finish runs, or was taken by a drain before it: the finish's
//! exchange fails on a non-empty list, so the owner drains it. An item
//! pushed after the finish replaces the tag, and its pusher schedules the
//! owner.
//!
//! The push and the test for an idle owner are one atomic step. A pusher
//! that did not find the owner idle is done with it at that step, so an
//! owner that drains and retires the last item (a fibre whose last strand
//! finishes and is freed) is never scheduled by a late pusher. A pusher
//! that did find it idle schedules it while its own item is still in the
//! list, untaken (only the scheduled owner takes), so the owner is alive
//! (for a fibre: that strand still holds it) until the schedule lands.
//!
//! An earlier version kept the flag in a second word, swapped after the
//! push. Between the two, the scheduled owner could take the item, run it
//! to the end, retire and unschedule; the late swap then found the owner
//! idle and scheduled a fibre that had been freed (a crash in the host
//! stress test). `tests/loom_inbox.rs` checks both properties.

use super::list::{AtomicList, Chain, Pushed};
use crate::task::Task;
use core::ptr::NonNull;

/// A list of tasks and its owner's schedule.
pub struct Inbox {
    /// Armed while the owner is idle.
    list: AtomicList,
}

impl Inbox {
    /// An empty inbox whose owner is not scheduled.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        Self { list: AtomicList::new_armed() }
    }

    /// An empty inbox whose owner is not scheduled.
    #[cfg(loom)]
    pub fn new() -> Self {
        Self { list: AtomicList::new_armed() }
    }

    /// Pushes `task`; returns `true` if the caller must now schedule the
    /// owner (it was idle). If it returns `false` the caller must not touch
    /// the owner again on this item's account: it may already be gone.
    ///
    /// # Safety
    ///
    /// The caller owns `task`, a live header in no list, and gives it up.
    #[must_use = "a push into an idle inbox must schedule its owner"]
    pub unsafe fn push(&self, task: NonNull<Task>) -> bool {
        // SAFETY: the caller's contract; an inbox is never closed.
        match unsafe { self.list.push(task) } {
            Pushed::WasArmed => true,
            Pushed::Queued => false,
            Pushed::Closed => unreachable!("an inbox is never closed"),
        }
    }

    /// Takes everything pushed so far, newest first. Owner only, while
    /// scheduled.
    pub fn take_all(&self) -> Chain {
        self.list.take_all()
    }

    /// Whether anything is waiting.
    pub fn has_tasks(&self) -> bool {
        self.list.has_tasks()
    }

    /// The owner unschedules itself if nothing is waiting. Returns `true`
    /// if it must stay scheduled after all (something arrived).
    #[must_use = "an owner that stays scheduled must drain again"]
    pub fn finish(&self) -> bool {
        crate::chaos::point();
        !self.list.arm_if_empty()
    }
}

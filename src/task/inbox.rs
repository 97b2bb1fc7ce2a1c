//! An inbox: a multi-producer list of tasks for one owner, with a flag
//! that says whether the owner is scheduled. The first push into an idle
//! inbox obliges the pusher to schedule the owner; the owner drains the
//! inbox while scheduled and, when it finds it empty, unschedules itself.
//!
//! Fibres use it for the strands made runnable on them; actors (later)
//! for their messages. It is the "schedule flag" of seed 003.
//!
//! # Protocol
//!
//! - **Push** (anyone): push the item onto the list, then swap the flag to
//!   `SCHEDULED`. If it was `IDLE`, this pusher schedules the owner.
//! - **Drain** (the owner, only while scheduled): take the whole list.
//! - **Finish** (the owner, when it has nothing left): swap in `IDLE`, then
//!   look at the list. If it holds anything and the owner wins the swap of
//!   the flag back to `SCHEDULED`, the owner stays scheduled and drains
//!   again.
//!
//! # Why no item is stranded and the owner never runs twice at once
//!
//! The owner is scheduled exactly when some party's swap turned the flag
//! from `IDLE` to `SCHEDULED`, and unscheduled only by its own swap to
//! `IDLE`: so at most one party holds the schedule at a time.
//!
//! Take a push whose item is still in the list after the owner's last
//! drain. The push (P: list push, then S: flag swap) and the owner's
//! finish (I: swap in `IDLE`, then L: load the list) are all seq-cst, so
//! they are totally ordered. If S comes after I, the swap reads `IDLE` (or
//! reads `SCHEDULED` written by another pusher or by the owner's own
//! re-schedule after I, who then schedules the owner): someone schedules.
//! If S comes before I, then P comes before L, so L sees the item and the
//! owner keeps itself scheduled, unless another party swapped first, in
//! which case that party schedules it. Either way the item is taken.
//! `tests/loom_inbox.rs` checks this with two pushers.

use super::Task;
use super::list::{AtomicList, Chain};
use crate::atomics::{AtomicU32, Ordering::SeqCst};
use core::ptr::NonNull;

const IDLE: u32 = 0;
const SCHEDULED: u32 = 1;

/// A list of tasks and its owner's schedule flag.
pub struct Inbox {
    list: AtomicList,
    flag: AtomicU32,
}

impl Inbox {
    /// An empty inbox whose owner is not scheduled.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        Self { list: AtomicList::new(), flag: AtomicU32::new(IDLE) }
    }

    /// An empty inbox whose owner is not scheduled.
    #[cfg(loom)]
    pub fn new() -> Self {
        Self { list: AtomicList::new(), flag: AtomicU32::new(IDLE) }
    }

    /// Pushes `task`; returns `true` if the caller must now schedule the
    /// owner (it was idle).
    ///
    /// # Safety
    ///
    /// The caller owns `task`, a live header in no list, and gives it up.
    #[must_use = "a push into an idle inbox must schedule its owner"]
    pub unsafe fn push(&self, task: NonNull<Task>) -> bool {
        // SAFETY: the caller's contract; this list has no sentinel.
        let _ = unsafe { self.list.push(task) };
        self.flag.swap(SCHEDULED, SeqCst) == IDLE
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

    /// The owner unschedules itself. Returns `true` if it must stay
    /// scheduled after all (something arrived and it won the flag back).
    #[must_use = "an owner that stays scheduled must drain again"]
    pub fn finish(&self) -> bool {
        // A swap, not a store: loom models seq-cst stores as release
        // stores, and then reports a store-load reordering that seq-cst
        // forbids. On the hardware both are one exchange or store-release.
        self.flag.swap(IDLE, SeqCst);
        self.list.has_tasks() && self.flag.swap(SCHEDULED, SeqCst) == IDLE
    }
}

//! An async task's state word: whether it is queued, being polled,
//! finished or cancelled, whether its handle still wants the output, and
//! how many references keep its allocation.
//!
//! # The word
//!
//! | bits | meaning |
//! |---|---|
//! | `SCHEDULED` (bit 0) | a poll is owed: the task is in a run queue, or whoever set the bit is putting it in one, or (with `RUNNING`) it was woken while being polled |
//! | `RUNNING` (bit 1) | a core is polling the task, or dropping its future |
//! | `DONE` (bit 2) | the future is gone; the output (or why there is none) is stored |
//! | `CANCELLED` (bit 3) | its handle asked for it to stop |
//! | `HANDLE` (bit 4) | the handle is alive and will read the output |
//! | the rest | references: the handle, each `Waker`, the pool's list of live tasks, and the run queue while `SCHEDULED` without `RUNNING` |
//!
//! # Protocol
//!
//! - **Wake** (any core, code outside the pool, an interrupt handler): if
//!   `DONE` or `SCHEDULED`, nothing. If `RUNNING`, set `SCHEDULED`: the
//!   poller queues it again. Otherwise set `SCHEDULED` and add a
//!   reference: the waker *won the wake* and must queue the task, which
//!   then owns that reference.
//! - **Start a poll** (the core that took the task from a queue, holding
//!   the queue's reference): clear `SCHEDULED`, set `RUNNING`. If
//!   `CANCELLED` is set, drop the future instead of polling it.
//! - **End a poll that returned `Pending`**: if `CANCELLED`, keep `RUNNING`
//!   and drop the future now. Otherwise clear `RUNNING`; if `SCHEDULED`
//!   was set meanwhile, queue the task again with the same reference,
//!   else drop that reference.
//! - **Complete** (the poller, after storing the output): set `DONE`, clear
//!   `RUNNING` and `SCHEDULED`. If `HANDLE` was clear, nobody will read
//!   the output: the poller drops it.
//! - **Cancel** (the handle): unless `DONE`, set `CANCELLED`; if the task
//!   was idle (neither `SCHEDULED` nor `RUNNING`), also set `SCHEDULED` and
//!   add a reference, and queue it, as a wake does.
//! - **Drop the handle**: clear `HANDLE`. If `DONE` was set, the handle
//!   drops the stored output itself.
//! - **Tear down** (the pool, once no core runs it and no post is in
//!   flight, for tasks still in its list): unless `DONE` or `RUNNING`, set
//!   `RUNNING` even if `SCHEDULED` is set (a wake that found the pool
//!   stopped leaves it so, queued nowhere), then drop the future and
//!   complete.
//!
//! # Why it is correct (sketch)
//!
//! Every access but a few reads of final bits (`DONE`, `CANCELLED`) is a
//! read-modify-write of the one word, wakes included, so they are totally
//! ordered and each sees the one before, and each synchronises with the
//! one before it. (A wake that only read the word, as a first version
//! did when it found `SCHEDULED` set, could read it from before a poll
//! began while that poll read the waker's data from before the wake: the
//! loom model found that lost wake.)
//!
//! - **Never two polls at once, never a lost wake.** A task enters a queue
//!   only by whoever moved it from idle to `SCHEDULED` (a wake or cancel)
//!   or by its poller seeing `SCHEDULED` as it clears `RUNNING`. While it
//!   is `RUNNING` no wake queues it. A wake ordered before the end of a
//!   poll sets `SCHEDULED`, which that end sees (one more poll); a wake
//!   ordered after it finds the task idle and queues it. So every wake is
//!   followed by a poll that starts after it, and wakes that land while a
//!   poll is owed add nothing: a wake during a poll causes exactly one
//!   more.
//! - **Nothing touches a finished future.** `DONE` is set once, by the one
//!   poller, after the future is dropped; wakes and cancels that see it do
//!   nothing.
//! - **The output is dropped exactly once.** Completion and the handle's
//!   drop both change the word; whichever comes second sees the other's
//!   bit (`HANDLE` clear, or `DONE` set) and drops it.
//! - **The allocation outlives its users.** Whoever can touch the task
//!   holds a reference; the last release frees it.
//! - **Hand-over.** A poll's effects are published by the release of its
//!   end, and read by whoever next wins the wake (acquire) and the core
//!   that takes the task from the queue (the queues publish what they
//!   carry).
//!
//! `tests/loom_task.rs` checks this word: a wake during a poll, a wake
//! after completion, wakes from two cores at once, and a cancel racing a
//! wake.

use crate::atomics::{
    AtomicUsize,
    Ordering::{AcqRel, Acquire, Relaxed, Release},
};

const SCHEDULED: usize = 1;
const RUNNING: usize = 2;
const DONE: usize = 4;
const CANCELLED: usize = 8;
const HANDLE: usize = 16;
const REF: usize = 32;
const FLAGS: usize = REF - 1;

/// What a wake or a cancel leaves the caller to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use = "a wake that won must queue the task"]
pub enum Wake {
    /// Nothing: the task is queued, being polled (it will be polled
    /// again), or finished.
    Nothing,
    /// The caller won the wake: queue the task, which owns the reference
    /// the wake added.
    Queue,
}

/// What the core that took a task from a queue does with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Start {
    /// Poll the future.
    Poll,
    /// It was cancelled: drop the future instead.
    Cancelled,
}

/// What a poll that returned `Pending` leaves its core to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AfterPending {
    /// Wait for a wake: release the queue's reference.
    Idle,
    /// It was woken while polled: queue it again, with the same reference.
    Requeue,
    /// It was cancelled while polled: drop the future and complete.
    Cancelled,
}

/// The word.
pub struct AsyncState {
    word: AtomicUsize,
}

impl AsyncState {
    /// A task about to be queued for its first poll, with `references`
    /// (the queue's among them) and a handle that wants the output.
    pub fn new(references: usize) -> Self {
        Self { word: AtomicUsize::new(SCHEDULED | HANDLE | (references * REF)) }
    }

    /// Moves the word from `old` by `change`, retrying while others move
    /// it; `change` says `None` to leave it as it is. Returns the word
    /// before.
    fn update(&self, mut change: impl FnMut(usize) -> Option<usize>) -> usize {
        let mut old = self.word.load(Acquire);
        loop {
            let Some(new) = change(old) else { return old };
            match self.word.compare_exchange_weak(old, new, AcqRel, Acquire) {
                Ok(_) => return old,
                Err(now) => old = now,
            }
        }
    }

    /// A wake (module docs). Always a read-modify-write, even when it
    /// changes nothing that matters: a wake that only *read* the word
    /// could see it from before a poll started, while that poll reads
    /// what the waker wrote from before the wake (the two threads would
    /// each miss the other's write), and the wake would be lost.
    #[inline]
    pub fn wake(&self) -> Wake {
        let old = self.word.fetch_or(SCHEDULED, AcqRel);
        if old & (DONE | SCHEDULED | RUNNING) != 0 {
            // Done (the bit is harmless there), already owed a poll, or
            // being polled (its poller sees the bit and queues it again).
            return Wake::Nothing;
        }
        // We won: the queue gets a reference before the task is queued.
        self.acquire();
        Wake::Queue
    }

    /// A cancel (module docs).
    pub fn cancel(&self) -> Wake {
        let old = self.update(|old| match old {
            _ if old & (DONE | CANCELLED) != 0 => None,
            _ if old & (SCHEDULED | RUNNING) != 0 => Some(old | CANCELLED),
            _ => Some((old | CANCELLED | SCHEDULED) + REF),
        });
        if old & (DONE | CANCELLED | SCHEDULED | RUNNING) == 0 { Wake::Queue } else { Wake::Nothing }
    }

    /// Starts the poll the caller took from a queue.
    #[inline]
    pub fn start_poll(&self) -> Start {
        // A queued task has `SCHEDULED` (bit 0) and not `RUNNING` (bit 1),
        // so adding 1 clears the one and sets the other: one atomic add
        // where a compare-and-swap loop would read the word first.
        const _: () = assert!(SCHEDULED + SCHEDULED == RUNNING);
        let old = self.word.fetch_add(SCHEDULED, AcqRel);
        debug_assert_eq!(old & (SCHEDULED | RUNNING | DONE), SCHEDULED, "a queued task is owed a poll");
        if old & CANCELLED != 0 { Start::Cancelled } else { Start::Poll }
    }

    /// Ends a poll that returned `Pending`.
    #[inline]
    pub fn end_pending(&self) -> AfterPending {
        let old = self.update(|old| match old {
            _ if old & CANCELLED != 0 => None,
            _ => Some(old & !RUNNING),
        });
        match old {
            _ if old & CANCELLED != 0 => AfterPending::Cancelled,
            _ if old & SCHEDULED != 0 => AfterPending::Requeue,
            _ => AfterPending::Idle,
        }
    }

    /// Completes the task whose output the caller has just stored. Returns
    /// whether the handle will read it (if not, the caller drops it).
    pub fn complete(&self) -> bool {
        let old = self.update(|old| Some((old & !(RUNNING | SCHEDULED)) | DONE));
        debug_assert_ne!(old & RUNNING, 0, "only the poller completes");
        old & HANDLE != 0
    }

    /// Claims a task for tear-down (module docs); false if it is finished
    /// or being polled.
    pub fn claim_for_teardown(&self) -> bool {
        let old = self.update(|old| match old {
            _ if old & (DONE | RUNNING) != 0 => None,
            _ => Some((old & !SCHEDULED) | RUNNING),
        });
        old & (DONE | RUNNING) == 0
    }

    /// The handle is dropped. Returns whether the task is done, so the
    /// handle must drop the stored output.
    pub fn drop_handle(&self) -> bool {
        self.word.fetch_and(!HANDLE, AcqRel) & DONE != 0
    }

    /// Whether the task has finished (acquire: its output is readable).
    pub fn is_done(&self) -> bool {
        self.word.load(Acquire) & DONE != 0
    }

    /// Adds a reference.
    pub fn acquire(&self) {
        let old = self.word.fetch_add(REF, Relaxed);
        // A count this large means references leaked in a loop.
        assert!(old < usize::MAX / 2, "task reference count overflow");
    }

    /// Drops a reference. Returns true if it was the last: the caller
    /// frees the task.
    pub fn release(&self) -> bool {
        let old = self.word.fetch_sub(REF, Release);
        debug_assert!(old >= REF, "a task reference released twice");
        if old & !FLAGS != REF {
            return false;
        }
        // Everything the other holders did happens before the free: an
        // acquire load of the word reads the end of the release sequence
        // their decrements are in. (Not a fence: ThreadSanitizer does not
        // model fences.)
        let _ = self.word.load(Acquire);
        true
    }
}

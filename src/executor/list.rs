//! A pool's list of its live async tasks: spawned and not yet complete,
//! whether queued, being polled, or waiting for a wake.
//!
//! The pool needs it for what no wake will bring: when it stops, the tasks
//! still waiting are dropped and counted; when it deadlocks, they are
//! cancelled. The list holds a reference to each task, given up when the
//! task completes, and is split in one shard per core (and one for code
//! outside the pool) so spawning tasks on different cores takes different
//! locks. A task stays in the shard it was spawned from.

use super::cell::{self, Header};
use crate::atomics::CachePadded;
use crate::spin_lock::SpinLock;
use alloc::boxed::Box;
use alloc::vec::Vec;
use core::ptr::{self, NonNull};
use core::sync::atomic::{AtomicUsize, Ordering::SeqCst};

const PREV: usize = 0;
const NEXT: usize = 1;

/// The first task of a shard; the links are in the tasks' headers.
struct Shard(*mut Header);

// SAFETY: the shard only links task headers, which are shared between
// cores by design; its lock guards the links.
unsafe impl Send for Shard {}

/// The list.
pub(crate) struct LiveTasks {
    shards: Box<[CachePadded<SpinLock<Shard>>]>,
    count: AtomicUsize,
}

impl LiveTasks {
    /// A list with a shard for each of `cores` and one for outside code.
    pub(crate) fn new(cores: usize) -> Self {
        let shards = (0..=cores).map(|_| CachePadded(SpinLock::new(Shard(ptr::null_mut())))).collect();
        Self { shards, count: AtomicUsize::new(0) }
    }

    /// The shard for a task spawned on `core` (`None`: from outside).
    pub(crate) fn shard_for(&self, core: Option<usize>) -> usize {
        core.unwrap_or(self.shards.len() - 1)
    }

    /// Tasks spawned and not complete.
    pub(crate) fn count(&self) -> usize {
        self.count.load(SeqCst)
    }

    /// Adds a task, which gives the list one of its references.
    ///
    /// # Safety
    ///
    /// `header` is live, in no list, and its shard is one of this list's.
    pub(crate) unsafe fn insert(&self, header: NonNull<Header>) {
        self.count.fetch_add(1, SeqCst);
        // SAFETY: live (contract).
        let header_ref = unsafe { header.as_ref() };
        let mut shard = self.shards[header_ref.shard].lock();
        // SAFETY: the shard's lock guards every link in it.
        unsafe {
            *header_ref.links.get() = [ptr::null_mut(), shard.0];
            if let Some(first) = NonNull::new(shard.0) {
                (*first.as_ref().links.get())[PREV] = header.as_ptr();
            }
        }
        shard.0 = header.as_ptr();
    }

    /// Takes a task out; the caller now holds the list's reference.
    ///
    /// # Safety
    ///
    /// `header` is live and in this list.
    pub(crate) unsafe fn remove(&self, header: NonNull<Header>) {
        // SAFETY: live (contract).
        let header_ref = unsafe { header.as_ref() };
        {
            let mut shard = self.shards[header_ref.shard].lock();
            // SAFETY: the shard's lock guards every link in it; linked
            // tasks are live (the list holds a reference to each).
            unsafe {
                let [prev, next] = *header_ref.links.get();
                match NonNull::new(prev) {
                    Some(prev) => (*prev.as_ref().links.get())[NEXT] = next,
                    None => shard.0 = next,
                }
                if let Some(next) = NonNull::new(next) {
                    (*next.as_ref().links.get())[PREV] = prev;
                }
            }
        }
        self.count.fetch_sub(1, SeqCst);
    }

    /// Every live task, each with a reference taken for the caller.
    fn snapshot(&self) -> Vec<NonNull<Header>> {
        let mut tasks = Vec::with_capacity(self.count());
        for shard in self.shards.iter() {
            let shard = shard.lock();
            let mut next = shard.0;
            while let Some(header) = NonNull::new(next) {
                // SAFETY: linked, so live; the lock guards the links.
                unsafe {
                    header.as_ref().state.acquire();
                    next = (*header.as_ref().links.get())[NEXT];
                }
                tasks.push(header);
            }
        }
        tasks
    }

    /// Cancels every live task (a deadlocked pool). Each is dropped at its
    /// next poll, which the cancel queues.
    pub(crate) fn cancel_all(&self) {
        for header in self.snapshot() {
            // SAFETY: the snapshot's reference keeps it live; given up here.
            unsafe {
                cell::cancel(header);
                cell::release(header);
            }
        }
    }

    /// Drops the future of every task still in the list and completes it
    /// as stopped. Returns how many.
    ///
    /// # Safety
    ///
    /// No core runs the pool, no post to it is in flight, and its queues
    /// are empty: nothing else polls these tasks.
    pub(crate) unsafe fn tear_down(&self) -> usize {
        let mut dropped = 0;
        for header in self.snapshot() {
            // SAFETY: the snapshot's reference keeps it live; nothing else
            // polls it (contract); the reference is given up after.
            unsafe {
                dropped += usize::from(cell::tear_down(header));
                cell::release(header);
            }
        }
        dropped
    }
}

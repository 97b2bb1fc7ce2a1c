//! A pool's list of its live async tasks: spawned and not yet complete,
//! whether queued, being polled, or waiting for a wake.
//!
//! The list links each task through the [`LiveLink`] in its header and
//! knows nothing else of it: the executor supplies what to do with a task
//! ([`AsyncOps`], attached when the pool is built).
//!
//! The pool needs it for what no wake will bring: when it stops, the tasks
//! still waiting are dropped and counted; when it deadlocks, they are
//! cancelled. The list holds a reference to each task, given up when the
//! task completes, and is split in one shard per core (and one for code
//! outside the pool) so spawning tasks on different cores takes different
//! locks. A task stays in the shard it was spawned from.

use crate::atomics::CachePadded;
use crate::atomics::unmodelled::{
    AtomicPtr, AtomicUsize, Ordering::Acquire, Ordering::Release, Ordering::SeqCst,
};
use crate::spin_lock::SpinLock;
use alloc::boxed::Box;
use alloc::vec::Vec;
use core::cell::UnsafeCell;
use core::ptr::{self, NonNull};

const PREV: usize = 0;
const NEXT: usize = 1;

/// A task's place in the list: a field of its header.
pub(crate) struct LiveLink {
    /// Links in the list, guarded by its shard's lock.
    links: UnsafeCell<[*mut LiveLink; 2]>,
    /// Which of the list's shards holds it.
    shard: usize,
}

impl LiveLink {
    /// The link of a task listed in `shard` (from [`LiveTasks::shard_for`]).
    pub(crate) const fn new(shard: usize) -> Self {
        Self { links: UnsafeCell::new([ptr::null_mut(); 2]), shard }
    }
}

/// What the list does to a task, which the executor supplies: each takes
/// the task by its link.
pub(crate) struct AsyncOps {
    /// Takes another reference to the task.
    pub(crate) acquire: unsafe fn(NonNull<LiveLink>),
    /// Gives one up.
    pub(crate) release: unsafe fn(NonNull<LiveLink>),
    /// Cancels it, as its handle would.
    pub(crate) cancel: unsafe fn(NonNull<LiveLink>),
    /// Drops its future unpolled, its pool gone; says whether it had one.
    pub(crate) tear_down: unsafe fn(NonNull<LiveLink>) -> bool,
}

/// The first task of a shard; the links are in the tasks' headers.
struct Shard(*mut LiveLink);

// SAFETY: the shard only links tasks, which are shared between cores by
// design; its lock guards the links.
unsafe impl Send for Shard {}

/// The list.
pub(crate) struct LiveTasks {
    shards: Box<[CachePadded<SpinLock<Shard>>]>,
    count: AtomicUsize,
    /// The executor's operations, attached when the pool is built.
    ops: AtomicPtr<AsyncOps>,
}

impl LiveTasks {
    /// A list with a shard for each of `cores` and one for outside code.
    pub(crate) fn new(cores: usize) -> Self {
        let shards = (0..=cores).map(|_| CachePadded(SpinLock::new(Shard(ptr::null_mut())))).collect();
        Self { shards, count: AtomicUsize::new(0), ops: AtomicPtr::new(ptr::null_mut()) }
    }

    /// The shard for a task spawned on `core` (`None`: from outside).
    pub(crate) fn shard_for(&self, core: Option<usize>) -> usize {
        core.unwrap_or(self.shards.len() - 1)
    }

    /// Tasks spawned and not complete.
    pub(crate) fn count(&self) -> usize {
        self.count.load(SeqCst)
    }

    /// Attaches the executor's operations, when the pool is built; every
    /// call passes the same ones.
    pub(crate) fn attach(&self, ops: &'static AsyncOps) {
        if self.ops.load(Acquire).is_null() {
            self.ops.store(ptr::from_ref(ops).cast_mut(), Release);
        }
    }

    /// Adds a task, which gives the list one of its references.
    ///
    /// # Safety
    ///
    /// `link` is the link of a live task, in no list, made for one of this
    /// list's shards; it stays put until the task is removed.
    pub(crate) unsafe fn insert(&self, link: NonNull<LiveLink>) {
        self.count.fetch_add(1, SeqCst);
        // SAFETY: live (contract).
        let link_ref = unsafe { link.as_ref() };
        let mut shard = self.shards[link_ref.shard].lock();
        // SAFETY: the shard's lock guards every link in it.
        unsafe {
            *link_ref.links.get() = [ptr::null_mut(), shard.0];
            if let Some(first) = NonNull::new(shard.0) {
                (*first.as_ref().links.get())[PREV] = link.as_ptr();
            }
        }
        shard.0 = link.as_ptr();
    }

    /// Takes a task out; the caller now holds the list's reference.
    ///
    /// # Safety
    ///
    /// `link` is a live task's, in this list.
    pub(crate) unsafe fn remove(&self, link: NonNull<LiveLink>) {
        // SAFETY: live (contract).
        let link_ref = unsafe { link.as_ref() };
        {
            let mut shard = self.shards[link_ref.shard].lock();
            // SAFETY: the shard's lock guards every link in it; linked
            // tasks are live (the list holds a reference to each).
            unsafe {
                let [prev, next] = *link_ref.links.get();
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

    /// Every live task, each with a reference taken for the caller, and
    /// what to do with them.
    fn snapshot(&self) -> (Vec<NonNull<LiveLink>>, Option<&'static AsyncOps>) {
        // SAFETY: only `insert` stores here, a `&'static AsyncOps`.
        let Some(ops) = (unsafe { self.ops.load(Acquire).as_ref() }) else { return (Vec::new(), None) };
        let mut tasks = Vec::with_capacity(self.count());
        for shard in self.shards.iter() {
            let shard = shard.lock();
            let mut next = shard.0;
            while let Some(link) = NonNull::new(next) {
                // SAFETY: linked, so live; the lock guards the links.
                unsafe {
                    (ops.acquire)(link);
                    next = (*link.as_ref().links.get())[NEXT];
                }
                tasks.push(link);
            }
        }
        (tasks, Some(ops))
    }

    /// Cancels every live task (a deadlocked pool). Each is dropped at its
    /// next poll, which the cancel queues.
    pub(crate) fn cancel_all(&self) {
        let (tasks, ops) = self.snapshot();
        for (link, ops) in tasks.into_iter().zip(core::iter::repeat(ops).flatten()) {
            // SAFETY: the snapshot's reference keeps it live; given up here.
            unsafe {
                (ops.cancel)(link);
                (ops.release)(link);
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
        let (tasks, ops) = self.snapshot();
        for (link, ops) in tasks.into_iter().zip(core::iter::repeat(ops).flatten()) {
            // SAFETY: the snapshot's reference keeps it live; nothing else
            // polls it (contract); the reference is given up after.
            unsafe {
                dropped += usize::from((ops.tear_down)(link));
                (ops.release)(link);
            }
        }
        dropped
    }
}

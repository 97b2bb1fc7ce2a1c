//! What a pool keeps for the strands it runs, without knowing what a
//! strand is: how many live, which entered it from outside, and the
//! operations the strand layer supplies for them ([`StrandOps`], attached
//! when the pool is built, before anything can spawn into it).
//!
//! # Entries
//!
//! A strand spawned by a strand of the same pool is a descendant of one
//! that entered the pool: cancelling a strand cancels its subtree, so
//! cancelling the entries reaches every strand of the pool (and whatever
//! they spawned into other pools, as structured concurrency wants). An
//! entry is a strand spawned from outside strands, a pool's root, or a
//! strand whose parent runs in another pool. Only those pay for the
//! registry (a lock and a reference); spawns inside the pool do not.
//!
//! The pool holds an entry by its control block's task header (where every
//! control block starts), and a reference to it, taken and given up through
//! the ops.

use super::deadlock::Waiter;
use crate::atomics::unmodelled::{
    AtomicPtr, AtomicUsize, Ordering::Acquire, Ordering::Release, Ordering::SeqCst,
};
use crate::spin_lock::SpinLock;
use crate::strand::id::StrandId;
use crate::task::Task;
use alloc::vec::Vec;
use core::ptr::{self, NonNull};

/// What the pool asks of the strand layer, about strands it names by their
/// control block's task header.
pub(crate) struct StrandOps {
    /// Whether a task runs strands: a fibre's, or a fork-join job on a
    /// fibre's stack. A pool winding down runs only those (`super::stop`).
    pub(crate) runs_strands: fn(NonNull<Task>) -> bool,
    /// Whether the strand has finished.
    pub(crate) finished: fn(NonNull<Task>) -> bool,
    /// Takes a reference to its control block.
    pub(crate) acquire: fn(NonNull<Task>),
    /// Gives one up.
    ///
    /// # Safety
    ///
    /// The caller owns the reference and does not use the strand after.
    pub(crate) release: unsafe fn(NonNull<Task>),
    /// Cancels the strand and its subtree.
    pub(crate) cancel: fn(NonNull<Task>),
    /// Adds the blocked strands of its subtree to a deadlock report.
    pub(crate) waiting: fn(NonNull<Task>, &mut Vec<Waiter>),
    /// The strand's id.
    pub(crate) id: fn(NonNull<Task>) -> StrandId,
    /// Fails the strand that core `core` ran when it was taken out of the
    /// pool, on its behalf (`super::take_out`).
    ///
    /// # Safety
    ///
    /// The strand is the one the core was running, and the core touches
    /// none of its state again.
    pub(crate) lose: unsafe fn(NonNull<Task>, usize),
}

/// A pool's strands (module docs).
pub(crate) struct Strands {
    /// The strand layer's operations, set when the pool is built.
    ops: AtomicPtr<StrandOps>,
    /// Strands spawned and not yet finished: the pool is not quiescent
    /// while any is alive, blocked or not.
    live: AtomicUsize,
    /// The entries, each holding a reference to its control block.
    entries: SpinLock<Vec<NonNull<Task>>>,
}

// SAFETY: the entries are shared control blocks, each kept alive by the
// reference this registry holds; the vector is behind the lock.
unsafe impl Send for Strands {}
// SAFETY: as above.
unsafe impl Sync for Strands {}

impl Strands {
    pub(crate) const fn new() -> Self {
        Self {
            ops: AtomicPtr::new(ptr::null_mut()),
            live: AtomicUsize::new(0),
            entries: SpinLock::new(Vec::new()),
        }
    }

    /// Attaches the strand layer's operations, when the pool is built;
    /// every call passes the same ones.
    #[inline]
    pub(crate) fn attach(&self, ops: &'static StrandOps) {
        if self.ops.load(Acquire).is_null() {
            self.ops.store(ptr::from_ref(ops).cast_mut(), Release);
        }
    }

    fn ops(&self) -> Option<&'static StrandOps> {
        // SAFETY: only `attach` stores here, a `&'static StrandOps`.
        unsafe { self.ops.load(Acquire).as_ref() }
    }

    /// Whether `task` runs strands ([`StrandOps::runs_strands`]); with no
    /// strand ever spawned here, none does.
    pub(crate) fn runs_strands(&self, task: NonNull<Task>) -> bool {
        self.ops().is_some_and(|ops| (ops.runs_strands)(task))
    }

    /// The id of `strand`, the one a core runs (a pool that runs strands
    /// has the ops).
    pub(crate) fn id_of(&self, strand: NonNull<Task>) -> Option<StrandId> {
        self.ops().map(|ops| (ops.id)(strand))
    }

    /// Fails `strand`, lost with core `core` ([`StrandOps::lose`]).
    ///
    /// # Safety
    ///
    /// As for [`StrandOps::lose`].
    pub(crate) unsafe fn lose(&self, strand: NonNull<Task>, core: usize) {
        if let Some(ops) = self.ops() {
            // SAFETY: per the contract.
            unsafe { (ops.lose)(strand, core) };
        }
    }

    /// Strands alive now.
    pub(crate) fn live(&self) -> usize {
        self.live.load(SeqCst)
    }

    /// Counts a strand in, before it can run.
    pub(crate) fn spawned(&self) {
        self.live.fetch_add(1, SeqCst);
    }

    /// Counts a strand out; returns whether it was the last.
    pub(crate) fn ended(&self) -> bool {
        self.live.fetch_sub(1, SeqCst) == 1
    }

    /// Registers `strand`, entering the pool. Entries that finished are
    /// forgotten when the list is full, so the sweeps cost O(1) per entry
    /// over time.
    pub(crate) fn add_entry(&self, strand: NonNull<Task>) {
        let ops = self.ops().expect("the strand layer wires every pool as it is built");
        (ops.acquire)(strand);
        let mut entries = self.entries.lock();
        if entries.len() < entries.capacity() {
            entries.push(strand);
            return;
        }
        entries.retain(|&entry| {
            if !(ops.finished)(entry) {
                return true;
            }
            // SAFETY: the registry's own reference, given up once.
            unsafe { (ops.release)(entry) };
            false
        });
        entries.push(strand);
    }

    /// Calls `f` on every entry that has not finished, each kept alive by
    /// the registry meanwhile (the registry is locked during the calls).
    pub(crate) fn for_each_entry(&self, mut f: impl FnMut(NonNull<Task>)) {
        let Some(ops) = self.ops() else { return };
        for &entry in self.entries.lock().iter() {
            if !(ops.finished)(entry) {
                f(entry);
            }
        }
    }

    /// Cancels every entry that has not finished (and so its subtree).
    pub(crate) fn cancel_all(&self) {
        if let Some(ops) = self.ops() {
            self.for_each_entry(ops.cancel);
        }
    }

    /// The blocked strands of the pool, entries' subtrees in order.
    pub(crate) fn waiting(&self) -> Vec<Waiter> {
        let mut waiting = Vec::new();
        if let Some(ops) = self.ops() {
            self.for_each_entry(|entry| (ops.waiting)(entry, &mut waiting));
        }
        waiting
    }
}

impl Drop for Strands {
    fn drop(&mut self) {
        let Some(ops) = self.ops() else { return };
        for entry in self.entries.get_mut().drain(..) {
            // SAFETY: the registry's own reference, given up once.
            unsafe { (ops.release)(entry) };
        }
    }
}

//! The strands that entered a pool from outside its part of the strand
//! tree, so that destroying the pool can cancel every strand it runs.
//!
//! A strand spawned by a strand of the same pool is a descendant of one
//! that entered the pool: cancelling a strand cancels its subtree, so
//! cancelling the entries reaches every strand of the pool (and whatever
//! they spawned into other pools, as structured concurrency wants). An
//! entry is a strand spawned from outside strands, a pool's root, or a
//! strand whose parent runs in another pool. Only those pay for the
//! registry (a lock and a reference); spawns inside the pool do not.

use crate::spin_lock::SpinLock;
use crate::strand::control::{FINISHED, Header};
use alloc::vec::Vec;
use core::ptr::NonNull;
use core::sync::atomic::Ordering::Acquire;

/// A pool's entries, each holding a reference to its control block.
#[derive(Default)]
pub(crate) struct Entries(SpinLock<Vec<NonNull<Header>>>);

// SAFETY: the headers are shared control blocks (`Header` is `Sync`), each
// kept alive by the reference this registry holds.
unsafe impl Send for Entries {}
// SAFETY: as above; the vector is behind the lock.
unsafe impl Sync for Entries {}

fn finished(header: NonNull<Header>) -> bool {
    // SAFETY: the registry's reference keeps the header alive.
    unsafe { header.as_ref() }.joiner.load(Acquire) == FINISHED
}

impl Entries {
    /// Registers `header`, a strand entering the pool. Entries that
    /// finished are forgotten when the list is full, so the sweeps cost
    /// O(1) per entry over time.
    pub(crate) fn add(&self, header: NonNull<Header>) {
        // SAFETY: the caller's reference keeps the header alive meanwhile.
        unsafe { header.as_ref() }.acquire();
        let mut entries = self.0.lock();
        if entries.len() < entries.capacity() {
            entries.push(header);
            return;
        }
        entries.retain(|&entry| {
            if !finished(entry) {
                return true;
            }
            // SAFETY: the registry's own reference, given up once.
            unsafe { Header::release(entry) };
            false
        });
        entries.push(header);
    }

    /// Calls `f` on every entry that has not finished, each kept alive by
    /// the registry meanwhile (the registry is locked during the calls).
    pub(crate) fn for_each(&self, mut f: impl FnMut(NonNull<Header>)) {
        for &entry in self.0.lock().iter() {
            if !finished(entry) {
                f(entry);
            }
        }
    }

    /// Cancels every entry that has not finished (and so its subtree).
    pub(crate) fn cancel_all(&self) {
        for &entry in self.0.lock().iter() {
            if !finished(entry) {
                // SAFETY: the registry's reference keeps the header alive.
                crate::strand::tree::cancel(unsafe { entry.as_ref() });
            }
        }
    }
}

impl Drop for Entries {
    fn drop(&mut self) {
        for entry in self.0.get_mut().drain(..) {
            // SAFETY: the registry's own reference, given up once.
            unsafe { Header::release(entry) };
        }
    }
}

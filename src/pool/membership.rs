//! Which cores are the pool's: membership, and the mailboxes and routes
//! that change with it.
//!
//! A core joins or leaves only in a resize (`super::resize`, one at a
//! time). A core that leaves does so itself, between tasks, losing nothing
//! (`super::worker`, "Leaving the pool"): it clears its `leaving` flag and
//! its membership last.

use super::error::PinError;
use super::shared::{Shared, ring};
use crate::atomics::Ordering::SeqCst;
use crate::atomics::unmodelled::Ordering::Relaxed;
use crate::mailbox::list::Chain;

impl Shared {
    /// Whether work can be pinned to `core` now.
    pub(crate) fn check_pin(&self, core: usize) -> Result<(), PinError<()>> {
        if core >= self.slots {
            return Err(PinError::NoSuchCore { core, cores: self.slots, value: () });
        }
        if !self.is_member(core) {
            return Err(PinError::NotAMember { core, value: () });
        }
        Ok(())
    }

    /// Whether `core` is one of the pool's cores now.
    #[inline]
    pub(crate) fn is_member(&self, core: usize) -> bool {
        self.membership.get(core).is_some_and(|core| core.member.load(SeqCst))
    }

    /// How many cores the pool has now.
    pub(crate) fn member_count(&self) -> usize {
        self.member_count.load(SeqCst)
    }

    /// Closes `core`'s inbound mailboxes, handing `keep` what each sender's
    /// pair held: (closures, fibres).
    pub(crate) fn close_mailboxes(&self, core: usize, keep: impl FnMut([Chain; 2])) {
        self.inbound.close(core, keep);
    }

    /// Opens `core`'s inbound mailboxes before it joins: again, or (the
    /// first time it joins) makes them.
    ///
    /// # Safety
    ///
    /// The caller is a resize, which runs alone.
    pub(crate) unsafe fn open_mailboxes(&self, core: usize) {
        // SAFETY: per the contract.
        unsafe { self.inbound.open(core) };
    }

    /// With the mesh, rebuilds it over the members, leaving out `leaving`
    /// (`crate::mailbox::inbound`): a core that joins or leaves is never a hop of
    /// the old routes after this. Direct mailboxes need nothing.
    pub(crate) fn rebuild_routes(&self, leaving: Option<usize>) {
        // A preempted rebuild would hold every core's sends until it ran
        // again.
        let _deferral = crate::preempt::deferral::defer();
        let ranked = |core: usize| self.is_member(core) && Some(core) != leaving;
        // SAFETY: resizes run one at a time, and rebuilds only in them; no
        // caller is in a read section; preemption is deferred.
        unsafe { self.inbound.rebuild(ranked, |core| _ = self.sleep.wake(core, ring)) };
    }

    /// Takes what leaving core `core` offered other cores (its steal list
    /// and its LIFO slot) into `into` (`super::worker`'s leave, or a
    /// take-out for it, `super::take_out`).
    pub(crate) fn take_offered(&self, core: usize, into: &mut crate::task::queue::TaskQueue) {
        self.stealable.lower(core);
        // SAFETY: a taken chain is ours.
        unsafe { into.append_reversed(self.cores[core].steal.take_all()) };
        if let Some(task) = self.cores[core].lifo.take() {
            // SAFETY: taken from the slot, so ours.
            unsafe { into.push_back(task) };
        }
    }

    /// The last step of `core`'s leaving, once its work is handed on: it
    /// stops being a member, and its `leaving` flag is cleared last.
    pub(crate) fn end_membership(&self, core: usize) {
        self.membership[core].member.store(false, SeqCst);
        self.member_count.fetch_sub(1, SeqCst);
        self.membership[core].leaving.store(false, SeqCst);
    }

    /// Whether `core` has been asked to leave the pool and has not yet.
    #[inline]
    pub(crate) fn is_leaving(&self, core: usize) -> bool {
        self.membership[core].leaving.load(Relaxed)
    }
}

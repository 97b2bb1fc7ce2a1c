//! Per receiver, a hint that woken fibres may wait for it
//! ([`FibresWaiting`]), which `super::inbound`'s direct mailboxes keep.

use crate::atomics::AtomicBool;
use crate::atomics::CachePadded;
use crate::atomics::Ordering::{Relaxed, SeqCst};
use alloc::boxed::Box;

/// Per receiver, whether woken fibres may wait in its direct lists: what
/// lets a thief pass over a core without reading its `slots + 1` fibre
/// lists, so that an idle core's round costs a load per core, not one per
/// pair of cores.
///
/// A hint: a thief that trusts it never takes what is not there, and
/// the receiver reads its own lists on every round and in the sleep
/// protocol's final check whatever it says. But a core that runs one
/// strand for long takes none of its woken fibres meanwhile, and a thief
/// must not pass over them for good, so a low hint must not hide a fibre
/// for longer than its sender takes to raise it:
///
/// - a sender pushes, then reads the hint and raises it if low;
/// - the receiver lowers it (if high), then takes its lists.
///
/// Why a raise cannot be lost: the receiver lowers, then reads its
/// lists; a sender writes a list, then reads the hint. A take of an empty
/// list is only a load, so this is the pattern where each side may miss
/// the other's write unless all four are `SeqCst`, which they are (the
/// lists' pushes and takes, and the hint's lowering, read and raise). In
/// their one total order, a push the receiver's look missed comes after
/// that look, so the sender's read comes after the lowering and sees it,
/// or a later raise: low, and the sender raises it, or raised again by
/// another sender. The hint can also be high with nothing waiting (the
/// receiver took the fibres after the raise): a thief then reads the
/// lists for nothing, as every round did before the hint.
/// `tests/loom_fibres_waiting.rs` checks the interleavings (loom
/// explores schedules; the `SeqCst` argument above is what covers the
/// weak-memory case it does not).
pub struct FibresWaiting(Box<[CachePadded<AtomicBool>]>);

impl FibresWaiting {
    /// A low hint for each of `slots` receivers.
    pub fn new(slots: usize) -> Self {
        Self((0..slots).map(|_| CachePadded(AtomicBool::new(false))).collect())
    }

    /// A sender pushed a fibre for `to`. Read first: most pushes find it
    /// raised, and a store would take the line from the receiver.
    #[inline]
    pub fn raise(&self, to: usize) {
        let hint = &self.0[to].0;
        if !hint.load(SeqCst) {
            hint.store(true, SeqCst);
        }
    }

    /// Core `me` is about to take its lists. (Read first: a hint already
    /// low needs no store, and one a sender raises meanwhile stays high,
    /// which is the safe way to be wrong.)
    #[inline]
    pub fn lower(&self, me: usize) {
        let hint = &self.0[me].0;
        if hint.load(Relaxed) {
            hint.store(false, SeqCst);
        }
    }

    /// Whether fibres may wait for `victim`: worth a thief's look.
    #[inline]
    pub fn may_wait(&self, victim: usize) -> bool {
        self.0[victim].0.load(Relaxed)
    }
}

//! What every async form of a queue-based primitive shares: one waiter
//! record in the future, queued beside the strands in the primitive's wait
//! queue (`strand::wait::queue` says how the two kinds share it).

use crate::spin_lock::SpinLock;
use crate::strand::wait::{TaskWaiter, WaitQueue};
use core::pin::Pin;
use core::task::{Poll, Waker};

/// A task's wait on one queue of a primitive guarded by a `SpinLock<S>`.
pub(crate) struct QueuedWait {
    node: TaskWaiter,
    /// The node may be in the queue, or marked woken: dropping must look.
    /// Only the future touches this.
    pending: bool,
}

impl QueuedWait {
    pub(crate) const fn new() -> Self {
        Self { node: TaskWaiter::new(), pending: false }
    }

    /// One poll: under the lock, `take(state, woken)` tries to finish the
    /// wait (`woken`: a waker took this waiter off the queue since the last
    /// poll, handing it whatever the primitive hands over). If it cannot,
    /// the task waits in the queue `queue(state)` with `waker`, keeping its
    /// place if it is there already.
    pub(crate) fn poll<S, R>(
        self: Pin<&mut Self>,
        state: &SpinLock<S>,
        queue: impl Fn(&mut S) -> &mut WaitQueue,
        waker: &Waker,
        take: impl FnOnce(&mut S, bool) -> Option<R>,
    ) -> Poll<R> {
        // SAFETY: only `pending` is written through this; the node stays.
        let this = unsafe { self.get_unchecked_mut() };
        let mut state = state.lock();
        // SAFETY: we hold the lock of the one queue the node uses.
        let woken = this.pending && unsafe { this.node.take_woken() };
        if let Some(done) = take(&mut state, woken) {
            if this.pending {
                // SAFETY: as above; the mark was just cleared.
                unsafe { this.node.leave(queue(&mut state)) };
                this.pending = false;
            }
            return Poll::Ready(done);
        }
        // SAFETY: as above; the node is pinned (it is in a pinned future)
        // and our owner's drop calls `leave` before it goes.
        unsafe { Pin::new_unchecked(&this.node).wait(queue(&mut state), waker) };
        this.pending = true;
        Poll::Pending
    }

    /// The future is dropped: leaves the queue, and if it was woken without
    /// having looked, `give_back(state)` passes on what it was handed.
    pub(crate) fn leave<S>(
        &mut self,
        state: &SpinLock<S>,
        queue: impl Fn(&mut S) -> &mut WaitQueue,
        give_back: impl FnOnce(&mut S),
    ) {
        if !self.pending {
            return;
        }
        self.pending = false;
        let mut state = state.lock();
        // SAFETY: we hold the lock of the one queue the node uses.
        if unsafe { self.node.leave(queue(&mut state)) } {
            give_back(&mut state);
        }
    }
}

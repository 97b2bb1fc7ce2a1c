//! What every async form of a queue-based primitive shares: one waiter
//! record in the future, queued beside the strands in the primitive's wait
//! queue (`strand::wait::queue` says how the two kinds share it).

use crate::spin_lock::SpinLock;
use crate::strand::wait::{TaskWaiter, WaitQueue};
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll, Waker};

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

/// A primitive whose state and wait queue sit under one lock, as a pair,
/// and whose async wait completes with nothing but its own state: an
/// [`Event`](super::Event)'s set, a [`Semaphore`](super::Semaphore)'s
/// permit.
pub(crate) trait QueuedState: Sync {
    /// What the lock guards beside the queue.
    type State;

    /// The lock, over the state and the queue.
    fn state(&self) -> &SpinLock<(Self::State, WaitQueue)>;

    /// Under the lock, tries to finish the wait: `woken` says a waker took
    /// the waiter off the queue since the last poll, handing it over what
    /// the primitive hands over.
    fn take(state: &mut Self::State, woken: bool) -> bool;

    /// The future is dropped after a waker handed it something it never
    /// took: passes it on.
    fn give_back(state: &mut (Self::State, WaitQueue));
}

/// A task's wait on a [`QueuedState`] primitive: the one future that
/// `EventWait` and `Acquire` each wrap.
pub(crate) struct QueuedFuture<'a, P: QueuedState> {
    primitive: &'a P,
    wait: QueuedWait,
}

impl<'a, P: QueuedState> QueuedFuture<'a, P> {
    pub(crate) const fn new(primitive: &'a P) -> Self {
        Self { primitive, wait: QueuedWait::new() }
    }
}

impl<P: QueuedState> Future for QueuedFuture<'_, P> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<()> {
        // SAFETY: the wait is structurally pinned: never moved out.
        let (primitive, wait) = unsafe {
            let this = self.get_unchecked_mut();
            (this.primitive, Pin::new_unchecked(&mut this.wait))
        };
        wait.poll(
            primitive.state(),
            |state| &mut state.1,
            context.waker(),
            |state, woken| P::take(&mut state.0, woken).then_some(()),
        )
    }
}

impl<P: QueuedState> Drop for QueuedFuture<'_, P> {
    fn drop(&mut self) {
        self.wait.leave(self.primitive.state(), |state| &mut state.1, P::give_back);
    }
}

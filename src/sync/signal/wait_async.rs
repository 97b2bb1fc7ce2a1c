//! [`Signal::wait_async`]: the signal awaited by an async task, so a
//! device's interrupt wakes a task as it wakes a strand.

use super::Signal;
use crate::atomics::unmodelled::Ordering::SeqCst;
use crate::pool::handle::Pool;
use crate::protocol::signal_word::ASYNC;
use crate::strand::park::relax;
use crate::sync::WaitError;
use core::cell::UnsafeCell;
use core::future::Future;
use core::marker::PhantomPinned;
use core::pin::Pin;
use core::ptr;
use core::task::{Context, Poll, Waker};

/// What the signal's word points at while a task waits: the waker a firer
/// wakes. Written only while the word does not hold its address.
#[repr(align(8))]
struct Node {
    waker: UnsafeCell<Option<Waker>>,
}

/// The future of [`Signal::wait_async`].
#[must_use = "futures do nothing unless awaited"]
pub struct SignalWait<'a> {
    signal: &'a Signal,
    node: Node,
    /// The pool counting this wait as one for the outside world, while
    /// the node's address is in the word.
    registered: Option<Option<Pool>>,
    /// The word holds the node's address: it must not move.
    _pinned: PhantomPinned,
}

// SAFETY: the node's waker is `Send + Sync`; it is touched by a firer only
// while the word holds its address, and by the future otherwise.
unsafe impl Send for SignalWait<'_> {}
// SAFETY: as above; `&SignalWait` gives access to nothing.
unsafe impl Sync for SignalWait<'_> {}

impl Signal {
    /// Takes the signal, waiting for it without blocking: the future of a
    /// strand's [`Signal::wait`], for an async task. A firer, an interrupt
    /// handler included, wakes the task through its waker (by reference:
    /// nothing is allocated or freed in the handler).
    ///
    /// Dropped while waiting, it gives back a signal delivered to it, so
    /// nothing raised is lost. It resolves to [`WaitError::Occupied`] if
    /// another waiter (a strand or a task) already waits.
    pub fn wait_async(&self) -> SignalWait<'_> {
        SignalWait {
            signal: self,
            node: Node { waker: UnsafeCell::new(None) },
            registered: None,
            _pinned: PhantomPinned,
        }
    }

    /// Wakes the waiter registered as `address` in the word, which a
    /// firer holds (`BUSY`); whether the wake reached it.
    pub(super) fn wake_async(address: usize) -> bool {
        let node = ptr::with_exposed_provenance::<Node>(address & !ASYNC);
        // SAFETY: the word held this node's address, so its future is
        // pinned, alive (it leaves only after the word stops being busy)
        // and does not write the waker meanwhile.
        if let Some(waker) = unsafe { (*(*node).waker.get()).as_ref() } {
            waker.wake_by_ref();
        }
        true
    }
}

impl SignalWait<'_> {
    fn address(&self) -> usize {
        ptr::from_ref(&self.node).expose_provenance() | ASYNC
    }

    /// The wait is over (the signal delivered, or the node withdrawn).
    fn unregister(&mut self) {
        if let Some(Some(pool)) = self.registered.take() {
            pool.pool_ref().outside_waits().fetch_sub(1, SeqCst);
        }
    }
}

impl Future for SignalWait<'_> {
    type Output = Result<(), WaitError>;

    fn poll(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: nothing is moved out; the node stays where it is.
        let this = unsafe { self.get_unchecked_mut() };
        let word = &this.signal.word;
        let address = this.address();
        if this.registered.is_some() {
            if !word.still_waiting(address, relax) {
                this.unregister();
                return Poll::Ready(Ok(()));
            }
            // SAFETY: read while registered: only firers read it too.
            if unsafe { &*this.node.waker.get() }.as_ref().is_some_and(|w| w.will_wake(context.waker())) {
                return Poll::Pending;
            }
            // A new waker: leave, to write it, and register again.
            if word.leave_delivered(address, relax) {
                this.unregister();
                return Poll::Ready(Ok(()));
            }
            this.unregister();
        }
        if word.try_take() {
            return Poll::Ready(Ok(()));
        }
        // SAFETY: not registered: no firer reads the node.
        unsafe { *this.node.waker.get() = Some(context.waker().clone()) };
        // Counted before the address is in, so the pool never looks
        // deadlocked while the task waits for the outside world.
        let pool = Pool::current();
        if let Some(pool) = &pool {
            pool.pool_ref().outside_waits().fetch_add(1, SeqCst);
        }
        this.registered = Some(pool);
        match word.register(address, relax) {
            super::Register::Registered => Poll::Pending,
            super::Register::Taken => {
                this.unregister();
                Poll::Ready(Ok(()))
            }
            super::Register::Occupied => {
                this.unregister();
                Poll::Ready(Err(WaitError::Occupied))
            }
        }
    }
}

impl Drop for SignalWait<'_> {
    /// Leaves the word; a signal delivered meanwhile is raised again.
    fn drop(&mut self) {
        if self.registered.is_none() {
            return;
        }
        let delivered = self.signal.word.leave_delivered(self.address(), relax);
        self.unregister();
        if delivered {
            self.signal.signal();
        }
    }
}

//! [`Mutex::lock_async`]: the mutex locked by an async task, queued with
//! the strands that wait for it.

use super::Mutex;
use crate::strand::lock::Core;
use crate::sync::WaitError;
use crate::sync::task_wait::QueuedWait;
use ::core::fmt;
use ::core::future::Future;
use ::core::ops::{Deref, DerefMut};
use ::core::pin::Pin;
use ::core::task::{Context, Poll};

impl<T: ?Sized> Mutex<T> {
    /// Locks it without blocking: the async form of [`Mutex::lock`], for a
    /// task. Waiting tasks and strands are served in the order they came;
    /// unlocking hands the lock straight to the first.
    ///
    /// The guard ([`AsyncMutexGuard`]) may be held across `.await` and
    /// moved between cores, as a task moves. It is listed in no strand, so
    /// only its drop releases it: on the host a task that panics while
    /// holding it poisons the mutex as it unwinds; on bare metal, where
    /// nothing unwinds, a failure that abandons the guard leaves the mutex
    /// locked.
    ///
    /// Dropped after the lock was handed to it, the future passes the lock
    /// on to the next waiter.
    ///
    /// The future resolves to [`WaitError::Poisoned`] if a holder failed
    /// (the lock is not held then), or [`WaitError::OutOfMemory`] if the
    /// first lock found no memory for the lock word. A task that awaits a
    /// lock it holds waits for ever: unlike a strand's, that is not
    /// detected.
    pub fn lock_async(&self) -> Lock<'_, T> {
        Lock { mutex: self, core: None, wait: QueuedWait::new() }
    }
}

/// The future of [`Mutex::lock_async`].
#[must_use = "futures do nothing unless awaited"]
pub struct Lock<'a, T: ?Sized> {
    mutex: &'a Mutex<T>,
    /// The lock's block once the first poll has found it.
    core: Option<&'a Core>,
    wait: QueuedWait,
}

impl<'a, T: ?Sized> Future for Lock<'a, T> {
    type Output = Result<AsyncMutexGuard<'a, T>, WaitError>;

    fn poll(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: the wait is structurally pinned: never moved out.
        let this = unsafe { self.get_unchecked_mut() };
        let core = match this.core {
            Some(core) => core,
            None => {
                let Some(core) = this.mutex.core() else {
                    return Poll::Ready(Err(WaitError::OutOfMemory));
                };
                this.core = Some(core);
                if core.try_acquire() {
                    return Poll::Ready(this.guard(core));
                }
                core
            }
        };
        // SAFETY: as above.
        let wait = unsafe { Pin::new_unchecked(&mut this.wait) };
        match wait.poll(
            core.waiters(),
            |waiters| waiters,
            context.waker(),
            |_, handed| (handed || core.contend()).then_some(()),
        ) {
            Poll::Ready(()) => Poll::Ready(this.guard(core)),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<'a, T: ?Sized> Lock<'a, T> {
    /// The guard for a lock just taken, unless it is poisoned.
    fn guard(&self, core: &'a Core) -> Result<AsyncMutexGuard<'a, T>, WaitError> {
        core.hold_unlisted()?;
        Ok(AsyncMutexGuard { mutex: self.mutex, core })
    }
}

impl<T: ?Sized> Drop for Lock<'_, T> {
    fn drop(&mut self) {
        if let Some(core) = self.core {
            // Handed the lock but never took it: hand it on.
            self.wait.leave(core.waiters(), |waiters| waiters, |waiters| core.hand_on(waiters));
        }
    }
}

/// Access to a [`Mutex`] locked by [`Mutex::lock_async`]; unlocks when
/// dropped. Unlike [`MutexGuard`](super::MutexGuard) it may be sent to
/// another core, and held across `.await`.
#[must_use = "dropping the guard unlocks the mutex at once"]
pub struct AsyncMutexGuard<'a, T: ?Sized> {
    mutex: &'a Mutex<T>,
    core: &'a Core,
}

// SAFETY: the guard is the one holder; it hands out `&mut T` only through
// `&mut self`, so sending it sends the value's exclusive access (`T: Send`).
unsafe impl<T: ?Sized + Send> Send for AsyncMutexGuard<'_, T> {}
// SAFETY: `&guard` gives `&T`.
unsafe impl<T: ?Sized + Sync> Sync for AsyncMutexGuard<'_, T> {}

impl<T: ?Sized> Deref for AsyncMutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard holds the lock.
        unsafe { &*self.mutex.value.get() }
    }
}

impl<T: ?Sized> DerefMut for AsyncMutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard holds the lock.
        unsafe { &mut *self.mutex.value.get() }
    }
}

impl<T: ?Sized> Drop for AsyncMutexGuard<'_, T> {
    fn drop(&mut self) {
        self.core.let_go(None);
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for AsyncMutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AsyncMutexGuard").field("value", &&**self).finish()
    }
}

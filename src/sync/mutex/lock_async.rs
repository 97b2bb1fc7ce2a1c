//! [`Mutex::lock_async`]: the mutex locked by an async task, queued with
//! the strands that wait for it.

use super::Mutex;
use crate::pool::polling;
use crate::strand::lock::{Core, Poller, task_locks};
use crate::strand::scheduler;
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
    /// moved between cores, as a task moves, or sent to another task.
    /// Only its drop unlocks. The lock is listed under the task (or the
    /// strand, in [`block_on`](crate::block_on)) whose poll took it, until
    /// the guard is dropped, wherever it is by then.
    ///
    /// If that task fails while the guard is not dropped:
    ///
    /// - on the host, the panic unwinds through the task's future and
    ///   drops the guard: the mutex is poisoned and unlocked, as a
    ///   strand's is;
    /// - on bare metal nothing unwinds, and the future is kept, not
    ///   dropped (its parts may be half changed, and lent out). The guard
    ///   is never dropped, and unlocking for it would not be sound: it may
    ///   have been sent to a task that still uses it. So the mutex is
    ///   *refused*: poisoned, every waiter (task or strand) woken with
    ///   [`WaitError::Poisoned`], and every later locker given `Poisoned`
    ///   at once. The lock stays with the abandoned guard: if that guard
    ///   lives on elsewhere and is dropped, the mutex is unlocked then,
    ///   still poisoned.
    ///
    /// Dropped after the lock was handed to it, the future passes the lock
    /// on to the next waiter.
    ///
    /// The future resolves to [`WaitError::Poisoned`] if a holder failed
    /// (the lock is not held then), [`WaitError::WouldDeadlock`] if the
    /// task awaiting it holds it already (a guard it sent away and that is
    /// not yet dropped counts as held by it), or
    /// [`WaitError::OutOfMemory`] if the first lock found no memory for
    /// the lock word.
    pub fn lock_async(&self) -> Lock<'_, T> {
        Lock { mutex: self, core: None, wait: QueuedWait::new(), queued_at: None }
    }
}

/// The future of [`Mutex::lock_async`].
#[must_use = "futures do nothing unless awaited"]
pub struct Lock<'a, T: ?Sized> {
    mutex: &'a Mutex<T>,
    /// The lock's block once the first poll has found it.
    core: Option<&'a Core>,
    wait: QueuedWait,
    /// The lock's refusal count when this future queued: a wake after a
    /// different count was a refusal, not a hand-over (`strand::lock`).
    queued_at: Option<u32>,
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
                if waits_for_itself(core) {
                    return Poll::Ready(Err(WaitError::WouldDeadlock));
                }
                core
            }
        };
        // SAFETY: as above.
        let wait = unsafe { Pin::new_unchecked(&mut this.wait) };
        let queued_at = &mut this.queued_at;
        let taken = wait.poll(
            core.waiters(),
            |waiters| waiters,
            context.waker(),
            |_, handed| {
                if queued_at.is_some_and(|count| core.refused_since(count)) {
                    // Woken, or about to be, by a refusal.
                    return Some(Err(WaitError::Poisoned));
                }
                if handed {
                    return Some(Ok(()));
                }
                let Some(count) = core.refusal_count() else {
                    return Some(Err(WaitError::Poisoned));
                };
                if core.contend() {
                    return Some(Ok(()));
                }
                *queued_at = Some(count);
                None
            },
        );
        match taken {
            Poll::Ready(Ok(())) => Poll::Ready(this.guard(core)),
            Poll::Ready(Err(error)) => Poll::Ready(Err(error)),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// Whoever is polling: the async task, or else the strand (in
/// `block_on`). Used within the poll, while either is live.
fn poller<'a>() -> Option<Poller<'a>> {
    if let Some(task) = polling::polled_task() {
        // SAFETY: the task being polled is an async task, live while its
        // poll runs, and this is within it.
        return Some(Poller::Task(unsafe { task_locks(task) }));
    }
    // SAFETY: the running strand's header is live while it runs.
    scheduler::current().map(|strand| Poller::Strand(unsafe { &*strand.as_ptr() }))
}

/// Whether the async task polling holds the lock already: its wait would
/// never end. (A strand may poll a lock future by hand while it holds
/// the lock, and drop it: only `block_on` would wait, and a strand's
/// poll cannot tell the two apart.)
fn waits_for_itself(core: &Core) -> bool {
    matches!(poller(), Some(me @ Poller::Task(_)) if core.held_by(me))
}

impl<'a, T: ?Sized> Lock<'a, T> {
    /// The guard for a lock just taken, unless it is poisoned; listed under
    /// its poller.
    fn guard(&self, core: &'a Core) -> Result<AsyncMutexGuard<'a, T>, WaitError> {
        core.hold_for_task(poller())?;
        Ok(AsyncMutexGuard { mutex: self.mutex, core })
    }
}

impl<T: ?Sized> Drop for Lock<'_, T> {
    fn drop(&mut self) {
        if let Some(core) = self.core {
            let queued_at = self.queued_at;
            // Handed the lock but never took it: hand it on. (Woken by a
            // refusal, it was handed nothing.)
            self.wait.leave(
                core.waiters(),
                |waiters| waiters,
                |waiters| {
                    if !queued_at.is_some_and(|count| core.refused_since(count)) {
                        core.hand_on(waiters);
                    }
                },
            );
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
        self.core.let_go_for_task();
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for AsyncMutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AsyncMutexGuard").field("value", &&**self).finish()
    }
}

//! A mutex whose waiters are strands.

use super::WaitError;
use crate::strand::BlockReason;
use crate::strand::wait::{self, WaitQueue};
use core::cell::UnsafeCell;
use core::fmt;
use core::ops::{Deref, DerefMut};
use core::sync::atomic::{AtomicU32, Ordering::*};
use core::time::Duration;

const UNLOCKED: u32 = 0;
const LOCKED: u32 = 1;
/// Locked, and some strand may be waiting: unlocking must look.
const CONTENDED: u32 = 2;

/// Mutual exclusion for strands. A strand that finds it locked blocks (its
/// core runs other work); unlocking hands the lock straight to the first
/// waiter, so waiters are served in order and none starves.
///
/// ```
/// use roving::{Pool, platform::host::Machine, strand, sync::Mutex};
/// use std::sync::Arc;
///
/// Machine::new(4).unwrap().run(|| {
///     let count = Pool::new().unwrap().run(|| {
///         let counter = Arc::new(Mutex::new(0u64));
///         let workers: Vec<_> = (0..8)
///             .map(|_| {
///                 let counter = counter.clone();
///                 strand::spawn(move || for _ in 0..1000 { *counter.lock().unwrap() += 1; }).unwrap()
///             })
///             .collect();
///         workers.into_iter().for_each(|w| w.join().unwrap());
///         *counter.lock().unwrap()
///     });
///     assert_eq!(count.unwrap(), 8000);
/// }).unwrap();
/// ```
pub struct Mutex<T: ?Sized> {
    state: AtomicU32,
    waiters: spin::Mutex<WaitQueue>,
    value: UnsafeCell<T>,
}

// SAFETY: the lock gives one holder at a time access to the value.
unsafe impl<T: ?Sized + Send> Send for Mutex<T> {}
// SAFETY: as above.
unsafe impl<T: ?Sized + Send> Sync for Mutex<T> {}

/// Access to a locked [`Mutex`]'s value; unlocks when dropped.
#[must_use = "dropping the guard unlocks the mutex at once"]
pub struct MutexGuard<'a, T: ?Sized> {
    mutex: &'a Mutex<T>,
}

// SAFETY: the guard gives `&T` to whoever holds `&guard`.
unsafe impl<T: ?Sized + Sync> Sync for MutexGuard<'_, T> {}

impl<T> Mutex<T> {
    /// An unlocked mutex holding `value`.
    pub const fn new(value: T) -> Self {
        Self {
            state: AtomicU32::new(UNLOCKED),
            waiters: spin::Mutex::new(WaitQueue::new()),
            value: UnsafeCell::new(value),
        }
    }

    /// The value, taking the mutex apart.
    pub fn into_inner(self) -> T {
        self.value.into_inner()
    }
}

impl<T: ?Sized> Mutex<T> {
    /// Locks it, blocking the strand while another holds it.
    ///
    /// # Errors
    ///
    /// [`WaitError::NotAStrand`] if it is held and the caller cannot block;
    /// [`WaitError::Interrupted`] if the strand was cancelled while it waited.
    pub fn lock(&self) -> Result<MutexGuard<'_, T>, WaitError> {
        self.lock_until(None)
    }

    /// Locks it, giving up after `timeout`.
    ///
    /// # Errors
    ///
    /// [`WaitError::TimedOut`]; otherwise as for [`Mutex::lock`].
    pub fn lock_timeout(&self, timeout: Duration) -> Result<MutexGuard<'_, T>, WaitError> {
        self.lock_until(Some(super::deadline_after(timeout)))
    }

    /// Locks it if nobody holds it; never blocks.
    pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        self.state
            .compare_exchange(UNLOCKED, LOCKED, Acquire, Relaxed)
            .ok()
            .map(|_| MutexGuard { mutex: self })
    }

    /// Mutable access without locking: `&mut self` proves nobody else has it.
    pub fn get_mut(&mut self) -> &mut T {
        self.value.get_mut()
    }

    fn lock_until(&self, deadline: Option<crate::time::Instant>) -> Result<MutexGuard<'_, T>, WaitError> {
        if let Some(guard) = self.try_lock() {
            return Ok(guard);
        }
        let woken = wait::block(BlockReason::Mutex, deadline, |me| {
            let mut waiters = self.waiters.lock();
            // Announce a waiter; if the holder left meanwhile, it is ours.
            if self.state.swap(CONTENDED, Acquire) == UNLOCKED {
                return false;
            }
            // SAFETY: we stay live until we leave the queue (below or by
            // being handed the lock).
            unsafe { waiters.push_back(me) };
            true
        })?;
        match woken.error() {
            // Handed over by `unlock`, or it was free when we registered.
            None => Ok(MutexGuard { mutex: self }),
            Some(error) => {
                self.waiters.lock().leave();
                Err(error)
            }
        }
    }

    fn unlock(&self) {
        if self.state.compare_exchange(LOCKED, UNLOCKED, Release, Relaxed).is_ok() {
            return;
        }
        let mut waiters = self.waiters.lock();
        if waiters.wake_one() {
            // Handed over: the lock stays held, by the strand just woken.
            if waiters.is_empty() {
                self.state.store(LOCKED, Release);
            }
        } else {
            self.state.store(UNLOCKED, Release);
        }
    }
}

impl<T: ?Sized> Deref for MutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard holds the lock.
        unsafe { &*self.mutex.value.get() }
    }
}

impl<T: ?Sized> DerefMut for MutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard holds the lock.
        unsafe { &mut *self.mutex.value.get() }
    }
}

impl<T: ?Sized> Drop for MutexGuard<'_, T> {
    fn drop(&mut self) {
        self.mutex.unlock();
    }
}

impl<'a, T: ?Sized> MutexGuard<'a, T> {
    /// The mutex this guard locks (for [`Condvar`](super::Condvar)).
    pub(crate) fn mutex(&self) -> &'a Mutex<T> {
        self.mutex
    }

    /// Forgets the guard without unlocking (the caller unlocks).
    pub(crate) fn leak(self) -> &'a Mutex<T> {
        let mutex = self.mutex;
        core::mem::forget(self);
        mutex
    }
}

impl<T: ?Sized> Mutex<T> {
    /// Unlocks a mutex whose guard was leaked.
    pub(crate) fn force_unlock(&self) {
        self.unlock();
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for Mutex<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.try_lock() {
            Some(guard) => f.debug_struct("Mutex").field("value", &&*guard).finish(),
            None => f.debug_struct("Mutex").field("value", &format_args!("<locked>")).finish(),
        }
    }
}

impl<T: Default> Default for Mutex<T> {
    fn default() -> Self {
        Self::new(T::default())
    }
}

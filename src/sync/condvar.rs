//! A condition variable whose waiters are strands.

use super::{Mutex, MutexGuard, WaitError};
use crate::spin_lock::SpinLock;
use crate::strand::BlockReason;
use crate::strand::wait::{self, WaitEnd, WaitQueue};
use core::time::Duration;

/// Waits for a condition under a [`Mutex`]. Waiting unlocks the mutex and
/// blocks the strand in one step (no notification in between is missed);
/// the mutex is locked again before `wait` returns. Wake-ups may be
/// spurious: check the condition in a loop.
///
/// ```
/// use roving::{Pool, platform::host::Machine, strand, sync::{Condvar, Mutex}};
/// use std::sync::Arc;
///
/// Machine::new(2).unwrap().run(|| {
///     Pool::new().unwrap().run(|| {
///         let shared = Arc::new((Mutex::new(None), Condvar::new()));
///         let consumer = {
///             let shared = shared.clone();
///             strand::spawn(move || {
///                 let (slot, changed) = &*shared;
///                 let mut value = slot.lock().unwrap();
///                 while value.is_none() {
///                     value = changed.wait(value).unwrap();
///                 }
///                 value.take().unwrap()
///             }).unwrap()
///         };
///         *shared.0.lock().unwrap() = Some(7);
///         shared.1.notify_one();
///         assert_eq!(consumer.join().unwrap(), 7);
///     }).unwrap();
/// }).unwrap();
/// ```
pub struct Condvar {
    waiters: SpinLock<WaitQueue>,
}

impl Condvar {
    /// A condition variable nobody waits on.
    pub const fn new() -> Self {
        Self { waiters: SpinLock::new(WaitQueue::new()) }
    }

    /// Unlocks `guard`'s mutex, waits for a notification, locks it again.
    ///
    /// # Errors
    ///
    /// [`WaitError::NotAStrand`] outside strands, [`WaitError::OutOfMemory`]
    /// if a deadline could not be recorded, [`WaitError::Interrupted`] if
    /// the strand was cancelled; the mutex is then unlocked (the guard is
    /// dropped).
    pub fn wait<'a, T: ?Sized>(&self, guard: MutexGuard<'a, T>) -> Result<MutexGuard<'a, T>, WaitError> {
        self.wait_until(guard, None).map(|(guard, _)| guard)
    }

    /// As [`Condvar::wait`], giving up after `timeout`; the flag says
    /// whether it timed out. The mutex is locked again either way.
    ///
    /// # Errors
    ///
    /// As for [`Condvar::wait`].
    pub fn wait_timeout<'a, T: ?Sized>(
        &self,
        guard: MutexGuard<'a, T>,
        timeout: Duration,
    ) -> Result<(MutexGuard<'a, T>, bool), WaitError> {
        self.wait_until(guard, Some(super::deadline_after(timeout)))
    }

    fn wait_until<'a, T: ?Sized>(
        &self,
        guard: MutexGuard<'a, T>,
        deadline: Option<crate::platform::instant::Instant>,
    ) -> Result<(MutexGuard<'a, T>, bool), WaitError> {
        crate::platform::refuse_in_handler("Condvar::wait", crate::platform::HANDLERS_WAKE);
        let mutex: &'a Mutex<T> = guard.mutex();
        let woken =
            wait::block(BlockReason::Condvar, core::ptr::from_ref(self).addr(), deadline, move |me| {
                // SAFETY: we stay live until we leave the queue.
                unsafe { self.waiters.lock().push_back(me) };
                drop(guard);
                true
            });
        let timed_out = match woken {
            // The guard went with the closure, unused: the mutex is unlocked.
            Err(error) => return Err(error),
            Ok(WaitEnd::Signalled) => false,
            Ok(WaitEnd::TimedOut) => {
                self.waiters.lock().leave();
                true
            }
            Ok(WaitEnd::Interrupted) => {
                // Cancelled: the mutex stays unlocked (the guard is gone).
                self.waiters.lock().leave();
                return Err(WaitError::Interrupted);
            }
        };
        Ok((mutex.lock()?, timed_out))
    }

    /// Wakes one waiting strand, if any.
    pub fn notify_one(&self) {
        self.waiters.lock().wake_one();
    }

    /// Wakes every waiting strand.
    pub fn notify_all(&self) {
        self.waiters.lock().wake_all();
    }
}

impl Default for Condvar {
    fn default() -> Self {
        Self::new()
    }
}

//! A mutex whose waiters are strands, poisoned when a holder fails.

mod lock_async;

pub use lock_async::{AsyncMutexGuard, Lock};

use super::WaitError;
use crate::atomics::unmodelled::{AtomicPtr, Ordering::*};
use crate::strand::lock::{Core, Holder};
use ::core::cell::UnsafeCell;
use ::core::fmt;
use ::core::marker::PhantomData;
use ::core::mem::ManuallyDrop;
use ::core::ops::{Deref, DerefMut};
use ::core::ptr::{self, NonNull};
use ::core::time::Duration;

/// Mutual exclusion for strands. A strand that finds it locked blocks (its
/// core runs other work); unlocking hands the lock straight to the first
/// waiter, so waiters are served in order and none starves.
///
/// # Poisoning
///
/// A strand that fails while holding the lock cannot be trusted to have
/// left the value consistent. The mutex is then *poisoned* and released:
/// on the host when the guard is dropped during the panic's unwinding, on
/// bare metal (where nothing unwinds) when the strand is abandoned, from
/// the list of locks every strand keeps. Every later `lock` returns
/// [`WaitError::Poisoned`], without the lock, until [`Mutex::clear_poison`].
/// The value itself is still there for [`Mutex::get_mut`] and
/// [`Mutex::into_inner`].
///
/// An async task that fails on bare metal while its guard
/// ([`AsyncMutexGuard`]) holds the lock leaves it *refused* instead (see
/// [`Mutex::lock_async`]): poisoned, but still held by that guard, so
/// every waiter and every later locker gets `Poisoned` until the guard is
/// dropped, which for a guard in the failed task's future is never.
///
/// The lock word lives in a small heap block, allocated at the first lock,
/// so that the list can point at it even if the `Mutex` moves.
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
    /// Null until the first lock.
    core: AtomicPtr<Core>,
    value: UnsafeCell<T>,
}

// SAFETY: the lock gives one holder at a time access to the value.
unsafe impl<T: ?Sized + Send> Send for Mutex<T> {}
// SAFETY: as above.
unsafe impl<T: ?Sized + Send> Sync for Mutex<T> {}

/// Access to a locked [`Mutex`]'s value; unlocks when dropped.
///
/// Not `Send`: it is dropped by the strand that locked, which lists the
/// lock as held (see poisoning on [`Mutex`]).
#[must_use = "dropping the guard unlocks the mutex at once"]
pub struct MutexGuard<'a, T: ?Sized> {
    mutex: &'a Mutex<T>,
    core: &'a Core,
    holder: Holder,
    _not_send: PhantomData<*const ()>,
}

// SAFETY: the guard gives `&T` to whoever holds `&guard`.
unsafe impl<T: ?Sized + Sync> Sync for MutexGuard<'_, T> {}

/// Why [`Mutex::try_lock`] did not lock.
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TryLockError {
    /// Somebody holds it.
    WouldBlock,
    /// A holder failed with it locked; see poisoning on [`Mutex`].
    Poisoned,
    /// No memory for the lock's block (first lock only).
    OutOfMemory,
}

error_messages! {
    impl TryLockError {
        Self::WouldBlock => "the mutex is locked";
        Self::Poisoned => "the mutex is poisoned: a strand failed while holding it";
        Self::OutOfMemory => "no memory for the mutex's lock word";
    }
}

impl<T> Mutex<T> {
    /// An unlocked mutex holding `value`.
    pub const fn new(value: T) -> Self {
        Self { core: AtomicPtr::new(ptr::null_mut()), value: UnsafeCell::new(value) }
    }

    /// The value, taking the mutex apart (poisoned or not).
    pub fn into_inner(self) -> T {
        let mut this = ManuallyDrop::new(self);
        this.retire_core();
        // SAFETY: read once, from a mutex that is never used or dropped again.
        unsafe { ptr::read(&this.value) }.into_inner()
    }
}

impl<T: ?Sized> Mutex<T> {
    /// Locks it, blocking the strand while another holds it.
    ///
    /// # Errors
    ///
    /// [`WaitError::NotAStrand`] outside strands, whether or not it is held
    /// (code that is not a strand takes it with [`Mutex::try_lock`], or a
    /// task awaits [`Mutex::lock_async`]);
    /// [`WaitError::Interrupted`] if the strand was cancelled while it
    /// waited; [`WaitError::Poisoned`] if a holder failed (the lock is not
    /// held then); [`WaitError::OutOfMemory`] if the first lock found no
    /// memory for the lock word; [`WaitError::WouldDeadlock`] if the
    /// calling strand holds it already.
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
    ///
    /// # Errors
    ///
    /// [`TryLockError`] says why not.
    pub fn try_lock(&self) -> Result<MutexGuard<'_, T>, TryLockError> {
        crate::platform::refuse_in_handler(
            "Mutex::try_lock",
            "a strand's mutex is for strands; a handler hands data over with Sender::try_send or wakes a strand with Signal::signal",
        );
        let core = self.core().ok_or(TryLockError::OutOfMemory)?;
        if !core.try_acquire() {
            // A refused lock is held for ever (`Mutex::lock_async`).
            return Err(if core.is_refused() { TryLockError::Poisoned } else { TryLockError::WouldBlock });
        }
        let holder = core.hold(crate::strand::scheduler::current()).map_err(|_| TryLockError::Poisoned)?;
        Ok(MutexGuard { mutex: self, core, holder, _not_send: PhantomData })
    }

    /// Whether a holder failed with it locked (see poisoning on [`Mutex`]).
    pub fn is_poisoned(&self) -> bool {
        // SAFETY: a non-null block lives as long as the mutex.
        unsafe { self.core.load(Acquire).as_ref() }.is_some_and(Core::is_poisoned)
    }

    /// Accepts the value as it is after a failure: `lock` works again.
    /// A refused mutex (see poisoning on [`Mutex`]) stays poisoned: its
    /// lock is still held.
    pub fn clear_poison(&self) {
        // SAFETY: as in `is_poisoned`.
        if let Some(core) = unsafe { self.core.load(Acquire).as_ref() } {
            core.clear_poison();
        }
    }

    /// Mutable access without locking: `&mut self` proves nobody else has
    /// it (poisoned or not).
    pub fn get_mut(&mut self) -> &mut T {
        self.value.get_mut()
    }

    fn lock_until(
        &self,
        deadline: Option<crate::platform::instant::Instant>,
    ) -> Result<MutexGuard<'_, T>, WaitError> {
        crate::platform::refuse_in_handler(
            "Mutex::lock",
            "a strand's mutex is for strands; a handler hands data over with Sender::try_send or wakes a strand with Signal::signal",
        );
        let core = self.core().ok_or(WaitError::OutOfMemory)?;
        let holder = core.lock(deadline)?;
        Ok(MutexGuard { mutex: self, core, holder, _not_send: PhantomData })
    }

    /// The lock's block, allocated at the first call; `None` if memory ran
    /// out.
    fn core(&self) -> Option<&Core> {
        let mut core = self.core.load(Acquire);
        if core.is_null() {
            let fresh = Core::allocate()?.as_ptr();
            core = match self.core.compare_exchange(ptr::null_mut(), fresh, AcqRel, Acquire) {
                Ok(_) => fresh,
                Err(winner) => {
                    // SAFETY: ours, never shared, unlocked.
                    unsafe { Core::retire(NonNull::new_unchecked(fresh)) };
                    winner
                }
            };
        }
        // SAFETY: once set, the block lives as long as the mutex.
        Some(unsafe { &*core })
    }

    fn retire_core(&mut self) {
        if let Some(core) = NonNull::new(*self.core.get_mut()) {
            // SAFETY: from `Core::allocate`; the mutex is going away.
            unsafe { Core::retire(core) };
        }
    }
}

impl<T: ?Sized> Drop for Mutex<T> {
    fn drop(&mut self) {
        self.retire_core();
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
        self.core.let_go(self.holder);
    }
}

impl<'a, T: ?Sized> MutexGuard<'a, T> {
    /// The mutex this guard locks (for [`Condvar`](super::Condvar)).
    pub(crate) fn mutex(&self) -> &'a Mutex<T> {
        self.mutex
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for Mutex<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.try_lock() {
            Ok(guard) => f.debug_struct("Mutex").field("value", &&*guard).finish(),
            Err(why) => f.debug_struct("Mutex").field("value", &format_args!("<{why:?}>")).finish(),
        }
    }
}

impl<T: Default> Default for Mutex<T> {
    fn default() -> Self {
        Self::new(T::default())
    }
}

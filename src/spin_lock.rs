//! The spin lock that guards roving's short internal critical sections
//! (wait queues, the timer heap, a strand's family, a pool's registries).
//!
//! # Interrupts are masked while it is held
//!
//! An interrupt handler may set an `Event`, release a `Semaphore` or wake
//! a strand, and those take these locks. If the handler interrupted code
//! on its own core that holds the same lock, it would spin forever. So
//! [`SpinLock::lock`] masks interrupts on the calling core (through the
//! platform) before it takes the lock, and the guard restores them after
//! it lets go: a handler never finds its own core inside a section. A
//! section is a handful of list operations, so this is how long a lock
//! keeps interrupts waiting.
//!
//! # Waiting
//!
//! A waiter waits with interrupts open, and masks them only to take the
//! lock: a core spinning for a lock another core holds can still take its
//! interrupts, so the time interrupts stay masked on it is its own
//! section's, never also the other holders'. (A handler on the waiting
//! core that wants the same lock waits for the other core too, which
//! finishes its section without waiting for anyone.)
//!
//! On bare metal a waiter spins: the holder runs on another core and is
//! never taken off it inside the section. On the host a core is an OS
//! thread, and the OS can take the holder off its CPU in the middle of the
//! section. With more cores than CPUs, plain spinning then burns every
//! waiter's time slice before the holder runs again, and strand hand-offs
//! became hundreds of times slower (a 100,000-item strand pipeline at 3
//! cores on 2 CPUs took minutes). So on the host a waiter yields its
//! thread instead of spinning.

use core::mem::ManuallyDrop;
use core::ops::{Deref, DerefMut};

/// roving's internal spin lock: [`spin`]'s, with local interrupts masked
/// while it is held (module docs).
pub(crate) struct SpinLock<T> {
    inner: spin::mutex::SpinMutex<T, Relax>,
}

/// Holds a [`SpinLock`]; unlocks, then restores the interrupt state, when
/// dropped.
pub(crate) struct SpinGuard<'a, T> {
    guard: ManuallyDrop<spin::mutex::SpinMutexGuard<'a, T>>,
    interrupts: Masked,
}

impl<T> SpinLock<T> {
    pub(crate) const fn new(value: T) -> Self {
        Self { inner: spin::mutex::SpinMutex::new(value) }
    }

    /// Takes the lock, with interrupts masked on this core from then on
    /// (module docs: it waits with them open).
    #[inline]
    pub(crate) fn lock(&self) -> SpinGuard<'_, T> {
        loop {
            let interrupts = Masked::mask();
            if let Some(guard) = self.inner.try_lock() {
                return SpinGuard { guard: ManuallyDrop::new(guard), interrupts };
            }
            interrupts.restore();
            while self.inner.is_locked() {
                <Relax as spin::RelaxStrategy>::relax();
            }
        }
    }

    /// The value, through exclusive access (no locking).
    pub(crate) fn get_mut(&mut self) -> &mut T {
        self.inner.get_mut()
    }
}

impl<T: Default> Default for SpinLock<T> {
    fn default() -> Self {
        Self::new(T::default())
    }
}

impl<T> Deref for SpinGuard<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.guard
    }
}

impl<T> DerefMut for SpinGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.guard
    }
}

impl<T> Drop for SpinGuard<'_, T> {
    fn drop(&mut self) {
        // SAFETY: dropped once, here; the field is not used again.
        unsafe { ManuallyDrop::drop(&mut self.guard) };
        self.interrupts.restore();
    }
}

/// The interrupt state saved when a lock was taken. Only bare metal runs
/// interrupt handlers that call roving (the host platform delivers none
/// to cores, and loom links no platform), so only there is it kept.
struct Masked(#[cfg(not(any(feature = "std", loom)))] crate::platform::InterruptState);

impl Masked {
    #[inline]
    fn mask() -> Self {
        #[cfg(not(any(feature = "std", loom)))]
        return Self(crate::platform::disable_interrupts_raw());
        #[cfg(any(feature = "std", loom))]
        return Self();
    }

    #[inline]
    fn restore(&self) {
        // SAFETY: saved by `mask` on this core: no section spans a strand
        // switch, so a guard is dropped where it was taken, and guards nest
        // (a lock that was not taken restores at once, in the same place).
        #[cfg(not(any(feature = "std", loom)))]
        unsafe {
            crate::platform::restore_interrupts_raw(self.0)
        };
    }
}

/// How a waiter for a [`SpinLock`] passes the time.
pub(crate) struct Relax;

impl spin::RelaxStrategy for Relax {
    #[inline]
    fn relax() {
        #[cfg(all(feature = "std", not(loom)))]
        std::thread::yield_now();
        #[cfg(not(all(feature = "std", not(loom))))]
        core::hint::spin_loop();
    }
}

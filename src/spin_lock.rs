//! The spin lock that guards roving's short internal critical sections
//! (wait queues, the timer heap, a strand's family, a pool's registries).
//!
//! On bare metal a waiter spins: the holder runs on another core and is
//! never taken off it inside the section. On the host a core is an OS
//! thread, and the OS can take the holder off its CPU in the middle of the
//! section. With more cores than CPUs, plain spinning then burns every
//! waiter's time slice before the holder runs again, and strand hand-offs
//! became hundreds of times slower (a 100,000-item strand pipeline at 3
//! cores on 2 CPUs took minutes). So on the host a waiter yields its
//! thread instead of spinning.

/// roving's internal spin lock.
pub(crate) type SpinLock<T> = spin::mutex::SpinMutex<T, Relax>;

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

//! Blocking primitives for strands: they block the strand, never the core.
//!
//! | type | what it is |
//! |------|------------|
//! | [`Mutex`] | mutual exclusion with a guard; unlocking hands the lock to the first waiter |
//! | [`Condvar`] | waits for a condition under a [`Mutex`] |
//! | [`Semaphore`] | counted permits; a release hands a permit to the first waiter |
//! | [`Event`] | a flag strands wait for; setting it wakes them all |
//! | [`channel::bounded`] | a bounded multi-producer, multi-consumer channel |
//!
//! Every blocking call returns a `Result`: [`WaitError::NotAStrand`] when
//! called from a plain task or from outside the pool, where nothing can be
//! suspended (use the `try_` forms there), [`WaitError::TimedOut`] from
//! the timed forms, [`WaitError::Interrupted`] in a cancelled strand, and
//! [`WaitError::Poisoned`] from a [`Mutex`] whose holder failed. Waiters are recorded in their strands' control blocks,
//! never on a stack (the copy-swap invariant, [`strand`](crate::strand)).
//!
//! The short internal locks are spin locks: do not use these primitives
//! from interrupt handlers.

pub mod channel;
mod condvar;
mod event;
mod mutex;
mod semaphore;

pub use crate::strand::WaitError;
pub use condvar::Condvar;
pub use event::Event;
pub use mutex::{Mutex, MutexGuard, TryLockError};
pub(crate) use mutex::{MutexCore, release_held};
pub use semaphore::{Semaphore, TooManyPermits};

use crate::time::Instant;
use core::time::Duration;

/// The deadline `timeout` from now (saturating far in the future).
fn deadline_after(timeout: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(timeout).unwrap_or(Instant::from_ticks(u64::MAX))
}

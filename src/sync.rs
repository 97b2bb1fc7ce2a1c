//! Blocking primitives for strands: they block the strand, never the core.
//!
//! | type | what it is |
//! |------|------------|
//! | [`Mutex`] | mutual exclusion with a guard; unlocking hands the lock to the first waiter |
//! | [`Condvar`] | waits for a condition under a [`Mutex`] |
//! | [`Semaphore`] | counted permits; a release hands a permit to the first waiter |
//! | [`Event`] | a flag strands wait for; setting it wakes them all |
//! | [`Signal`] | a flag one strand waits for, raised from anywhere, an interrupt handler included |
//! | [`channel::bounded`] | a bounded multi-producer, multi-consumer channel |
//!
//! Every blocking call returns a `Result`: [`WaitError::NotAStrand`] when
//! called from a plain task or from outside the pool, where nothing can be
//! suspended (use the `try_` forms there), [`WaitError::TimedOut`] from
//! the timed forms, [`WaitError::Interrupted`] in a cancelled strand, and
//! [`WaitError::Poisoned`] from a [`Mutex`] whose holder failed. Waiters are recorded in their strands' control blocks,
//! never on a stack (the copy-swap invariant, [`strand`](crate::strand)).
//!
//! # From an interrupt handler
//!
//! These calls are interrupt-safe: they never allocate, never wait, and the
//! only lock they take is an internal spin lock, held with interrupts
//! masked on its core, so a handler never finds its own core holding it:
//! [`Signal::signal`], [`Signal::try_take`], [`Signal::is_set`],
//! [`Event::set`], [`Event::is_set`], [`Semaphore::release`],
//! [`Semaphore::try_acquire`] and [`channel::Sender::try_send`]. So are
//! [`Unparker::unpark`](crate::strand::Unparker::unpark) and
//! [`InterruptSender::send`](crate::actor::InterruptSender::send). A
//! strand they wake is reached through its pool's mailboxes, as from
//! outside the pool. Everything that blocks, and [`Mutex`] and [`Condvar`],
//! are for strands only; in debug builds they panic when a handler calls
//! them, naming what to call instead (`docs/interrupts.md`).

pub mod channel;
mod condvar;
mod event;
mod mutex;
mod semaphore;
mod signal;

pub use crate::strand::WaitError;
pub use condvar::Condvar;
pub use event::Event;
pub use mutex::{Mutex, MutexGuard, TryLockError};
pub(crate) use mutex::{MutexCore, release_held};
pub use semaphore::{Semaphore, TooManyPermits};
pub(crate) use signal::ParkToken;
pub use signal::Signal;

use crate::time::Instant;
use core::time::Duration;

/// The deadline `timeout` from now (saturating far in the future).
pub(crate) fn deadline_after(timeout: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(timeout).unwrap_or(Instant::from_ticks(u64::MAX))
}

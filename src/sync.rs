//! Synchronisation for strands and async tasks: a strand's call blocks the
//! strand, never the core; a task awaits the same object's async form.
//!
//! | type | what it is | strand | async task |
//! |------|------------|--------|------------|
//! | [`Mutex`] | mutual exclusion with a guard; unlocking hands the lock to the first waiter | [`lock`](Mutex::lock) | [`lock_async`](Mutex::lock_async) |
//! | [`Condvar`] | waits for a condition under a [`Mutex`] | [`wait`](Condvar::wait) | (none) |
//! | [`Semaphore`] | counted permits; a release hands a permit to the first waiter | [`acquire`](Semaphore::acquire) | [`acquire_async`](Semaphore::acquire_async) |
//! | [`Event`] | a flag waiters wait for; setting it wakes them all | [`wait`](Event::wait) | [`wait_async`](Event::wait_async) |
//! | [`Signal`] | a flag one waiter waits for, raised from anywhere, an interrupt handler included | [`wait`](Signal::wait) | [`wait_async`](Signal::wait_async) |
//! | [`channel::bounded`] | a bounded multi-producer, multi-consumer channel | [`send`](channel::Sender::send), [`recv`](channel::Receiver::recv) | [`send_async`](channel::Sender::send_async), [`recv_async`](channel::Receiver::recv_async) |
//!
//! # Strands and tasks on one object
//!
//! Strands and tasks wait in the same queue, in the order they came: a
//! mutex unlocked by a strand may be handed to a task and the other way
//! round, and a channel may have strands on one end and tasks on the
//! other. A strand's waiter record is in its control block, never on a
//! stack (the copy-swap invariant, [`strand`](crate::strand)); a task's is
//! in its future, which stays put while the task waits. A future dropped
//! while it waits leaves the queue, and gives back anything it was handed
//! and never took (the lock, a permit, a wake), so nothing is lost.
//!
//! A blocking call returns a `Result`: [`WaitError::NotAStrand`] when
//! called from a plain task or from outside the pool, where nothing can be
//! suspended (use the `try_` forms there, or the async form in a task),
//! [`WaitError::TimedOut`] from the timed forms,
//! [`WaitError::Interrupted`] in a cancelled strand, and
//! [`WaitError::Poisoned`] from a [`Mutex`] whose holder failed. An async
//! form has no deadline of its own (wrap it in
//! [`time::timeout`](crate::time::timeout)) and no cancel of its own (a
//! cancelled task's future is dropped at its next await point).

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
//! strand or task they wake is reached through its pool's mailboxes, as
//! from outside the pool (a task's waker is woken under the object's lock,
//! so a waker of another executor awaiting these objects must not block). Everything that blocks, and [`Mutex`] and [`Condvar`],
//! are for strands only; in debug builds they panic when a handler calls
//! them, naming what to call instead (`docs/interrupts.md`).

pub mod channel;
mod condvar;
mod event;
mod mutex;
mod semaphore;
mod signal;
mod task_wait;

pub use crate::strand::WaitError;
pub use condvar::Condvar;
pub use event::{Event, EventWait};
pub use mutex::{AsyncMutexGuard, Lock, Mutex, MutexGuard, TryLockError};
pub use semaphore::{Acquire, Semaphore, TooManyPermits};
pub use signal::{Signal, SignalWait};

pub(crate) use crate::platform::instant::deadline_after;

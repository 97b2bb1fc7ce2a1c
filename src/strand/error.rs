//! What can go wrong with strands, in types that say so.

use super::{Failure, StrandId};
use core::fmt;

/// A closure that was not spawned as a strand, and why. The closure comes
/// back with the error: [`SpawnError::into_inner`].
#[non_exhaustive]
pub enum SpawnError<F> {
    /// The pool has stopped, or is being destroyed.
    Stopped(F),
    /// [`spawn`](super::spawn) was called outside any running pool's
    /// cores; use [`Pool::spawn_strand`](crate::Pool::spawn_strand).
    NotInPool(F),
    /// The closure and its result do not fit a control block; box them, or
    /// raise `ROVING_STRAND_BYTES` at build time.
    TooLarge {
        /// Bytes the control block would need.
        bytes: usize,
        /// The most it may have (`ROVING_STRAND_BYTES`).
        capacity: usize,
        /// The closure.
        closure: F,
    },
    /// Every fibre is held by other pools (this pool holds none it could
    /// share); raise `ROVING_FIBRES` at build time.
    NoFibre(F),
    /// No memory for the control block or the new strand's saved stack.
    OutOfMemory(F),
    /// The pool belongs to another domain (`crate::domain`).
    OtherDomain(F),
    /// The strand was to be pinned to a core that is not one of the
    /// pool's now.
    NotAMember {
        /// The core asked for.
        core: usize,
        /// The closure.
        closure: F,
    },
}

impl<F> SpawnError<F> {
    /// The closure that was not spawned.
    pub fn into_inner(self) -> F {
        match self {
            Self::Stopped(f)
            | Self::NotInPool(f)
            | Self::NoFibre(f)
            | Self::OutOfMemory(f)
            | Self::OtherDomain(f) => f,
            Self::TooLarge { closure, .. } | Self::NotAMember { closure, .. } => closure,
        }
    }
}

impl<F> fmt::Debug for SpawnError<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Stopped(_) => f.write_str("Stopped(..)"),
            Self::NotInPool(_) => f.write_str("NotInPool(..)"),
            Self::TooLarge { bytes, capacity, .. } => f
                .debug_struct("TooLarge")
                .field("bytes", bytes)
                .field("capacity", capacity)
                .finish_non_exhaustive(),
            Self::NoFibre(_) => f.write_str("NoFibre(..)"),
            Self::OutOfMemory(_) => f.write_str("OutOfMemory(..)"),
            Self::OtherDomain(_) => f.write_str("OtherDomain(..)"),
            Self::NotAMember { core, .. } => {
                f.debug_struct("NotAMember").field("core", core).finish_non_exhaustive()
            }
        }
    }
}

error_messages! {
    impl<F> SpawnError<F> {
        Self::Stopped(_) => "the pool has stopped or is being destroyed; the strand was not spawned";
        Self::NotInPool(_) => "not called on a core of a running pool; use Pool::spawn_strand";
        Self::TooLarge { bytes, capacity, .. } =>
            "the strand's closure and result need a {bytes}-byte control block; the limit is {capacity} \
                 (box them, or build with a larger ROVING_STRAND_BYTES)";
        Self::NoFibre(_) =>
            "every fibre is held by another pool or quarantined after a stopped strand \
                 (build with more ROVING_FIBRES; strand::usage counts both)";
        Self::OutOfMemory(_) => "no memory for the strand's control block or saved stack";
        Self::NotAMember { core, .. } => "core {core} is not one of the pool's cores now";
        Self::OtherDomain(_) => "the pool belongs to another domain";
    }
}

/// Why a blocking call returned without what it waited for.
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WaitError {
    /// Blocking needs a strand to suspend: this was called from a plain
    /// task or from outside the pool. Use the `try_` form there.
    NotAStrand,
    /// The deadline passed first.
    TimedOut,
    /// The pool's timer heap could not grow to hold the deadline.
    OutOfMemory,
    /// The strand was cancelled: it should stop what it is doing and
    /// return. Hold cancellation off with a [`Shield`](super::Shield) for
    /// cleanup that must block.
    Interrupted,
    /// Only from [`Mutex`](crate::sync::Mutex): a strand failed while
    /// holding it, so the value may be half-updated. The lock is not held.
    Poisoned,
    /// Waiting would never end, because the calling strand itself holds
    /// what it would wait for: a [`Mutex`](crate::sync::Mutex) it has
    /// locked, or an event loop of the
    /// [`LoopGroup`](crate::event_loop::LoopGroup) it joins that it is draining.
    WouldDeadlock,
    /// Only from [`Signal`](crate::sync::Signal): another strand already
    /// waits for it, and a signal has one waiter at a time.
    Occupied,
}

error_messages! {
    impl WaitError {
        Self::NotAStrand => "blocking outside a strand (use the try_ form, or spawn a strand)";
        Self::TimedOut => "the deadline passed first";
        Self::OutOfMemory => "no memory to record the deadline";
        Self::Interrupted => "the strand was cancelled";
        Self::Poisoned => "the mutex is poisoned: a strand failed while holding it";
        Self::WouldDeadlock =>
            "the calling strand holds what it would wait for (a mutex it locked, or a loop it drains): it would wait forever";
        Self::Occupied => "another strand already waits for this signal (one waiter at a time)";
    }
}

/// Why a join did not give the strand's value. `H` is the handle type,
/// which comes back where the strand may still be joined.
#[non_exhaustive]
pub enum JoinError<H> {
    /// Joining blocks, and the caller is not a strand. The strand keeps
    /// running; join from a strand, or poll with `try_join`.
    NotAStrand(H),
    /// The joining strand was cancelled while it waited.
    Interrupted(H),
    /// The strand has not finished (only from `try_join`).
    Running(H),
    /// The strand failed: it panicked, or returned with live children.
    Failed(Failure),
    /// The strand belongs to another domain (`crate::domain`): its handle
    /// cannot be used here.
    OtherDomain(H),
}

impl<H> JoinError<H> {
    /// The handle, to join again, if the strand may still be joined.
    pub fn into_handle(self) -> Option<H> {
        match self {
            Self::NotAStrand(handle)
            | Self::Interrupted(handle)
            | Self::Running(handle)
            | Self::OtherDomain(handle) => Some(handle),
            Self::Failed(_) => None,
        }
    }

    /// The failure, if the strand failed.
    pub fn failure(&self) -> Option<&Failure> {
        match self {
            Self::Failed(failure) => Some(failure),
            _ => None,
        }
    }
}

impl<H> fmt::Debug for JoinError<H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotAStrand(_) => f.write_str("NotAStrand(..)"),
            Self::Interrupted(_) => f.write_str("Interrupted(..)"),
            Self::Running(_) => f.write_str("Running(..)"),
            Self::Failed(failure) => f.debug_tuple("Failed").field(failure).finish(),
            Self::OtherDomain(_) => f.write_str("OtherDomain(..)"),
        }
    }
}

error_messages! {
    impl<H> JoinError<H> {
        Self::NotAStrand(_) => "joining needs a strand to block; use try_join outside strands";
        Self::Interrupted(_) => "the joining strand was cancelled while it waited";
        Self::Running(_) => "the strand has not finished";
        Self::Failed(failure) => "{failure}";
        Self::OtherDomain(_) => "the strand belongs to another domain; its handle cannot be used here";
    }
}

/// Why a strand could not be cancelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CancelError {
    /// It had already finished: there is nothing left to cancel.
    Finished {
        /// The strand.
        strand: StrandId,
    },
    /// The strand belongs to another domain (`crate::domain`).
    OtherDomain {
        /// The strand.
        strand: StrandId,
    },
}

error_messages! {
    impl CancelError {
        Self::Finished { strand } => "strand {strand} has already finished; nothing to cancel";
        Self::OtherDomain { strand } => "strand {strand} belongs to another domain";
    }
}

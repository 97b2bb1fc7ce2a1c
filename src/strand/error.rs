//! What can go wrong with strands, in types that say so.

use super::JoinHandle;
use core::fmt;

/// A closure that was not spawned as a strand, and why. The closure comes
/// back with the error: [`SpawnError::into_inner`].
#[non_exhaustive]
pub enum SpawnError<F> {
    /// The pool has stopped.
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
}

impl<F> SpawnError<F> {
    /// The closure that was not spawned.
    pub fn into_inner(self) -> F {
        match self {
            Self::Stopped(f) | Self::NotInPool(f) | Self::NoFibre(f) | Self::OutOfMemory(f) => f,
            Self::TooLarge { closure, .. } => closure,
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
        }
    }
}

impl<F> fmt::Display for SpawnError<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Stopped(_) => write!(f, "the pool has stopped; the strand was not spawned"),
            Self::NotInPool(_) => write!(f, "not called on a core of a running pool; use Pool::spawn_strand"),
            Self::TooLarge { bytes, capacity, .. } => write!(
                f,
                "the strand's closure and result need a {bytes}-byte control block; the limit is {capacity} \
                 (box them, or build with a larger ROVING_STRAND_BYTES)"
            ),
            Self::NoFibre(_) => {
                write!(f, "every fibre is held by another pool (build with more ROVING_FIBRES)")
            }
            Self::OutOfMemory(_) => write!(f, "no memory for the strand's control block or saved stack"),
        }
    }
}

impl<F> core::error::Error for SpawnError<F> {}

/// Why a blocking call returned without what it waited for.
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
}

impl fmt::Display for WaitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotAStrand => write!(f, "blocking outside a strand (use the try_ form, or spawn a strand)"),
            Self::TimedOut => write!(f, "the deadline passed first"),
            Self::OutOfMemory => write!(f, "no memory to record the deadline"),
        }
    }
}

impl core::error::Error for WaitError {}

/// Why [`JoinHandle::join`] could not wait; the handle comes back.
#[non_exhaustive]
pub enum JoinError<T> {
    /// Joining blocks, and the caller is not a strand. The strand keeps
    /// running; try again from a strand, or poll
    /// [`JoinHandle::try_join`].
    NotAStrand(JoinHandle<T>),
}

impl<T> JoinError<T> {
    /// The handle, to join again.
    pub fn into_handle(self) -> JoinHandle<T> {
        match self {
            Self::NotAStrand(handle) => handle,
        }
    }
}

impl<T> fmt::Debug for JoinError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotAStrand(handle) => f.debug_tuple("NotAStrand").field(&handle.id()).finish(),
        }
    }
}

impl<T> fmt::Display for JoinError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotAStrand(handle) => {
                write!(
                    f,
                    "joining strand {} needs a strand to block; use try_join outside strands",
                    handle.id()
                )
            }
        }
    }
}

impl<T> core::error::Error for JoinError<T> {}

//! What can go wrong with a pool, in types that say so.

use crate::platform::StartCoreError;
use crate::strand::Failure;
use core::fmt;

/// A closure that was not accepted, and why. The closure comes back with
/// the error: [`PostError::into_inner`].
#[non_exhaustive]
pub enum PostError<F> {
    /// The pool has stopped (it was shut down, or it ran out of work and
    /// its [`run`](super::Pool::run) returned).
    Stopped(F),
    /// There is no core with this index in the pool.
    NoSuchCore {
        /// The index asked for.
        core: usize,
        /// The pool's size: valid indices are `0..cores`.
        cores: usize,
        /// The closure.
        closure: F,
    },
    /// Memory for the task could not be allocated.
    OutOfMemory(F),
    /// A free function ([`spawn`](crate::spawn), [`post`](crate::post)) was
    /// called outside any running pool's cores; use a [`Pool`](super::Pool)
    /// handle there instead.
    NotInPool(F),
}

impl<F> PostError<F> {
    /// The closure that was not accepted.
    pub fn into_inner(self) -> F {
        match self {
            Self::Stopped(f) | Self::OutOfMemory(f) | Self::NotInPool(f) => f,
            Self::NoSuchCore { closure, .. } => closure,
        }
    }
}

impl<F> fmt::Debug for PostError<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Stopped(_) => f.write_str("Stopped(..)"),
            Self::NoSuchCore { core, cores, .. } => {
                f.debug_struct("NoSuchCore").field("core", core).field("cores", cores).finish_non_exhaustive()
            }
            Self::OutOfMemory(_) => f.write_str("OutOfMemory(..)"),
            Self::NotInPool(_) => f.write_str("NotInPool(..)"),
        }
    }
}

impl<F> fmt::Display for PostError<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Stopped(_) => write!(f, "the pool has stopped; the closure was not queued"),
            Self::NoSuchCore { core, cores, .. } => {
                write!(f, "no core {core} in this pool: it has cores 0..{cores}")
            }
            Self::OutOfMemory(_) => write!(f, "no memory left for the task"),
            Self::NotInPool(_) => write!(f, "not called on a core of a running pool; use a Pool handle"),
        }
    }
}

impl<F> core::error::Error for PostError<F> {}

/// Why a pool could not be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PoolError {
    /// A pool needs at least one core.
    NoCores,
    /// More cores were asked for than the machine (or roving) has.
    TooManyCores {
        /// The count asked for.
        requested: usize,
        /// The most this pool can have here.
        available: usize,
    },
}

impl fmt::Display for PoolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoCores => write!(f, "a pool needs at least one core"),
            Self::TooManyCores { requested, available } => {
                write!(f, "{requested} cores asked for; at most {available} are available")
            }
        }
    }
}

impl core::error::Error for PoolError {}

/// Why [`Pool::run`](super::Pool::run) did not return `main`'s value.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RunError {
    /// The pool is running, or has run: a pool runs once.
    AlreadyRan,
    /// `run` must be called on one of the pool's cores (`0..cores`).
    NotAPoolCore {
        /// The calling core, if it is a core at all.
        core: Option<usize>,
        /// The pool's size.
        cores: usize,
    },
    /// A core of the pool could not be started; the pool was stopped
    /// without running `main`.
    StartCore(StartCoreError),
    /// No fibre was free for `main`'s strand: other pools hold them all.
    NoFibre,
    /// The pool was shut down while `main` was blocked, so it never
    /// returned (its strand is abandoned, not unwound).
    MainDidNotFinish,
    /// A failure nobody handled reached the pool: `main` (the root strand)
    /// failed, or passed up a child's failure, or a strand spawned from
    /// outside strands failed with its handle dropped. The pool was
    /// stopped.
    Failed(Failure),
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::AlreadyRan => write!(f, "this pool is running or has run; build a new one"),
            Self::NotAPoolCore { core: Some(core), cores } => {
                write!(f, "run was called on core {core}, which is not in this pool (cores 0..{cores})")
            }
            Self::NotAPoolCore { core: None, .. } => {
                write!(f, "run was called on a thread that is not a core")
            }
            Self::StartCore(error) => write!(f, "starting the pool's cores: {error}"),
            Self::NoFibre => write!(f, "no free fibre for main's strand (build with more ROVING_FIBRES)"),
            Self::MainDidNotFinish => write!(f, "the pool was shut down while main was blocked"),
            Self::Failed(failure) => write!(f, "the pool stopped on a failure: {failure}"),
        }
    }
}

impl core::error::Error for RunError {}

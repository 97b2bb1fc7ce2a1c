//! What a strand is known by outside its own layer: its id, and why it
//! waits. The trace's events, a pool's failure and deadlock reports and
//! the census carry them, and they sit below the pool, so these two types
//! live apart from the rest of `strand`, in the base layer
//! (`docs/layout.md`); `strand` re-exports both.

use crate::atomics::unmodelled::{AtomicU64, Ordering::Relaxed};
use core::fmt;
use core::num::NonZeroU64;

/// A strand's identity, unique for the life of the image.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StrandId(NonZeroU64);

impl StrandId {
    pub(crate) fn next() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Self(NonZeroU64::new(NEXT.fetch_add(1, Relaxed)).expect("strand ids do not wrap in 64 bits"))
    }

    pub(crate) fn from_raw(raw: u64) -> Option<Self> {
        NonZeroU64::new(raw).map(Self)
    }

    /// The id as a number.
    pub fn get(self) -> u64 {
        self.0.get()
    }
}

impl fmt::Display for StrandId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// Why a strand is blocked: every blocked strand records it, for reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
#[non_exhaustive]
pub enum BlockReason {
    /// Not blocked.
    None = 0,
    /// In [`sleep`](super::sleep).
    Sleeping,
    /// Waiting for a mutex.
    Mutex,
    /// Waiting on a condition variable.
    Condvar,
    /// Waiting for a semaphore permit.
    Semaphore,
    /// Waiting for an event to be set.
    Event,
    /// Waiting to send into a full channel.
    ChannelSend,
    /// Waiting to receive from an empty channel.
    ChannelReceive,
    /// Waiting for another strand to finish.
    Join,
    /// At the end of a scope, waiting for its children to finish.
    Scope,
    /// Waiting for a [`Future`](crate::future::Future)'s result.
    Future,
    /// In [`LoopGroup::join`](crate::event_loop::LoopGroup::join), waiting for
    /// event-loop objects to finish.
    ContextJoin,
    /// Waiting for a [`Signal`](crate::sync::Signal).
    Signal,
    /// In [`park`](super::park), waiting for its
    /// [`Unparker`](super::Unparker).
    Parked,
}

impl BlockReason {
    pub(crate) fn from_raw(raw: u8) -> Self {
        const ALL: [BlockReason; 14] = [
            BlockReason::None,
            BlockReason::Sleeping,
            BlockReason::Mutex,
            BlockReason::Condvar,
            BlockReason::Semaphore,
            BlockReason::Event,
            BlockReason::ChannelSend,
            BlockReason::ChannelReceive,
            BlockReason::Join,
            BlockReason::Scope,
            BlockReason::Future,
            BlockReason::ContextJoin,
            BlockReason::Signal,
            BlockReason::Parked,
        ];
        ALL.get(usize::from(raw)).copied().unwrap_or(BlockReason::None)
    }
}

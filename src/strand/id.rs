//! What a strand is known by outside its own layer: its id, why it waits,
//! and its priority. The trace's events, a pool's failure and deadlock
//! reports and the census carry them, and they sit below the pool, so
//! these types live apart from the rest of `strand`, in the base layer
//! (`docs/layout.md`); `strand` re-exports them.

use crate::atomics::unmodelled::{AtomicU64, Ordering::Relaxed};
use core::fmt;
use core::num::NonZeroU64;

/// A strand's identity, unique for the life of the image.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StrandId(NonZeroU64);

impl StrandId {
    #[inline]
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

/// A strand's priority level (default [`Priority::Normal`]).
///
/// In a pool with a [time slice](crate::Config::time_slice):
/// - a woken strand of a higher level than the strand running on its core
///   preempts that strand at once (at its next point outside roving's
///   code);
/// - preempted strands take their turns by level, four turns in seven for
///   [`High`](Priority::High), two for [`Normal`](Priority::Normal) and one
///   for [`Low`](Priority::Low) while every level has turns waiting, so no
///   level starves: a waiting level gets a turn within 7 turns of the pool.
///
/// A cooperative pool ignores priorities: nothing there is preempted.
/// Strands that share a fibre run in the order they became runnable,
/// whatever their levels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum Priority {
    /// Background work: never preempts another strand when it wakes.
    Low = 0,
    /// The default.
    #[default]
    Normal = 1,
    /// Latency-bound work, such as a strand an interrupt handler wakes.
    High = 2,
}

impl Priority {
    /// How many levels there are.
    pub const LEVELS: usize = 3;

    /// The level stored as `raw` (as [`Priority`] `as u8`).
    pub(crate) fn from_raw(raw: u8) -> Self {
        match raw {
            0 => Self::Low,
            1 => Self::Normal,
            _ => Self::High,
        }
    }
}

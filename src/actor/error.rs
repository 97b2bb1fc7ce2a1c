//! What can go wrong sending to an actor or pinning one.

use core::fmt;

/// Why a message was not queued. Each variant carries the message back:
/// [`SendError::into_inner`].
#[non_exhaustive]
pub enum SendError<M> {
    /// The actor was stopped ([`Addr::stop`](super::Addr::stop), or it
    /// stopped itself).
    Stopped(M),
    /// The actor's pool has stopped, so no turn can run. The actor is
    /// stopped with it.
    PoolStopped(M),
    /// Sent from a strand or core of another domain.
    OtherDomain(M),
    /// Memory for the message (or for the turn of the actor it would have
    /// woken, which stops the actor) could not be had.
    OutOfMemory(M),
}

impl<M> SendError<M> {
    /// The message that was not queued.
    pub fn into_inner(self) -> M {
        match self {
            Self::Stopped(m) | Self::PoolStopped(m) | Self::OtherDomain(m) | Self::OutOfMemory(m) => m,
        }
    }
}

impl<M> fmt::Debug for SendError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Stopped(_) => "Stopped(..)",
            Self::PoolStopped(_) => "PoolStopped(..)",
            Self::OtherDomain(_) => "OtherDomain(..)",
            Self::OutOfMemory(_) => "OutOfMemory(..)",
        })
    }
}

impl<M> fmt::Display for SendError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Stopped(_) => "the actor is stopped; the message comes back",
            Self::PoolStopped(_) => "the actor's pool has stopped; the message comes back",
            Self::OtherDomain(_) => "the actor belongs to another domain; send owned data through a channel",
            Self::OutOfMemory(_) => "out of memory for the message; it comes back",
        })
    }
}

impl<M> core::error::Error for SendError<M> {}

/// Why an actor could not be pinned. Each variant carries the actor back.
#[non_exhaustive]
pub enum PinError<A> {
    /// The machine (or roving) has no core `core`; it has `cores`.
    NoSuchCore {
        /// The core asked for.
        core: usize,
        /// How many cores there are.
        cores: usize,
        /// The actor, not spawned.
        actor: A,
    },
    /// Core `core` is not one of the pool's now.
    NotAMember {
        /// The core asked for.
        core: usize,
        /// The actor, not spawned.
        actor: A,
    },
}

impl<A> PinError<A> {
    /// The actor that was not spawned.
    pub fn into_inner(self) -> A {
        match self {
            Self::NoSuchCore { actor, .. } | Self::NotAMember { actor, .. } => actor,
        }
    }
}

impl<A> fmt::Debug for PinError<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoSuchCore { core, cores, .. } => {
                f.debug_struct("NoSuchCore").field("core", core).field("cores", cores).finish_non_exhaustive()
            }
            Self::NotAMember { core, .. } => {
                f.debug_struct("NotAMember").field("core", core).finish_non_exhaustive()
            }
        }
    }
}

impl<A> fmt::Display for PinError<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoSuchCore { core, cores, .. } => write!(f, "no core {core}: there are {cores}"),
            Self::NotAMember { core, .. } => write!(f, "core {core} is not in the pool"),
        }
    }
}

impl<A> core::error::Error for PinError<A> {}

//! Sending to an actor from an interrupt handler.
//!
//! [`Addr::send`] allocates the message's storage, and the turn of a
//! dormant actor, so a handler may not call it. An [`InterruptSender`] is
//! set up beforehand ([`Addr::interrupt_sender`]) with room for a fixed
//! number of messages and one task of its own, the *forwarder*:
//!
//! - [`InterruptSender::send`] (interrupt-safe) queues the message in that
//!   room and, if the forwarder is not already on its way, posts it to the
//!   actor's pool (to the actor's core if it is pinned) the way code
//!   outside the pool posts work, with no allocation: the forwarder's task
//!   is built once, with the sender.
//! - The forwarder runs on a core of the pool, where allocating is fine,
//!   and hands each queued message to [`Addr::send`].
//!
//! The queue and the forwarder's "on its way" flag are kept under one of
//! roving's internal spin locks, which mask interrupts while held, so a
//! handler never waits for code it interrupted. The flag is cleared only
//! by the forwarder, with the queue empty, under the same lock: a message
//! queued after that finds the flag clear and posts the forwarder again,
//! so none is stranded.
//!
//! The cost is one more hop than a send from a core: handler, forwarder,
//! the actor's turn (usually on the same core as the forwarder).

use super::{Actor, Addr};
use crate::atomics::unmodelled::{AtomicU64, Ordering::Relaxed};
use crate::spin_lock::SpinLock;
use crate::task::storage::BlockCache;
use crate::task::{Action, IntoTask, Task};
use alloc::collections::VecDeque;
use alloc::sync::Arc;
use core::fmt;
use core::ptr::NonNull;

/// Why [`InterruptSender::send`] did not queue a message. Each variant
/// carries it back.
#[derive(PartialEq, Eq)]
#[non_exhaustive]
pub enum InterruptSendError<M> {
    /// Every slot holds a message the forwarder has not handed on yet:
    /// try again later (a handler usually counts it and drops it).
    Full(M),
    /// The actor was stopped.
    Stopped(M),
    /// The actor's pool has stopped.
    PoolStopped(M),
}

impl<M> InterruptSendError<M> {
    /// The message that was not queued.
    pub fn into_inner(self) -> M {
        match self {
            Self::Full(m) | Self::Stopped(m) | Self::PoolStopped(m) => m,
        }
    }
}

impl<M> fmt::Debug for InterruptSendError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Full(_) => "Full(..)",
            Self::Stopped(_) => "Stopped(..)",
            Self::PoolStopped(_) => "PoolStopped(..)",
        })
    }
}

error_messages! {
    impl<M> InterruptSendError<M> {
        Self::Full(_) => "every slot of the interrupt sender holds a message not yet handed on";
        Self::Stopped(_) => "the actor was stopped";
        Self::PoolStopped(_) => "the actor's pool has stopped";
    }
}

/// Why [`Addr::interrupt_sender`] could not set a sender up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum InterruptSenderError {
    /// A sender needs room for at least one message.
    NoSlots,
    /// The room for its messages could not be allocated.
    OutOfMemory,
}

error_messages! {
    impl InterruptSenderError {
        Self::NoSlots => "an interrupt sender needs room for at least one message";
        Self::OutOfMemory => "no memory for the interrupt sender's slots";
    }
}

/// Sends to an actor from an interrupt handler.
///
/// [`Addr::send`] allocates the message's storage, and the turn of a
/// dormant actor, so a handler may not call it. A sender is set up
/// beforehand ([`Addr::interrupt_sender`]) with room for a fixed number of
/// messages and a task of its own, the *forwarder*. [`send`](Self::send)
/// (interrupt-safe) queues the message and, unless the forwarder is on its
/// way already, posts that task to the actor's pool as code outside the
/// pool would, without allocating. The forwarder runs on a core of the
/// pool and hands each queued message to [`Addr::send`]. That is one hop
/// more than a send from a core: handler, forwarder, the actor's turn
/// (usually on the forwarder's core).
///
/// Clone it freely; clones share the slots and the forwarder. Keep one
/// where the handler finds it (a `static`), made before the interrupt is
/// bound.
pub struct InterruptSender<A: Actor> {
    shared: Arc<Forwarding<A>>,
}

/// What a sender's clones and its forwarder share. The task comes first,
/// so a pointer to the task is a pointer to the whole.
#[repr(C)]
struct Forwarding<A: Actor> {
    task: Task,
    addr: Addr<A>,
    pending: SpinLock<Pending<A::Message>>,
    /// Messages the forwarder could not hand on (the actor or its pool
    /// stopped after they were queued), dropped.
    dropped: AtomicU64,
}

struct Pending<M> {
    queue: VecDeque<M>,
    slots: usize,
    /// The forwarder is posted or running.
    scheduled: bool,
}

// SAFETY: the task header is touched only by whoever holds the schedule
// (the `scheduled` flag, under the lock); the rest is `Sync` already.
unsafe impl<A: Actor> Sync for Forwarding<A> {}
// SAFETY: as above; messages are `Send`.
unsafe impl<A: Actor> Send for Forwarding<A> {}

impl<A: Actor> Addr<A> {
    /// Sets up an [`InterruptSender`] to this actor with room for `slots`
    /// messages, allocated now. Call it before the interrupt it serves is
    /// bound, and keep the sender where the handler finds it (a `static`).
    ///
    /// # Errors
    ///
    /// [`InterruptSenderError::NoSlots`] for zero slots,
    /// [`InterruptSenderError::OutOfMemory`].
    pub fn interrupt_sender(&self, slots: usize) -> Result<InterruptSender<A>, InterruptSenderError> {
        if slots == 0 {
            return Err(InterruptSenderError::NoSlots);
        }
        let mut queue = VecDeque::new();
        queue.try_reserve_exact(slots).map_err(|_| InterruptSenderError::OutOfMemory)?;
        let shared = Arc::new(Forwarding {
            task: Task::new(forward::<A>),
            addr: self.clone(),
            pending: SpinLock::new(Pending { queue, slots, scheduled: false }),
            dropped: AtomicU64::new(0),
        });
        Ok(InterruptSender { shared })
    }
}

impl<A: Actor> InterruptSender<A> {
    /// Queues `message` for the actor. **Interrupt-safe:** it never
    /// allocates and never waits, and the only lock it takes masks
    /// interrupts; the forwarder is posted to the pool as from outside it.
    ///
    /// # Errors
    ///
    /// [`InterruptSendError::Full`] while every slot is taken;
    /// [`InterruptSendError::Stopped`] and
    /// [`InterruptSendError::PoolStopped`] once the actor or its pool has
    /// stopped. Each carries `message` back.
    pub fn send(&self, message: A::Message) -> Result<(), InterruptSendError<A::Message>> {
        let shared = &*self.shared;
        if shared.addr.is_stopped() {
            return Err(InterruptSendError::Stopped(message));
        }
        let pool = shared.addr.pool().pool_ref();
        if pool.refuses_work() {
            return Err(InterruptSendError::PoolStopped(message));
        }
        let post = {
            let mut pending = shared.pending.lock();
            if pending.queue.len() == pending.slots {
                return Err(InterruptSendError::Full(message));
            }
            pending.queue.push_back(message); // room reserved at set-up
            !core::mem::replace(&mut pending.scheduled, true)
        };
        if post {
            // Any core: the actor's own send puts a pinned actor's turn on
            // its core.
            if let Err(refused) = pool.spawn(Forwarder(self.shared.clone())) {
                // The pool stopped since the check above: whatever is
                // queued now can never be handed on.
                let Forwarder(shared) = refused.into_inner();
                shared.abandon();
            }
        }
        Ok(())
    }

    /// Messages queued and later dropped undelivered, because the actor or
    /// its pool stopped before the forwarder handed them on.
    pub fn dropped(&self) -> u64 {
        self.shared.dropped.load(Relaxed)
    }

    /// The actor this sender sends to.
    pub fn address(&self) -> &Addr<A> {
        &self.shared.addr
    }
}

impl<A: Actor> Clone for InterruptSender<A> {
    fn clone(&self) -> Self {
        Self { shared: self.shared.clone() }
    }
}

impl<A: Actor> fmt::Debug for InterruptSender<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InterruptSender").field("actor", &self.shared.addr).finish_non_exhaustive()
    }
}

impl<A: Actor> Forwarding<A> {
    /// Drops what is queued (counted) and clears the schedule: the
    /// forwarder will not run again until a send posts it.
    fn abandon(&self) {
        let dropped = {
            let mut pending = self.pending.lock();
            pending.scheduled = false;
            core::mem::take(&mut pending.queue)
        };
        self.dropped.fetch_add(dropped.len() as u64, Relaxed);
        drop(dropped);
    }
}

/// The forwarder as work to post: the reference it holds is the one its
/// task gives back when it runs.
struct Forwarder<A: Actor>(Arc<Forwarding<A>>);

impl<A: Actor> IntoTask for Forwarder<A> {
    fn into_task(self, _cache: Option<&mut BlockCache>) -> Result<NonNull<Task>, Self> {
        // The task is built already; the posted pointer carries the
        // reference until the task runs.
        let whole = Arc::into_raw(self.0).cast_mut();
        // SAFETY: an `Arc`'s data pointer is never null; the task is the
        // first field of a `repr(C)` struct, so it is at the same address.
        Ok(unsafe { NonNull::new_unchecked(whole.cast::<Task>()) })
    }

    unsafe fn from_task(task: NonNull<Task>, _cache: Option<NonNull<BlockCache>>) -> Self {
        // SAFETY: made by `into_task` from an `Arc<Forwarding<A>>`, whose
        // data starts with the task (`repr(C)`).
        Self(unsafe { Arc::from_raw(task.as_ptr().cast::<Forwarding<A>>()) })
    }
}

/// The forwarder's task: hands every queued message to the actor, then
/// clears the schedule with the queue empty.
///
/// # Safety
///
/// As for `TaskFn`; `task` is a `Forwarding<A>`'s, posted with a reference.
unsafe fn forward<A: Actor>(task: NonNull<Task>, action: Action, cache: NonNull<BlockCache>) {
    // SAFETY: forwarded contract: posted by `InterruptSender::send`.
    let Forwarder(shared) = unsafe { Forwarder::<A>::from_task(task, Some(cache)) };
    if action == Action::Discard {
        shared.abandon();
        return;
    }
    loop {
        let next = {
            let mut pending = shared.pending.lock();
            let next = pending.queue.pop_front();
            pending.scheduled = next.is_some();
            next
        };
        let Some(message) = next else { break };
        if shared.addr.send(message).is_err() {
            shared.dropped.fetch_add(1, Relaxed);
        }
    }
}

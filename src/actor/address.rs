//! An actor's cell (its state and schedule word) and its address.

use super::turn::{self, Turn};
use super::{Actor, EndWaitError};
use crate::pool::DeliveryError;
use crate::pool::Pool;
use crate::protocol::actor_schedule::{ActorPushed, Closing, Link, Schedule};
use crate::sync::Event;
use crate::task::boxed::{self, Boxed};
use alloc::sync::Arc;
use core::cell::UnsafeCell;
use core::fmt;
use core::ptr::NonNull;

/// A queued message: its link, then the message.
pub(super) type Envelope<M> = Boxed<Link, M>;

/// What every handle to one actor shares: the schedule word and the state.
pub(crate) struct ActorCell<A: Actor> {
    pub(super) schedule: Schedule,
    pub(super) actor: UnsafeCell<A>,
}

// SAFETY: the state is touched only by the actor's one turn at a time (the
// schedule word's guarantee), which hands it between cores with release and
// acquire; messages are `Send`.
unsafe impl<A: Actor> Sync for ActorCell<A> {}

impl<A: Actor> ActorCell<A> {
    pub(super) fn new(actor: A, pin: Option<usize>) -> Self {
        Self { schedule: Schedule::new(pin), actor: UnsafeCell::new(actor) }
    }
}

impl<A: Actor> Drop for ActorCell<A> {
    fn drop(&mut self) {
        // Messages of a turn that never ran (its pool stopped). No cache is
        // at hand here; blocks stay with their pool, which frees them.
        // SAFETY: the last reference is going, so no turn exists and the
        // chain is ours.
        unsafe { turn::drain_chain::<A::Message>(self.schedule.abandon(), None, None) };
    }
}

/// The address of an actor: send it messages, or stop it. Clone it freely
/// and send it to any core; every clone names the same actor.
///
/// An actor can hold another's address and send to it from its handler:
///
/// ```
/// use roving::actor::{Actor, Addr, ActorContext};
/// use roving::{Pool, platform::host::Machine};
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use std::sync::Arc;
///
/// struct Doubler { next: Addr<Summer> }
/// impl Actor for Doubler {
///     type Message = u64;
///     fn handle(&mut self, n: u64, _: &mut ActorContext<'_, Self>) {
///         self.next.send(2 * n).unwrap();
///     }
///     fn stopped(&mut self) {
///         self.next.stop(); // the pipeline ends in order
///     }
/// }
///
/// struct Summer { sum: u64, out: Arc<AtomicU64> }
/// impl Actor for Summer {
///     type Message = u64;
///     fn handle(&mut self, n: u64, _: &mut ActorContext<'_, Self>) {
///         self.sum += n;
///     }
///     fn stopped(&mut self) {
///         self.out.store(self.sum, Ordering::Relaxed);
///     }
/// }
///
/// Machine::new(2).unwrap().run(|| {
///     let pool = Pool::new().unwrap();
///     let out = Arc::new(AtomicU64::new(0));
///     let summer = pool.spawn_actor(Summer { sum: 0, out: out.clone() });
///     let doubler = pool.spawn_actor(Doubler { next: summer });
///     pool.run(move || {
///         (1..=10).for_each(|n| doubler.send(n).unwrap());
///         doubler.stop();
///     }).unwrap();
///     assert_eq!(out.load(Ordering::Relaxed), 110);
/// }).unwrap();
/// ```
pub struct Addr<A: Actor> {
    // Declared before `pool`, so a cell's last messages are dropped while
    // their pool (which may hold their storage) is still alive.
    cell: Arc<ActorCell<A>>,
    pool: Pool,
}

impl<A: Actor> Addr<A> {
    pub(super) fn new(cell: Arc<ActorCell<A>>, pool: Pool) -> Self {
        Self { cell, pool }
    }

    /// Queues `message` for the actor, waking it if it was dormant.
    ///
    /// From a core of the actor's pool this costs a storage block from the
    /// core's cache and one compare-exchange; waking a dormant actor costs
    /// a task, made the same way, queued like a [spawn](Pool::spawn_task) (or a
    /// [post](Pool::post) to the core of a pinned actor).
    ///
    /// # Errors
    ///
    /// [`DeliveryError::Stopped`] if the actor was stopped;
    /// [`DeliveryError::PoolStopped`] if its pool has stopped;
    /// [`DeliveryError::OtherDomain`] from another domain;
    /// [`DeliveryError::OutOfMemory`]. Each carries `message` back.
    pub fn send(&self, message: A::Message) -> Result<(), DeliveryError<A::Message>> {
        let shared = self.pool.pool_ref();
        // The core found below must stay ours while we use it.
        let _deferral = crate::strand::deferral::defer();
        let me = shared.worker_core();
        if me.is_none() && !shared.domain().is_current() {
            return Err(DeliveryError::OtherDomain(message));
        }
        // SAFETY: `me` is what `worker_core` said, just now, on this core.
        let envelope = unsafe { shared.with_cache_at(me, |cache| boxed::new(Link::new(), message, cache)) }
            .map_err(DeliveryError::OutOfMemory)?;
        // SAFETY: the envelope is new, ours, and in no chain.
        match unsafe { self.cell.schedule.push(envelope.cast()) } {
            ActorPushed::Queued => Ok(()),
            ActorPushed::Woke(pin) => self.schedule(pin, Some(envelope)),
            // SAFETY: refused, so still ours; made with this pool's cache
            // where the calling core has one.
            ActorPushed::Closed => Err(DeliveryError::Stopped(unsafe { self.take_back(envelope) })),
        }
    }

    /// Stops the actor. Later sends are refused; messages already queued
    /// are handled, then [`Actor::stopped`] runs. Returns whether this call
    /// stopped it (`false` if it was already stopped).
    pub fn stop(&self) -> bool {
        match self.cell.schedule.close() {
            Closing::AlreadyClosed => false,
            Closing::Closed => true,
            Closing::Woke(pin) => {
                // A pool that stopped leaves nothing to stop: the turn is
                // abandoned, which is all a stop asks.
                let _ = self.schedule(pin, None);
                true
            }
        }
    }

    /// Whether the actor has been stopped (it may still be handling the
    /// messages queued before).
    pub fn is_stopped(&self) -> bool {
        self.cell.schedule.is_closed()
    }

    /// Whether the actor is dormant: no message pending, no turn. A
    /// stopped actor is never dormant: see [`Addr::has_ended`].
    pub fn is_dormant(&self) -> bool {
        self.cell.schedule.is_dormant()
    }

    /// Whether the actor has ended: it was stopped and its
    /// [`stopped`](Actor::stopped) hook has run, or its pool discarded
    /// its pending turn at a shutdown. No turn of it will run again.
    pub fn has_ended(&self) -> bool {
        self.cell.schedule.has_ended()
    }

    /// Blocks the calling strand until the actor has ended
    /// ([`Addr::has_ended`]): stop an actor, then wait here for its
    /// `stopped` hook to have run. Returns at once if it has ended.
    ///
    /// ```
    /// use roving::actor::{Actor, ActorContext};
    /// use roving::{Pool, platform::host::Machine};
    ///
    /// struct Total(u64);
    /// impl Actor for Total {
    ///     type Message = u64;
    ///     fn handle(&mut self, n: u64, _: &mut ActorContext<'_, Self>) {
    ///         self.0 += n;
    ///     }
    /// }
    ///
    /// Machine::new(2).unwrap().run(|| {
    ///     let pool = Pool::new().unwrap();
    ///     let total = pool.spawn_actor(Total(0));
    ///     pool.run(move || {
    ///         (1..=100).for_each(|n| total.send(n).unwrap());
    ///         total.stop();
    ///         // Every message sent before the stop has been handled.
    ///         total.wait_ended().unwrap();
    ///         assert!(total.has_ended());
    ///     })
    ///     .unwrap();
    /// })
    /// .unwrap();
    /// ```
    ///
    /// # Errors
    ///
    /// [`EndWaitError::NotAStrand`] if the caller is not a strand and the
    /// actor has not ended; [`EndWaitError::Interrupted`] if the strand is
    /// cancelled; [`EndWaitError::PoolStopped`] if the actor's pool stopped
    /// while the actor was dormant, so that it will never run again.
    pub fn wait_ended(&self) -> Result<(), EndWaitError> {
        if self.has_ended() {
            return Ok(());
        }
        if crate::strand::current().is_none() {
            return Err(EndWaitError::NotAStrand);
        }
        // The protocol is in `crate::pool::end_waiters`.
        let waiters = self.pool.pool_ref().end_waiters();
        let event = Arc::new(Event::new());
        waiters.register(Arc::as_ptr(&self.cell).addr(), event.clone());
        let outcome = loop {
            if self.has_ended() {
                break Ok(());
            }
            if self.pool.is_stopped() {
                break Err(EndWaitError::PoolStopped);
            }
            if event.wait().is_err() {
                break Err(EndWaitError::Interrupted);
            }
        };
        waiters.deregister(&event);
        outcome
    }

    /// The pool the actor runs on.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// Schedules a turn for the actor, whose wake this caller won. If the
    /// pool refuses it, the actor is abandoned: `own`, the caller's
    /// message, comes back in the error, and the others queued since are
    /// dropped and counted as discarded.
    fn schedule(
        &self,
        pin: Option<usize>,
        own: Option<NonNull<Envelope<A::Message>>>,
    ) -> Result<(), DeliveryError<A::Message>> {
        let shared = self.pool.pool_ref();
        let turn = Turn::new(self.cell.clone(), shared, pin);
        let refused = match pin {
            Some(core) => shared.post_pinned(core, turn),
            None => shared.spawn(turn),
        };
        let Err(error) = refused else {
            return Ok(());
        };
        let (turn, refusal) = error.into_refusal();
        turn.abandon(own).map_or(Ok(()), |message| Err(refusal.map(|()| message)))
    }

    /// # Safety
    ///
    /// `envelope` was made by `send` on this thread and refused.
    unsafe fn take_back(&self, envelope: NonNull<Envelope<A::Message>>) -> A::Message {
        self.pool.pool_ref().with_cache(|cache| {
            // SAFETY: ours (contract); the cache, if any, is this pool's.
            unsafe { boxed::take(envelope, cache.map(NonNull::from)) }
        })
    }
}

impl<A: Actor> Clone for Addr<A> {
    fn clone(&self) -> Self {
        Self { cell: self.cell.clone(), pool: self.pool.clone() }
    }
}

impl<A: Actor> PartialEq for Addr<A> {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.cell, &other.cell)
    }
}

impl<A: Actor> Eq for Addr<A> {}

impl<A: Actor> fmt::Debug for Addr<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Addr")
            .field("actor", &Arc::as_ptr(&self.cell))
            .field("stopped", &self.is_stopped())
            .finish_non_exhaustive()
    }
}

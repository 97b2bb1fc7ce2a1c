//! Actors: state that handles messages one at a time, scheduled on a pool.
//!
//! An [`Actor`] owns its state and handles one [`Message`](Actor::Message)
//! at a time. [`Pool::spawn_actor`] returns its [`Addr`], which can be
//! cloned and sent to any core; [`Addr::send`] queues a message.
//!
//! # Guarantees
//!
//! - **Never on two cores at once.** An actor's messages are handled by
//!   its *turns*, and at most one turn exists per actor (the proof is in
//!   `protocol/actor_schedule.rs`, checked by `tests/loom_actor.rs`). Its state
//!   needs no lock.
//! - **In order per sender.** Messages from one sender are handled in the
//!   order it sent them. Messages from different senders interleave.
//! - **A dormant actor costs one word.** An actor with no message pending
//!   holds no task and no queue: the scheduler's whole state for it is one
//!   word (the head of its message list and its schedule flags). A message
//!   to a dormant actor wakes it: its turn, the task that holds the queue
//!   of taken messages, is made from the sending core's block cache and
//!   goes back there when the queue drains. With the [`Addr`] handle's
//!   allocation, an actor whose state is `S` takes
//!   `2 * size_of::<usize>() + size_of::<usize>() + size_of::<S>()` bytes
//!   (rounded up to its alignment) while dormant, 24 + `size_of::<S>()` on
//!   64-bit machines, plus each clone of its [`Addr`] (two words).
//! - **Fair turns.** A turn handles at most [`Actor::MESSAGES_PER_TURN`]
//!   messages, then goes to the back of its core's queue, so a busy actor
//!   does not starve the other work of its core.
//! - **Pinned actors** ([`Pool::spawn_actor_on`]) run only on their core:
//!   for state tied to one core, such as a device driver that must be
//!   driven from the core that took its interrupts. If the core leaves the
//!   pool, the pin lapses until it comes back, as for pinned strands.
//! - **Nothing is dropped silently.** A message to a stopped actor comes
//!   back in [`DeliveryError`]. Messages accepted before [`Addr::stop`] are
//!   handled before the actor's [`Actor::stopped`] hook runs. If the pool
//!   shuts down with turns pending, their messages are dropped unhandled
//!   and counted in [`CoreStats::discarded`](crate::CoreStats::discarded).
//!
//! # Shutting down
//!
//! Two ways, as for all work on roving: an explicit [`Addr::stop`] (or
//! [`ActorContext::stop`] from the actor itself), after which
//! [`Addr::wait_ended`] blocks a strand until the actor's `stopped` hook
//! has run ([`Addr::has_ended`] says so without blocking); or quiescence: a dormant actor
//! holds no task, so once no message, task, strand or timer is pending
//! and every core is idle, [`Pool::run`](crate::Pool::run) returns.
//!
//! A closure with no actor behind it is a plain task: [`Pool::spawn_task`](crate::Pool::spawn_task) or
//! [`Pool::post`](crate::Pool::post).
//!
//! A panic in [`Actor::handle`] is a panic in a task: on the host it stops
//! the pool and is raised again from `run`.
//!
//! ```
//! use roving::actor::{Actor, ActorContext};
//! use roving::{Pool, platform::host::Machine};
//! use std::sync::atomic::{AtomicU64, Ordering};
//! use std::sync::Arc;
//!
//! struct Adder { total: u64, out: Arc<AtomicU64> }
//!
//! impl Actor for Adder {
//!     type Message = u64;
//!     fn handle(&mut self, n: u64, _: &mut ActorContext<'_, Self>) {
//!         self.total += n;
//!     }
//!     fn stopped(&mut self) {
//!         self.out.store(self.total, Ordering::Relaxed);
//!     }
//! }
//!
//! Machine::new(2).unwrap().run(|| {
//!     let pool = Pool::new().unwrap();
//!     let out = Arc::new(AtomicU64::new(0));
//!     let adder = pool.spawn_actor(Adder { total: 0, out: out.clone() });
//!     pool.run(|| {
//!         for n in 1..=100 {
//!             adder.send(n).unwrap();
//!         }
//!         adder.stop();
//!     }).unwrap();
//!     assert_eq!(out.load(Ordering::Relaxed), 5050);
//! }).unwrap();
//! ```

mod address;
mod interrupt;
mod turn;

pub use crate::pool::{DeliveryError, PinError};
pub use address::Addr;
pub use interrupt::{InterruptSendError, InterruptSender, InterruptSenderError};

/// Why [`Addr::wait_ended`] returned before the actor ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum EndWaitError {
    /// Waiting blocks, and the caller is not a strand: poll
    /// [`Addr::has_ended`] there, or use the actor's
    /// [`stopped`](Actor::stopped) hook.
    NotAStrand,
    /// The waiting strand was cancelled.
    Interrupted,
    /// The actor's pool stopped while the actor was dormant: it will never
    /// run again, and its `stopped` hook did not run.
    PoolStopped,
}

error_messages! {
    impl EndWaitError {
        Self::NotAStrand => "waiting for an actor's end blocks, and the caller is not a strand";
        Self::Interrupted => "the strand was cancelled while it waited for an actor's end";
        Self::PoolStopped =>
            "the actor's pool stopped while the actor was dormant; its stopped hook did not run";
    }
}

use crate::pool::Pool;
use crate::pool::seam::PoolRef;
use address::ActorCell;
use alloc::sync::Arc;

/// State that handles messages one at a time.
pub trait Actor: Send + Sized + 'static {
    /// What the actor is sent.
    type Message: Send + 'static;

    /// The most messages one turn handles before the actor yields its core
    /// to other work. A larger number amortises scheduling over more
    /// messages; a smaller one shares the core more finely.
    const MESSAGES_PER_TURN: usize = 64;

    /// Handles one message. `context` can stop the actor or name it.
    fn handle(&mut self, message: Self::Message, context: &mut ActorContext<'_, Self>);

    /// Runs once, after the actor was stopped and every message accepted
    /// before that was handled.
    fn stopped(&mut self) {}
}

/// What an actor can do about itself while it handles a message.
pub struct ActorContext<'a, A: Actor> {
    cell: &'a Arc<ActorCell<A>>,
    /// The pool of the core running the turn.
    pool: PoolRef<'a>,
    core: usize,
    stop: bool,
}

impl<A: Actor> ActorContext<'_, A> {
    /// Stops the actor once this message is handled: later sends are
    /// refused, messages already queued are still handled, then
    /// [`Actor::stopped`] runs.
    pub fn stop(&mut self) {
        self.stop = true;
    }

    /// The actor's own address, to hand to others.
    pub fn address(&self) -> Addr<A> {
        Addr::new(self.cell.clone(), self.pool.to_pool())
    }

    /// The core this turn runs on.
    pub fn core(&self) -> usize {
        self.core
    }
}

impl Pool {
    /// Spawns `actor` on this pool, dormant until its first message; it
    /// runs on whichever core its sender is on (and is offered to idle
    /// cores).
    pub fn spawn_actor<A: Actor>(&self, actor: A) -> Addr<A> {
        Addr::new(Arc::new(ActorCell::new(actor, None)), self.clone())
    }

    /// Spawns `actor` pinned to `core` of this pool: every turn runs there.
    ///
    /// # Errors
    ///
    /// [`PinError::NoSuchCore`] or [`PinError::NotAMember`], with `actor`.
    pub fn spawn_actor_on<A: Actor>(&self, core: usize, actor: A) -> Result<Addr<A>, PinError<A>> {
        if let Err(error) = self.pool_ref().check_pin(core) {
            return Err(error.carrying(actor));
        }
        Ok(Addr::new(Arc::new(ActorCell::new(actor, Some(core))), self.clone()))
    }
}

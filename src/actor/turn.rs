//! An actor's turn: the task that holds its taken messages and handles
//! them, made when a message wakes the actor and freed when it goes
//! dormant again.

use super::address::{ActorCell, Envelope};
use super::{Actor, ActorContext};
use crate::pool::seam::PoolRef;
use crate::protocol::actor_schedule::{self as schedule, Finished, Link};
use crate::task::boxed;
use crate::task::closure::RunOnce;
use crate::task::storage::BlockCache;
use alloc::sync::Arc;
use core::ptr::{self, NonNull};

/// `pin` of an actor that is not pinned.
const UNPINNED: usize = usize::MAX;

/// One turn of an actor. With its task header it fills one storage block.
pub(super) struct Turn<A: Actor> {
    cell: Arc<ActorCell<A>>,
    /// Messages taken from the schedule word and not yet handled, oldest
    /// first.
    batch: *mut Link,
    pin: usize,
    /// The actor's pool, alive while the turn is (the turn is in the
    /// pool's queues, or held by a sender holding an address).
    pool: *const (),
    /// The turn ended properly; dropping it does nothing more.
    over: bool,
}

// SAFETY: the batch's messages are `Send`, and the turn owns them; the
// pool pointer is to a `Sync` value.
unsafe impl<A: Actor> Send for Turn<A> {}

impl<A: Actor> Turn<A> {
    /// The turn of `cell`'s actor, in `pool`, whose wake the
    /// caller won.
    pub(super) fn new(cell: Arc<ActorCell<A>>, pool: PoolRef<'_>, pin: Option<usize>) -> Self {
        Self { cell, batch: ptr::null_mut(), pin: pin.unwrap_or(UNPINNED), pool: pool.as_raw(), over: false }
    }

    /// The actor's pool, alive as long as the turn is (field contract),
    /// however the turn is borrowed meanwhile.
    fn pool<'a>(&self) -> PoolRef<'a> {
        // SAFETY: the pool outlives the turn (field contract); callers use
        // the view only while they hold the turn.
        unsafe { PoolRef::from_raw(self.pool) }
    }

    fn pin(&self) -> Option<usize> {
        (self.pin != UNPINNED).then_some(self.pin)
    }

    /// The turn will never run (its pool refused it): closes the actor and
    /// drops what was queued, except `own` (the message of the caller, who
    /// won the wake), which it returns.
    pub(super) fn abandon(mut self, own: Option<NonNull<Envelope<A::Message>>>) -> Option<A::Message> {
        self.over = true;
        let shared = self.pool();
        let queued = self.cell.schedule.abandon();
        let (mine, dropped) = shared.with_cache(|cache| {
            // SAFETY: we hold the turn, so the chain taken is ours.
            unsafe { drain_chain::<A::Message>(queued, cache.map(NonNull::from), own) }
        });
        shared.count_discarded(dropped as u64);
        // This was the actor's one turn, and the word is closed: it ends.
        self.end();
        mine
    }
}

impl<A: Actor> Turn<A> {
    /// Tries to end the turn, having handled everything taken: the actor
    /// goes dormant, or, if it was stopped, runs its `stopped` hook. False
    /// if more messages came.
    fn leave(&self) -> bool {
        match self.cell.schedule.finish(self.pin()) {
            Finished::Dormant => true,
            Finished::More => false,
            Finished::Stopping => {
                // SAFETY: the one turn of the actor has its state.
                unsafe { &mut *self.cell.actor.get() }.stopped();
                self.end();
                true
            }
        }
    }
}

impl<A: Actor> Turn<A> {
    /// Ends the actor, whose one turn this is and whose word is closed,
    /// and wakes the strands waiting for that (`super::end`).
    fn end(&self) {
        self.cell.schedule.end();
        let shared = self.pool();
        shared.end_waiters().ended(Arc::as_ptr(&self.cell).addr());
    }
}

impl<A: Actor> RunOnce for Turn<A> {
    fn run_once(mut self) {
        // SAFETY: the pool outlives the turn (field contract), and this
        // run, which may hand the turn on.
        let pool = unsafe { PoolRef::from_raw(self.pool) };
        let me = pool.worker_core().expect("an actor's turn runs on a core of its pool");
        let mut handled = 0;
        loop {
            if self.batch.is_null() {
                // Having handled something, try to leave first: most often
                // nothing came meanwhile, and one compare-exchange ends
                // the turn. A turn just started was woken by a message, so
                // it takes first.
                if handled > 0 && self.leave() {
                    break;
                }
                let taken = self.cell.schedule.take();
                if taken.is_null() {
                    if self.leave() {
                        break;
                    }
                    continue;
                }
                // SAFETY: taken by this turn, so ours.
                self.batch = unsafe { schedule::reverse(taken) };
            }
            if handled == A::MESSAGES_PER_TURN {
                // Yield the core: to the back of its queue, batch and all.
                trace_point!(
                    pool,
                    me,
                    crate::trace::event::TraceEvent::ActorTurn { messages: handled as u32 }
                );
                handled = 0;
                let pinned = self.pin().is_some();
                match pool.requeue(me, self, pinned) {
                    Ok(()) => return,
                    // Out of memory for the task: keep the core instead.
                    Err(turn) => self = turn,
                }
            }
            let envelope =
                NonNull::new(self.batch).expect("the batch is not empty").cast::<Envelope<A::Message>>();
            // SAFETY: the batch is ours; its messages are envelopes of this
            // actor's message type, made with this pool's cache or the heap;
            // `me` is this core, as `worker_core` said.
            let message = unsafe {
                self.batch = Link::next(envelope.cast());
                pool.with_cache_at(Some(me), |cache| boxed::take(envelope, cache.map(NonNull::from)))
            };
            let mut context = ActorContext { cell: &self.cell, pool, core: me, stop: false };
            // SAFETY: the one turn of the actor has its state.
            unsafe { &mut *self.cell.actor.get() }.handle(message, &mut context);
            if context.stop {
                // We hold the turn: this only refuses later messages.
                let _ = self.cell.schedule.close();
            }
            handled += 1;
        }
        trace_point!(pool, me, crate::trace::event::TraceEvent::ActorTurn { messages: handled as u32 });
        self.over = true;
    }
}

impl<A: Actor> Drop for Turn<A> {
    /// A turn dropped before it ended (its pool discarded it at a
    /// shutdown, or `handle` panicked): the actor is stopped and what it
    /// still had queued is dropped and counted.
    fn drop(&mut self) {
        if self.over {
            return;
        }
        let shared = self.pool();
        let batch = core::mem::replace(&mut self.batch, ptr::null_mut());
        let queued = self.cell.schedule.abandon();
        let dropped = shared.with_cache(|cache| {
            let cache = cache.map(NonNull::from);
            // SAFETY: this turn's own messages, each dropped once.
            unsafe {
                drain_chain::<A::Message>(batch, cache, None).1
                    + drain_chain::<A::Message>(queued, cache, None).1
            }
        });
        shared.count_discarded(dropped as u64);
        // This was the actor's one turn, and the word is closed: it ends.
        self.end();
    }
}

/// Drops every message of a chain except `keep`, which it returns; also
/// returns how many it dropped.
///
/// # Safety
///
/// The caller owns the chain, whose messages are envelopes of `M`; `cache`
/// is as for [`boxed::take`].
pub(super) unsafe fn drain_chain<M>(
    mut chain: *mut Link,
    cache: Option<NonNull<BlockCache>>,
    keep: Option<NonNull<Envelope<M>>>,
) -> (Option<M>, usize) {
    let (mut kept, mut dropped) = (None, 0);
    while let Some(link) = NonNull::new(chain) {
        let envelope = link.cast::<Envelope<M>>();
        // SAFETY: owned (contract), taken exactly once.
        let message = unsafe {
            chain = Link::next(link);
            boxed::take(envelope, cache)
        };
        if Some(envelope) == keep {
            kept = Some(message);
        } else {
            drop(message);
            dropped += 1;
        }
    }
    (kept, dropped)
}

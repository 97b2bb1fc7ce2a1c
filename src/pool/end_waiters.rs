//! Waiting for something of a pool to end: each waiter names the object
//! it waits for (by address) and how to tell it. Actors use it: the
//! strands blocked in [`Addr::wait_ended`](crate::actor::Addr::wait_ended)
//! are kept here, in the actor's pool, because a dormant actor costs one
//! word and has no room for them.
//!
//! An actor *ends* once no turn of it will ever run again: its last turn
//! ran the `stopped` hook, or its pool discarded the turn. Its schedule
//! word then reads exactly `CLOSED` (`crate::protocol::actor_schedule`),
//! which is what `Addr::has_ended` checks.
//!
//! # Protocol
//!
//! - **Wait** (a strand): register `(actor, event)` under the lock, then
//!   check whether the actor has ended or the pool has stopped; if neither,
//!   wait on the event and check again. Deregister before returning.
//! - **End** (the actor's last turn, or the turn being discarded): make
//!   the word `CLOSED`, then, under the lock, set the events registered for
//!   this actor.
//! - **Stop** (the pool stops): set every registered event, since a
//!   dormant actor of a stopped pool will never run again either.
//!
//! No wake is lost: a waiter's registration and an ender's notification
//! are both under the lock. If the registration comes first, the ender
//! sets the waiter's event. If it comes after, the ender's write of the
//! word happened before it released the lock, and the waiter reads the
//! word after it took the lock, so its check sees the end. The same holds
//! for the pool's state and a stop.

use crate::spin_lock::SpinLock;
use alloc::sync::Arc;
use alloc::vec::Vec;

/// How a waiter is told (a strand waits on an `Event`, which implements
/// this by setting itself).
pub(crate) trait Notify: Send + Sync {
    /// Wakes the waiter; it then looks again at what it waits for.
    fn notify(&self);
}

/// The strands of one pool waiting for some actor's end.
pub(crate) struct EndWaiters {
    /// `(actor, event)`: the actor's cell address, and what to set.
    waiting: SpinLock<Vec<(usize, Arc<dyn Notify>)>>,
}

impl EndWaiters {
    pub(crate) const fn new() -> Self {
        Self { waiting: SpinLock::new(Vec::new()) }
    }

    pub(crate) fn register(&self, object: usize, event: Arc<dyn Notify>) {
        self.waiting.lock().push((object, event));
    }

    pub(crate) fn deregister<N: Notify>(&self, event: &Arc<N>) {
        self.waiting
            .lock()
            .retain(|(_, waiting)| !core::ptr::addr_eq(Arc::as_ptr(waiting), Arc::as_ptr(event)));
    }

    /// `actor` has ended: wakes its waiters.
    pub(crate) fn ended(&self, object: usize) {
        let mut waiting = self.waiting.lock();
        waiting.retain(|(of, event)| {
            if *of == object {
                event.notify();
            }
            *of != object
        });
    }

    /// The pool stopped: wakes every waiter.
    pub(crate) fn stopped(&self) {
        for (_, event) in self.waiting.lock().drain(..) {
            event.notify();
        }
    }
}

//! Waiting for an actor's end: the strands blocked in
//! [`Addr::wait_ended`](super::Addr::wait_ended), per pool.
//!
//! An actor *ends* once no turn of it will ever run again: its last turn
//! ran the `stopped` hook, or its pool discarded the turn. The schedule
//! word then reads exactly `CLOSED` (`schedule.rs`), which is what
//! `Addr::has_ended` checks. A dormant actor costs one word, so the
//! waiters are kept here, in its pool, not in the actor.
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
use crate::sync::Event;
use alloc::sync::Arc;
use alloc::vec::Vec;

/// The strands of one pool waiting for some actor's end.
pub(crate) struct EndWaiters {
    /// `(actor, event)`: the actor's cell address, and what to set.
    waiting: SpinLock<Vec<(usize, Arc<Event>)>>,
}

impl EndWaiters {
    pub(crate) const fn new() -> Self {
        Self { waiting: SpinLock::new(Vec::new()) }
    }

    pub(crate) fn register(&self, actor: usize, event: Arc<Event>) {
        self.waiting.lock().push((actor, event));
    }

    pub(crate) fn deregister(&self, event: &Arc<Event>) {
        self.waiting.lock().retain(|(_, waiting)| !Arc::ptr_eq(waiting, event));
    }

    /// `actor` has ended: wakes its waiters.
    pub(crate) fn ended(&self, actor: usize) {
        let mut waiting = self.waiting.lock();
        waiting.retain(|(of, event)| {
            if *of == actor {
                event.set();
            }
            *of != actor
        });
    }

    /// The pool stopped: wakes every waiter.
    pub(crate) fn stopped(&self) {
        for (_, event) in self.waiting.lock().drain(..) {
            event.set();
        }
    }
}

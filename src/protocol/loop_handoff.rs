//! The hand-off of an event loop: who drains its queue, and when a drainer
//! may leave.
//!
//! An event loop's queue is an actor's schedule word
//! ([`Schedule`](super::actor_schedule)) holding deferred operations
//! instead of messages. Whoever pushes an operation onto a dormant loop
//! becomes its *drainer*; everyone else only pushes and returns.
//!
//! # Protocol
//!
//! - **Defer** (anyone, including an operation the drainer is running):
//!   push the operation. If the loop was dormant, the pusher *won the
//!   drain* ([`Deferred::Drain`]): it drains now on its own stack (the
//!   borrowed-caller loop), or hands the drain to the loop's core as a task.
//!   If a drainer exists, the push is all ([`Deferred::Queued`]). A stopped
//!   loop refuses the operation ([`Deferred::Refused`]), which stays the
//!   pusher's.
//! - **Claim** (a caller with an operation in hand): move an idle loop's
//!   word straight to "scheduled, empty". The caller is the drainer
//!   without queuing anything: it runs its operation on the spot (no
//!   allocation), then drains what was deferred meanwhile. This is a
//!   defer and its drain with the operation kept out of the queue; its
//!   place in the total order is the claim.
//! - **Drain** (the drainer only): run the operations of its batch one at a
//!   time, oldest first. When the batch is empty, try to *leave*: a
//!   compare-exchange from "scheduled, empty" to "dormant", which fails if
//!   a push slipped in; then take whatever was pushed (one `fetch_and`),
//!   reversed into push order, and go on.
//! - **Pass on** (the drainer only): a drainer with a budget
//!   ([`Drained::Budget`]) stops running operations without leaving. It
//!   still owns the drain and its batch, and must call
//!   [`Handoff::drain`] again later (a loop with its own core requeues
//!   its drain task behind the core's other work).
//! - **Abandon** (the drainer, when an operation panicked, or the winner
//!   of a drain that can never run): stop the loop, so later pushes are
//!   refused, and take every operation not run, to drop them.
//!
//! # Why no operation is left behind (sketch)
//!
//! Every access to the word is a read-modify-write, so they are totally
//! ordered. An operation pushed before the drainer's leave is in the word
//! when the leave's compare-exchange reads it, so the exchange fails and
//! the drainer takes it. An operation pushed after a successful leave reads
//! a dormant word, so its pusher wins the drain and runs it. Hence when the
//! last drainer leaves, the queue is empty. At most one drainer exists,
//! because only the push that moves the word out of dormancy makes one,
//! and only its leave ends it (`protocol/actor_schedule.rs` has the full argument).
//!
//! Operations run one at a time and in the total order of their pushes:
//! each take returns everything pushed since the last, newest first, and
//! reversing it gives push order. An operation that defers onto its own
//! loop pushes behind the drainer's current batch, so it is *deferred*:
//! it runs after the operation that deferred it returns, never inside it
//! and never waiting for it (no re-entrancy, no deadlock).
//!
//! `tests/loom_event_loop.rs` checks this file with racing deferrers, a
//! re-entrant operation and a drainer that passes on.

use super::actor_schedule::{ActorPushed, Finished, Link, Schedule, reverse};
use core::cell::UnsafeCell;
use core::ptr::{self, NonNull};

/// What the pusher of an operation must do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use = "a deferrer that won the drain must drain"]
pub enum Deferred {
    /// A drainer exists and will run the operation.
    Queued,
    /// The loop was dormant: the pusher is its drainer now.
    Drain,
    /// The loop is stopped; the operation is still the pusher's.
    Refused,
}

/// Why a drain returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Drained {
    /// The queue was empty and the drainer left: the loop is dormant.
    Empty,
    /// The budget was spent with operations left: the caller still owns
    /// the drain and must drain again.
    Budget,
    /// The loop was stopped while draining; the drain is over.
    Stopped,
}

/// An event loop's queue and its drainer's batch.
pub struct Handoff {
    schedule: Schedule,
    /// Operations the drainer took and has not run yet, oldest first. Only
    /// the drainer touches it.
    batch: UnsafeCell<*mut Link>,
}

// SAFETY: the word is atomic; the batch is touched only by the one drainer,
// which the word makes unique and hands on with release and acquire.
unsafe impl Sync for Handoff {}
// SAFETY: the batch's operations are `Send` (the loop's contract).
unsafe impl Send for Handoff {}

impl Handoff {
    /// A dormant loop with an empty queue.
    pub fn new() -> Self {
        Self { schedule: Schedule::new(None), batch: UnsafeCell::new(ptr::null_mut()) }
    }

    /// Queues `op` behind every operation already queued.
    ///
    /// # Safety
    ///
    /// `op` is owned by the caller and in no chain. After `Queued` or
    /// `Drain` it belongs to the loop; after `Drain` the caller is the
    /// drainer.
    pub unsafe fn defer(&self, op: NonNull<Link>) -> Deferred {
        // SAFETY: forwarded contract.
        match unsafe { self.schedule.push(op) } {
            ActorPushed::Queued => Deferred::Queued,
            ActorPushed::Woke(_) => Deferred::Drain,
            ActorPushed::Closed => Deferred::Refused,
        }
    }

    /// Becomes the drainer of an idle loop without queuing anything: the
    /// caller may run its own operation at once, then must
    /// [`Handoff::drain`] what others queued meanwhile. Fails if the loop
    /// has a drainer or is stopped.
    pub fn claim(&self) -> bool {
        self.schedule.claim()
    }

    /// Runs queued operations with `run`, one at a time, until the queue is
    /// empty (and the drainer has left) or `budget` of them have run.
    ///
    /// # Safety
    ///
    /// The caller is the drainer: its [`Handoff::defer`] said `Drain`, or
    /// its last drain said `Budget`. `run` takes ownership of each
    /// operation it is given. If `run` unwinds, the caller still owns the
    /// drain and must [`Handoff::abandon`] the loop.
    pub unsafe fn drain(&self, budget: usize, mut run: impl FnMut(NonNull<Link>)) -> Drained {
        let batch = self.batch.get();
        let mut ran = 0;
        loop {
            // SAFETY: only the drainer (the caller) touches the batch.
            let next = unsafe { *batch };
            let Some(op) = NonNull::new(next) else {
                // Leave first: most often nothing was queued meanwhile, and
                // then one compare-exchange ends the drain.
                match self.schedule.finish(None) {
                    Finished::Dormant => return Drained::Empty,
                    Finished::More => {}
                    Finished::Stopping => {
                        self.schedule.end();
                        return Drained::Stopped;
                    }
                }
                // SAFETY: the chain was taken by the drainer, so it is ours
                // (not null: `finish` saw operations, and only the drainer
                // takes); only the drainer touches the batch.
                unsafe { *batch = reverse(self.schedule.take()) };
                continue;
            };
            if ran == budget {
                return Drained::Budget;
            }
            // SAFETY: the batch is the drainer's; the operation leaves it
            // before it runs, so a re-entrant defer never sees it.
            unsafe { *batch = Link::next(op) };
            ran += 1;
            run(op);
        }
    }

    /// Stops the loop: later defers are refused. Returns the operations not
    /// run, the drainer's batch and then those queued since (each chain
    /// linked through [`Link`]), for the caller to drop.
    ///
    /// # Safety
    ///
    /// The caller is the drainer, or the loop has no drainer and the caller
    /// holds the last reference to it.
    pub unsafe fn abandon(&self) -> [*mut Link; 2] {
        // SAFETY: only the drainer (the caller) touches the batch.
        let batch = unsafe { ptr::replace(self.batch.get(), ptr::null_mut()) };
        [batch, self.schedule.abandon()]
    }

    /// Whether the loop is stopped: it refuses operations.
    pub fn is_stopped(&self) -> bool {
        self.schedule.is_closed()
    }

    /// Whether the loop is dormant: no operation queued, no drainer.
    pub fn is_dormant(&self) -> bool {
        self.schedule.is_dormant()
    }
}

impl Default for Handoff {
    fn default() -> Self {
        Self::new()
    }
}

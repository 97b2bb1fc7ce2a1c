//! Event loops: objects whose every operation is a deferred closure, run
//! one at a time.
//!
//! A [`Loop<T>`] owns a state `T`. Nothing touches the state except the
//! operations given to [`Loop::defer`], and the loop runs those one after
//! another, so the state needs no lock and its code never races itself.
//!
//! # Where operations run
//!
//! - **A borrowed-caller loop** ([`Loop::new`], [`LoopGroup::object`]) has
//!   no core of its own. The caller that defers onto an idle loop becomes
//!   its *drainer*: it runs operations on its own stack (a strand's, a
//!   task's, or a thread's) until the queue is empty, then returns. A
//!   caller that defers while a drainer exists only queues its operation
//!   and returns at once; the drainer runs it.
//! - **A loop with a core of its own** ([`Loop::on_core`],
//!   [`LoopGroup::object_on`]) drains on that core: a defer onto the idle
//!   loop posts its drain there as a task, which runs at most
//!   [`OPS_PER_DRAIN`] operations before going to the back of the core's
//!   queue. If the core leaves the pool, the drain runs on another core
//!   until it comes back, as for pinned strands.
//!
//! # Guarantees
//!
//! - **One at a time, in order.** At most one drainer exists per loop, and
//!   it runs operations in the order their defers reached the loop, so
//!   operations deferred by one caller run in its order. The protocol and
//!   its proof sketch are in `protocol/loop_handoff.rs`, checked by
//!   `tests/loom_event_loop.rs`.
//! - **Nothing left behind.** When the last drainer leaves, the queue is
//!   empty: an operation deferred while it was leaving is either taken by
//!   it or makes its deferrer the next drainer.
//! - **Re-entry is deferred, never a deadlock.** An operation, or a
//!   callback it fires, that defers onto its own loop queues behind the
//!   operation running now and returns; it runs after that operation.
//! - **One-shot callbacks** ([`Callback`]). A [`Loop::callback`] keeps its
//!   object alive until it fires; a [`Loop::weak_callback`] holds a weak
//!   reference, upgraded just before it runs, and is skipped if the object
//!   is gone.
//! - **Objects outlive their handles until their callbacks have fired.** A
//!   public [`Handle`] wraps the object's shared implementation (its
//!   `Loop`). Dropping the last handle closes the object ([`Object::close`]
//!   runs on the loop), but pending [`Loop::callback`]s keep the
//!   implementation alive until each has fired exactly once.
//!   [`LoopGroup::join`] waits for every object of its group to get there.
//! - **Nothing accepted is lost silently.** A refused defer returns the
//!   operation in [`DeliveryError`]. An operation that panics stops its loop:
//!   later defers are refused, and what was queued is dropped (its
//!   callbacks released unfired); for a loop with a core, the dropped
//!   operations are counted in [`CoreStats::discarded`](crate::CoreStats).
//!
//! Operations should not block: a blocked drainer holds up every operation
//! behind it (a borrowed-caller drainer that blocks its strand keeps the
//! loop until the strand resumes).
//!
//! ```
//! use roving::event_loop::{Callback, LoopGroup, Loop, Object};
//! use std::sync::mpsc;
//!
//! #[derive(Default)]
//! struct Counter { total: u64 }
//! impl Object for Counter {}
//!
//! let group = LoopGroup::new();
//! let counter = group.object(Counter::default());
//! let (tx, rx) = mpsc::channel();
//! let done = Callback::new(move |total: u64| tx.send(total).unwrap());
//! // No drainer exists, so this caller runs both operations itself.
//! counter.defer(|c: &mut Counter, _: &Loop<Counter>| c.total += 41).unwrap();
//! counter
//!     .defer(move |c: &mut Counter, _: &Loop<Counter>| {
//!         c.total += 1;
//!         done.fire(c.total).unwrap();
//!     })
//!     .unwrap();
//! assert_eq!(rx.recv().unwrap(), 42);
//! drop(counter);
//! assert_eq!(group.unfinished(), 0);
//! ```

mod callback;
mod object;
mod op;

pub use crate::pool::{DeliveryError, PinError};
pub use callback::{Callback, Fired};

pub use object::{Handle, LoopGroup, Object};

use crate::atomics::unmodelled::{AtomicU64, Ordering::Relaxed};
use crate::pool::Pool;
use crate::protocol::actor_schedule::Link;
use crate::protocol::loop_handoff::{Deferred, Drained, Handoff};
use crate::task::closure::RunOnce;
use alloc::sync::{Arc, Weak};
use core::cell::UnsafeCell;
use core::fmt;
use core::ptr::NonNull;
use object::Lifecycle;
use op::Operation;

/// The most operations a loop with a core of its own runs before letting
/// the core's other work go first.
pub const OPS_PER_DRAIN: usize = 64;

/// The core a loop drains on.
struct Home {
    pool: Pool,
    core: usize,
}

impl Home {
    fn new(pool: &Pool, core: usize) -> Result<Self, PinError<()>> {
        pool.pool_ref().check_pin(core)?;
        Ok(Self { pool: pool.clone(), core })
    }
}

/// A loop's shared implementation.
struct Inner<T> {
    handoff: Handoff,
    state: UnsafeCell<T>,
    home: Option<Home>,
    life: Lifecycle<T>,
    /// The strand draining the loop on its own stack (its id; 0: none, or
    /// a drain task). Written only by the drainer; read to refuse a
    /// [`LoopGroup::join`] that would wait for this very drain.
    drainer: AtomicU64,
}

// SAFETY: the state is touched only by the loop's one drainer at a time,
// handed between drainers with release and acquire by the hand-off word;
// operations are `Send`.
unsafe impl<T: Send> Sync for Inner<T> {}

impl<T> Drop for Inner<T> {
    fn drop(&mut self) {
        // Only a stopped loop can hold operations with no drainer left.
        // SAFETY: the last reference is going, so no drainer exists.
        for chain in unsafe { self.handoff.abandon() } {
            // SAFETY: the chains are ours now, made for this loop.
            unsafe { op::drop_chain::<T>(chain, None) };
        }
    }
}

/// An event loop and its state: a counted reference to its shared
/// implementation. Clones name the same loop; operations capture one to
/// keep the loop alive while they are in flight.
///
/// A loop with a core of its own runs every operation there, one at a
/// time, whichever core deferred it:
///
/// ```
/// use roving::event_loop::Loop;
/// use roving::{Pool, platform::{self, host::Machine}};
///
/// Machine::new(2).unwrap().run(|| {
///     let pool = Pool::new().unwrap();
///     let counter = Loop::on_core(&pool, 1, 0u64).unwrap();
///     let total = pool.run(move || {
///         let (tx, rx) = roving::sync::channel::bounded(1).unwrap();
///         for n in 1..=10 {
///             counter.defer(move |total: &mut u64, _: &Loop<u64>| {
///                 assert_eq!(platform::current_core(), Some(1));
///                 *total += n;
///             }).unwrap();
///         }
///         // Deferred after the ten above, so it sees their sum.
///         counter.defer(move |total: &mut u64, _: &Loop<u64>| tx.try_send(*total).unwrap()).unwrap();
///         rx.recv().unwrap()
///     });
///     assert_eq!(total.unwrap(), 55);
/// }).unwrap();
/// ```
pub struct Loop<T> {
    inner: Arc<Inner<T>>,
}

/// A reference to a loop that does not keep it alive.
pub struct WeakLoop<T> {
    inner: Weak<Inner<T>>,
}

impl<T: Send + 'static> Loop<T> {
    /// A borrowed-caller loop over `state`, in no group.
    pub fn new(state: T) -> Self {
        Self::build(state, None, Lifecycle::standalone())
    }

    /// A loop over `state` that drains on `core` of `pool`, in no group.
    ///
    /// # Errors
    ///
    /// [`PinError`], with `state`, if `core` is not a core of `pool`.
    pub fn on_core(pool: &Pool, core: usize, state: T) -> Result<Self, PinError<T>> {
        let home = match Home::new(pool, core) {
            Ok(home) => home,
            Err(error) => return Err(error.carrying(state)),
        };
        Ok(Self::build(state, Some(home), Lifecycle::standalone()))
    }

    fn build(state: T, home: Option<Home>, life: Lifecycle<T>) -> Self {
        let inner = Inner {
            handoff: Handoff::new(),
            state: UnsafeCell::new(state),
            home,
            life,
            drainer: AtomicU64::new(0),
        };
        Self { inner: Arc::new(inner) }
    }

    fn from_inner(inner: Arc<Inner<T>>) -> Self {
        Self { inner }
    }

    fn inner(&self) -> &Arc<Inner<T>> {
        &self.inner
    }

    fn lifecycle(&self) -> &Lifecycle<T> {
        &self.inner.life
    }

    /// The state, for the drainer.
    fn state_ptr(&self) -> *mut T {
        self.inner.state.get()
    }

    /// Defers `op`: it runs on the loop, after every operation deferred
    /// before it, with the loop's state and the loop itself (to defer more,
    /// or make callbacks).
    ///
    /// On a borrowed-caller loop with no drainer, the caller becomes the
    /// drainer and returns once the queue is empty (having run `op`);
    /// otherwise this only queues `op`. From inside an operation of the
    /// same loop, it always only queues.
    ///
    /// # Errors
    ///
    /// [`DeliveryError`], carrying `op` back: the loop is stopped, its pool
    /// has stopped, it has a core and is deferred onto from another domain,
    /// or memory ran out.
    pub fn defer<F>(&self, op: F) -> Result<(), DeliveryError<F>>
    where
        F: FnOnce(&mut T, &Loop<T>) + Send + 'static,
    {
        self.defer_op(op)
    }

    fn defer_op<O: Operation<T>>(&self, op: O) -> Result<(), DeliveryError<O>> {
        match &self.inner.home {
            Some(home) => {
                let shared = home.pool.pool_ref();
                if shared.worker_core().is_none() && !shared.domain().is_current() {
                    return Err(DeliveryError::OtherDomain(op));
                }
            }
            None if self.inner.handoff.claim() => {
                // Idle: this caller is the drainer, and its operation runs
                // here without going through the queue.
                self.drain_after(
                    || {
                        // SAFETY: the claim made us the drainer, the only
                        // one touching the state now.
                        op.run(unsafe { &mut *self.state_ptr() }, self);
                        1
                    },
                    usize::MAX,
                );
                return Ok(());
            }
            None => {}
        }
        let node = op::new::<T, O>(op).map_err(DeliveryError::OutOfMemory)?;
        // SAFETY: the node is new, ours, and in no chain.
        match unsafe { self.inner.handoff.defer(node) } {
            Deferred::Queued => Ok(()),
            Deferred::Drain => match &self.inner.home {
                None => {
                    self.drain(usize::MAX);
                    Ok(())
                }
                Some(home) => self.start_drain(home, node),
            },
            // SAFETY: refused, so still ours; made above as an `O`.
            Deferred::Refused => Err(DeliveryError::Stopped(unsafe { op::take_back::<T, O>(node) })),
        }
    }

    /// Runs operations as the drainer, until the queue is empty or `budget`
    /// have run. If an operation panics, the loop is stopped.
    fn drain(&self, budget: usize) -> Drained {
        self.drain_after(|| 0, budget)
    }

    /// As [`Loop::drain`], running `first` before the queued operations;
    /// `first` returns how many operations it ran (for the trace).
    fn drain_after(&self, first: impl FnOnce() -> u32, budget: usize) -> Drained {
        struct StopOnUnwind<'a, T: Send + 'static>(&'a Loop<T>, u64);
        impl<T: Send + 'static> Drop for StopOnUnwind<'_, T> {
            fn drop(&mut self) {
                self.0.unmark_drainer(self.1);
                // SAFETY: still the drainer: the drain unwound.
                unsafe { self.0.abandon(None) };
            }
        }
        let me = crate::strand::current().map_or(0, |id| id.get());
        self.inner.drainer.store(me, Relaxed);
        let guard = StopOnUnwind(self, me);
        let mut _ran = first();
        // SAFETY: the caller is the drainer (it won the drain, or holds the
        // drain task); each operation is run once, by `op::run`, with this
        // loop, which made it.
        let drained = unsafe {
            self.inner.handoff.drain(budget, |node| {
                _ran += 1;
                op::run(node, Some(self))
            })
        };
        trace_here!(crate::trace::event::TraceEvent::LoopDrained { operations: _ran });
        core::mem::forget(guard);
        self.unmark_drainer(me);
        drained
    }

    /// Clears the drainer mark if it is still `me`'s. The drain has let
    /// go of the loop by now, so the next drainer may already have put its
    /// own mark there: that one stays. The mark reads `me` only while `me`
    /// drains (or is about to clear it here), so a strand never sees a
    /// stale mark of its own.
    fn unmark_drainer(&self, me: u64) {
        let _ = self.inner.drainer.compare_exchange(me, 0, Relaxed, Relaxed);
    }

    /// Posts the drain to the loop's core, for a defer that won it. If the
    /// pool refuses, the loop stops and `own` (that defer's operation)
    /// comes back.
    fn start_drain<O: Operation<T>>(&self, home: &Home, own: NonNull<Link>) -> Result<(), DeliveryError<O>> {
        let task = DrainTask { of: self.clone(), over: false };
        let Err(error) = home.pool.pool_ref().post_pinned(home.core, task) else {
            return Ok(());
        };
        let (mut task, refusal) = error.into_refusal();
        task.over = true;
        // SAFETY: we won the drain and its task never ran, so we are the
        // drainer; `own` is in the queue, made as an `O`.
        let op = unsafe {
            self.abandon(Some(own));
            op::take_back::<T, O>(own)
        };
        Err(refusal.map(|()| op))
    }

    /// Stops the loop and drops every operation not run, except `keep`,
    /// which stays the caller's. A loop with a core counts them as
    /// discarded.
    ///
    /// # Safety
    ///
    /// The caller is the drainer.
    unsafe fn abandon(&self, keep: Option<NonNull<Link>>) {
        // SAFETY: forwarded contract.
        let chains = unsafe { self.inner.handoff.abandon() };
        let mut dropped = 0;
        for chain in chains {
            // SAFETY: the chains are ours now, made for this loop.
            dropped += unsafe { op::drop_chain::<T>(chain, keep) };
        }
        if let Some(home) = &self.inner.home {
            home.pool.pool_ref().count_discarded(dropped as u64);
        }
    }

    /// A reference that does not keep the loop alive.
    pub fn downgrade(&self) -> WeakLoop<T> {
        WeakLoop { inner: Arc::downgrade(&self.inner) }
    }

    /// Whether the loop is stopped (an operation panicked, or its pool
    /// stopped with its drain pending): it refuses operations.
    pub fn is_stopped(&self) -> bool {
        self.inner.handoff.is_stopped()
    }

    /// Whether the loop is idle: nothing queued and no drainer.
    pub fn is_idle(&self) -> bool {
        self.inner.handoff.is_dormant()
    }

    /// The core the loop drains on, if it has one.
    pub fn core(&self) -> Option<usize> {
        self.inner.home.as_ref().map(|home| home.core)
    }
}

impl<T: Send + 'static> WeakLoop<T> {
    /// The loop, if it is still alive.
    pub fn upgrade(&self) -> Option<Loop<T>> {
        self.inner.upgrade().map(Loop::from_inner)
    }
}

impl<T: Send + 'static> Clone for Loop<T> {
    fn clone(&self) -> Self {
        Self { inner: self.inner.clone() }
    }
}

impl<T: Send + 'static> Clone for WeakLoop<T> {
    fn clone(&self) -> Self {
        Self { inner: self.inner.clone() }
    }
}

impl<T: Send + 'static> PartialEq for Loop<T> {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl<T: Send + 'static> Eq for Loop<T> {}

impl<T: Send + 'static> fmt::Debug for Loop<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Loop")
            .field("at", &Arc::as_ptr(&self.inner))
            .field("core", &self.core())
            .field("idle", &self.is_idle())
            .field("stopped", &self.is_stopped())
            .finish()
    }
}

impl<T: Send + 'static> fmt::Debug for WeakLoop<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WeakLoop").field("at", &self.inner.as_ptr()).finish()
    }
}

/// A loop's drain, as a task on its core.
struct DrainTask<T: Send + 'static> {
    of: Loop<T>,
    /// The drain ended properly; dropping the task does nothing more.
    over: bool,
}

impl<T: Send + 'static> RunOnce for DrainTask<T> {
    fn run_once(mut self) {
        loop {
            if self.of.drain(OPS_PER_DRAIN) != Drained::Budget {
                self.over = true;
                return;
            }
            // Let the core's other work go first; the batch stays with the
            // drain, which this task still holds.
            let pool = self.of.inner.home.as_ref().expect("a drain task's loop has a core").pool.clone();
            let me = pool.pool_ref().worker_core().expect("a drain task runs on a core of its pool");
            match pool.pool_ref().requeue(me, self, true) {
                Ok(()) => return,
                // Out of memory for the task: keep the core instead.
                Err(task) => self = task,
            }
        }
    }
}

impl<T: Send + 'static> Drop for DrainTask<T> {
    /// A drain dropped unrun (its pool discarded it at a shutdown): the
    /// loop stops, and what it had queued is dropped and counted.
    fn drop(&mut self) {
        if !self.over {
            // SAFETY: the task holds the drain.
            unsafe { self.of.abandon(None) };
        }
    }
}

//! Fork-join without a fibre per job: [`join`].
//!
//! `join(a, b)` keeps `b` as a job on the caller's stack, runs `a`, and
//! then runs `b` too unless another core took it meanwhile. Jobs are
//! offered to other cores only when some core is idle, and only the oldest
//! one a context holds (the biggest piece of a divide-and-conquer split),
//! so when every core is busy a join costs a few plain stores and one
//! relaxed load of the sleep counters: no atomic read-modify-write.
//!
//! # Where jobs live
//!
//! - Each context that joins (a core's own loop, or the strand resident on
//!   a fibre) has a [`JoinStack`] of its pending jobs, touched only by it.
//! - Each core has one slot ([`Slot`]). When the slot is empty and
//!   some core is idle, a joining context publishes its oldest private job
//!   there and announces it to the sleep protocol (`SleepState::new_jobs`, the
//!   same path the steal lists use, so no sleeper misses it).
//! - Idle cores look in a window of the slots as the last step of each
//!   round of their search for work, the window moving on every round
//!   (16 slots, so a pool of up to 16 cores is read whole each round, and
//!   a pool of up to 512 within the rounds before a core gets sleepy: a
//!   core woken for a job in a larger pool may fall asleep again before
//!   its window reaches the job, whose owner then runs it itself). They
//!   run what they take as an ordinary task.
//!
//! # Waiting
//!
//! An owner whose job was taken waits for it without suspending: it runs
//! jobs from other slots meanwhile (often pieces of its own job, published
//! by the thief), spins briefly, then waits for its doorbell with a short
//! deadline. The thief rings it (protocol in `crate::protocol::join_frame`).
//!
//! # Strands
//!
//! A strand's jobs are on its stack, and a thief writes the result there,
//! so a strand with any job pending stays resident on its fibre (it counts
//! in `Header::lent`, as scoped children do); its join stack is kept with
//! the fibre. On bare metal a strand that fails inside a join is not
//! unwound: before its stack is abandoned it takes back or waits out the
//! jobs it published, and ends the jobs it was running for others with its
//! failure, which their owners then raise.

use crate::atomics::unmodelled::Ordering::{Relaxed, SeqCst};
use crate::platform;
use crate::pool::current;
use crate::pool::seam::PoolRef;
use crate::protocol::join_frame::{DONE, RETURNED, WakeOwner};
use crate::strand::Failure;
use crate::strand::control::Header;
use crate::strand::scheduler;
use crate::task::{Action, Task};
use alloc::boxed::Box;
use core::cell::UnsafeCell;
use core::mem::ManuallyDrop;
use core::ptr::NonNull;

use crate::pool::fork_join::{Job, JoinStack, Popped, Settled, settle_published};

/// Runs `a` and `b`, possibly in parallel, and returns both results.
///
/// `a` runs on the calling core at once; `b` runs after it on the same
/// core, unless an idle core took it meanwhile. This is rayon's `join`,
/// for data-parallel code where a strand per piece would be too heavy:
/// no stack, control block or allocation per call.
///
/// Outside a pool, `a` runs and then `b`.
///
/// ```
/// use roving::{Pool, join, platform::host::Machine};
///
/// fn fib(n: u32) -> u64 {
///     if n < 2 { return n.into() }
///     let (a, b) = join(|| fib(n - 1), || fib(n - 2));
///     a + b
/// }
///
/// Machine::new(4).unwrap().run(|| {
///     assert_eq!(Pool::new().unwrap().run(|| fib(20)).unwrap(), 6765);
/// }).unwrap();
/// ```
///
/// # Waiting and blocking
///
/// A caller whose `b` was taken waits on its core, running other cores'
/// jobs meanwhile; it does not suspend. `b` may run on a core's own loop,
/// not in a strand, so a blocking call in `b` can return
/// [`WaitError::NotAStrand`](crate::strand::WaitError::NotAStrand). A
/// strand inside a join stays on its fibre until the join returns.
///
/// # Panics
///
/// If `a` or `b` panics, `join` waits for the other half's job to be
/// settled and then passes the panic on (the one from `a` if both did).
/// On bare metal, where panics do not unwind, a panic inside a strand
/// fails that strand; a job it was running for another owner fails that
/// owner with the same failure. A `b` that an idle core's loop (not a
/// strand) took fails the same way: its owner fails with its failure, and
/// the core's loop goes on.
#[inline]
pub fn join<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA,
    B: FnOnce() -> RB + Send,
    RB: Send,
{
    let Some(here) = Here::find() else { return (a(), b()) };
    let job = StackJob::new(b);
    let frame = job.frame();
    // SAFETY: `job` stays where it is until `Settle` pops it, on every
    // path out of this function (including unwinding from `a`).
    if !unsafe { here.push(frame) } {
        let ra = a();
        let rb = job.run_here();
        job.forget_finished();
        return (ra, rb);
    }
    here.offer();
    let settle = Settle { here: &here, frame };
    #[cfg(feature = "std")]
    let ra = match std::panic::catch_unwind(core::panic::AssertUnwindSafe(a)) {
        Ok(ra) => ra,
        Err(payload) => {
            // `a` failed: settle `b`, and if it failed too, count it.
            let ended = ManuallyDrop::new(settle).settle();
            let others = job.failures(ended);
            crate::strand::resume_counting(here.strand, payload, others)
        }
    };
    #[cfg(not(feature = "std"))]
    let ra = a();
    let ended = ManuallyDrop::new(settle).settle();
    let rb = job.finish(ended);
    job.forget_finished();
    (ra, rb)
}

/// Where a join runs: its pool, core and join stack.
struct Here {
    /// The pool, for the join's duration (see `find`).
    shared: PoolRef<'static>,
    core: usize,
    stack: NonNull<JoinStack>,
    /// The strand whose stack holds the jobs, if it is one.
    strand: Option<NonNull<Header>>,
}

impl Here {
    #[inline]
    fn find() -> Option<Self> {
        current::with(|worker| {
            let worker = worker?;
            // The pool outlives the work it runs, this join included.
            let shared = worker.pool();
            let strand = scheduler::running_on(shared, worker.core);
            let stack = match strand {
                // SAFETY: the running strand's header.
                Some(header) => unsafe { header.as_ref() }.fibre.joins.get(),
                None => shared.join_stack(worker.core),
            };
            NonNull::new(stack).map(|stack| Here { shared, core: worker.core, stack, strand })
        })
    }

    #[inline]
    fn shared(&self) -> PoolRef<'_> {
        self.shared
    }

    /// The context's join stack, for one short step that runs no user code.
    #[allow(clippy::mut_from_ref)]
    #[inline]
    fn stack(&self) -> &mut JoinStack {
        // SAFETY: only this context touches it, and no caller holds the
        // reference across user code (each use is one statement).
        unsafe { &mut *self.stack.as_ptr() }
    }

    /// Pushes a job; `false` if the stack is full.
    ///
    /// # Safety
    ///
    /// `frame` stays live and in place until it is settled.
    #[inline]
    unsafe fn push(&self, frame: NonNull<Job>) -> bool {
        let stack = self.stack();
        let first = stack.is_empty();
        if !stack.push(frame) {
            return false;
        }
        if first && let Some(strand) = self.strand {
            lend(strand, 1);
        }
        true
    }

    /// Publishes the oldest private job if the core's slot is free and
    /// some core is idle, or some join owner waits, to take it.
    #[inline]
    fn offer(&self) {
        let shared = self.shared();
        let slot = shared.join_slot(self.core);
        if slot.is_empty() && (shared.anyone_idle(self.core) || shared.join_helpers().load(Relaxed) > 0) {
            self.publish_oldest();
        }
    }

    #[cold]
    fn publish_oldest(&self) {
        let shared = self.shared();
        let slot = shared.join_slot(self.core);
        let Some(oldest) = self.stack().oldest_private() else { return };
        // SAFETY: a pushed job is live until settled.
        unsafe { oldest.as_ref() }.mark_published(self.core);
        // SAFETY: as above; it is settled only after it is taken back or ended.
        if unsafe { slot.publish(oldest) } {
            self.stack().published_oldest();
            trace_point!(shared, self.core, crate::trace::event::TraceEvent::JoinPublished);
            shared.announce_for(self.core, 1);
        }
    }
}

/// Settles the newest job: pops it and, if it was published, takes it
/// back or waits until its thief ends it. Dropped only while unwinding
/// from `a`.
struct Settle<'a> {
    here: &'a Here,
    frame: NonNull<Job>,
}

impl Settle<'_> {
    #[inline]
    fn settle(&self) -> Settled {
        let here = self.here;
        let settled = match here.stack().pop(self.frame) {
            Popped::Private => Settled::Unrun,
            Popped::Published => settle_published(here.shared(), self.frame),
        };
        if here.stack().is_empty()
            && let Some(strand) = here.strand
        {
            lend(strand, -1);
        }
        settled
    }
}

/// A strand's stack is lent to its jobs from its first push to its last
/// pop (see `Header::lent`).
#[cold]
fn lend(strand: NonNull<Header>, change: i32) {
    // SAFETY: the running strand's header.
    let lent = &unsafe { strand.as_ref() }.lent;
    if change > 0 {
        lent.fetch_add(1, SeqCst);
    } else {
        lent.fetch_sub(1, SeqCst);
    }
}

impl Drop for Settle<'_> {
    fn drop(&mut self) {
        // Unwinding from `a`: the job may be running elsewhere and writing
        // to this stack frame, which must outlive it.
        self.settle();
    }
}

/// What happened to `b` when a thief ran it.
enum Outcome<R> {
    Pending,
    Value(R),
    #[cfg(feature = "std")]
    Panicked(Box<dyn core::any::Any + Send>),
    Failed(Box<Failure>),
}

/// A job on its owner's stack: the frame, then `b`, then its outcome.
#[repr(C)]
struct StackJob<B, R> {
    frame: Job,
    b: UnsafeCell<Option<B>>,
    outcome: UnsafeCell<Outcome<R>>,
}

impl<B: FnOnce() -> R + Send, R: Send> StackJob<B, R> {
    fn new(b: B) -> Self {
        Self {
            frame: Job::new(Self::run_taken, Self::fail_taken, Self::failures_taken),
            b: UnsafeCell::new(Some(b)),
            outcome: UnsafeCell::new(Outcome::Pending),
        }
    }

    fn frame(&self) -> NonNull<Job> {
        NonNull::from(&self.frame)
    }

    /// Runs `b` here (it was never taken, or was handed back).
    fn run_here(&self) -> R {
        // SAFETY: settled and unrun: only the owner touches `b` now.
        let b = unsafe { (*self.b.get()).take() }.expect("b runs once");
        b()
    }

    /// Lets go of a job whose result was taken: `b` has run (here or on a
    /// thief) and its outcome was moved out, so nothing in it needs
    /// dropping. Forgetting it spares every join the drop glue's checks
    /// (or a call to it, when the compiler does not inline it). A join
    /// that unwinds drops its job as usual.
    #[inline(always)]
    fn forget_finished(self) {
        // SAFETY: the job is its owner's alone again: settled, and its
        // result taken.
        let (unrun, outcome) = unsafe { (&*self.b.get(), &*self.outcome.get()) };
        debug_assert!(unrun.is_none() && matches!(outcome, Outcome::Pending), "a finished job holds nothing");
        core::mem::forget(self);
    }

    /// `b`'s result, whichever way the job was settled.
    fn finish(&self, settled: Settled) -> R {
        if let Settled::Unrun = settled {
            return self.run_here();
        }
        // SAFETY: ended with `DONE`: the thief stored the outcome and let go.
        match core::mem::replace(unsafe { &mut *self.outcome.get() }, Outcome::Pending) {
            Outcome::Value(value) => value,
            #[cfg(feature = "std")]
            Outcome::Panicked(payload) => std::panic::resume_unwind(payload),
            Outcome::Failed(failure) => crate::strand::raise(*failure),
            Outcome::Pending => unreachable!("a job ended DONE has its outcome"),
        }
    }

    /// How many failures `b`'s outcome holds (dropping it): for a join
    /// whose `a` failed. An unrun `b` is dropped unrun.
    #[cfg(feature = "std")]
    fn failures(&self, settled: Settled) -> usize {
        match settled {
            Settled::Unrun => 0,
            // SAFETY: our own job, ended with `DONE`.
            Settled::Done => unsafe { Self::failures_taken(self.frame()) },
        }
    }

    /// How many failures a job that ended `DONE` holds (dropping its
    /// outcome).
    ///
    /// # Safety
    ///
    /// `frame` is the frame of a `StackJob<B, R>` that ended with `DONE`:
    /// the thief stored the outcome and let go; the caller owns the job.
    unsafe fn failures_taken(frame: NonNull<Job>) -> usize {
        let job = frame.cast::<Self>();
        // SAFETY: per the contract, the outcome is the caller's.
        match core::mem::replace(unsafe { &mut *(*job.as_ptr()).outcome.get() }, Outcome::Pending) {
            #[cfg(feature = "std")]
            Outcome::Panicked(payload) => crate::strand::failures_in(&*payload),
            Outcome::Failed(failure) => 1 + failure.others(),
            Outcome::Value(_) | Outcome::Pending => 0,
        }
    }

    /// The task a thief runs: `b` with its outcome stored, or (when
    /// discarding) the job handed back to its owner.
    ///
    /// # Safety
    ///
    /// `task` is the frame of a `StackJob<B, R>`, taken from its slot.
    unsafe fn run_taken(
        task: NonNull<Task>,
        action: Action,
        _cache: NonNull<crate::task::storage::BlockCache>,
    ) {
        let frame = task.cast::<Job>();
        if action == Action::Discard {
            // SAFETY: taken, so the end is ours.
            ring_owner(unsafe { Job::end(frame, RETURNED) });
            return;
        }
        let job = task.cast::<Self>();
        // SAFETY: taken: `b` is the thief's until the end.
        let b = unsafe { (*(*job.as_ptr()).b.get()).take() }.expect("a job runs once");
        let thief = Here::find();
        if let Some(thief) = &thief {
            // SAFETY: the frame is live until we end it.
            thief.stack().push_stolen(unsafe { frame.as_ref() });
        }
        // On the host a panic in `b` unwinds into `run_caught`.
        #[cfg(feature = "std")]
        let outcome = run_caught(b);
        #[cfg(not(feature = "std"))]
        let outcome = match &thief {
            // A core's loop, not a strand: a panic in `b` on bare metal
            // fails the job (listed as being run, above), not the core.
            Some(loop_thief) if loop_thief.strand.is_none() => {
                crate::pool::contain::running_join_half(loop_thief.core, || run_caught(b))
            }
            _ => run_caught(b),
        };
        if let Some(thief) = &thief {
            // SAFETY: as above.
            thief.stack().pop_stolen(unsafe { frame.as_ref() });
        }
        // SAFETY: as above; the owner reads it only after the end.
        unsafe { *(*job.as_ptr()).outcome.get() = outcome };
        // SAFETY: taken, and the outcome is stored.
        ring_owner(unsafe { Job::end(frame, DONE) });
    }

    /// Ends a job whose thief failed while running it.
    ///
    /// # Safety
    ///
    /// `frame` is the frame of a `StackJob<B, R>` the failing thief took.
    unsafe fn fail_taken(frame: NonNull<Job>, failure: &Failure) {
        let job = frame.cast::<Self>();
        // SAFETY: the job is the thief's until the end; `b` was moved onto
        // the stack being abandoned.
        unsafe { *(*job.as_ptr()).outcome.get() = Outcome::Failed(Box::new(failure.clone())) };
        // SAFETY: the outcome is stored.
        ring_owner(unsafe { Job::end(frame, DONE) });
    }
}

fn run_caught<R>(b: impl FnOnce() -> R) -> Outcome<R> {
    #[cfg(feature = "std")]
    return match std::panic::catch_unwind(core::panic::AssertUnwindSafe(b)) {
        Ok(value) => Outcome::Value(value),
        Err(payload) => Outcome::Panicked(payload),
    };
    #[cfg(not(feature = "std"))]
    Outcome::Value(b())
}

fn ring_owner(ring: WakeOwner) {
    if let WakeOwner(Some(core)) = ring {
        let _ = platform::wake(core);
    }
}

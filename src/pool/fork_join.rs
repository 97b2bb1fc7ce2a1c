//! The pool's side of fork-join (`crate::join`): the job type, each core's
//! slot for a published job, each context's stack of pending jobs, and how
//! an idle core takes a published job. The protocol by which a job
//! changes hands is `crate::protocol::join_frame`.
//!
//! # A context's job stack
//!
//! The jobs of one context (a core's own loop, or the strand resident on a
//! fibre), newest on top, as `join` calls nest. Only that context touches
//! it, so it is plain memory: pushing and popping a job costs no atomic.
//!
//! Entries below `bottom` were published (the oldest first, one at a
//! time); entries from `bottom` to `top` are private. Joins nest, so the
//! job popped is always the newest, and it was published exactly when it
//! lies below `bottom`.

use super::failure::Failure;
use super::seam::PoolRef;
use super::shared::Shared;
use crate::atomics::unmodelled::{AtomicUsize, Ordering::Relaxed};
use crate::platform::instant::Instant;
use crate::platform::{self, Depth};
use crate::protocol::join_frame::{DONE, RETURNED};
use crate::task::{Action, Task};
use core::ptr::{self, NonNull};
use core::time::Duration;

/// A fork-join job: the join protocol's frame, whose thief passes on a
/// strand's failure.
pub(crate) type Job = crate::protocol::join_frame::Frame<Failure>;
/// A core's slot for a published job.
pub(crate) type Slot = crate::protocol::join_frame::JobSlot<Failure>;

/// Nesting depth a context can offer jobs at; deeper joins run `b` inline.
pub(crate) const DEPTH: usize = 64;

pub(crate) struct JoinStack {
    jobs: [*const Job; DEPTH],
    top: u32,
    bottom: u32,
    /// Jobs this context took from slots and is running, newest first,
    /// linked through `Job::next_stolen`.
    stolen: *const Job,
}

/// Whether the job just popped was ever published.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Popped {
    Private,
    Published,
}

impl JoinStack {
    pub(crate) const fn new() -> Self {
        Self { jobs: [ptr::null(); DEPTH], top: 0, bottom: 0, stolen: ptr::null() }
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.top == 0
    }

    /// Pushes `job`; `false` if the stack is full.
    #[inline]
    pub(crate) fn push(&mut self, job: NonNull<Job>) -> bool {
        let Some(entry) = self.jobs.get_mut(self.top as usize) else { return false };
        *entry = job.as_ptr();
        self.top += 1;
        true
    }

    /// The oldest job not yet published.
    pub(crate) fn oldest_private(&self) -> Option<NonNull<Job>> {
        if self.bottom < self.top { NonNull::new(self.jobs[self.bottom as usize].cast_mut()) } else { None }
    }

    /// The job `oldest_private` gave went into a slot.
    pub(crate) fn published_oldest(&mut self) {
        debug_assert!(self.bottom < self.top);
        self.bottom += 1;
    }

    /// Pops the newest job, which is `job`.
    #[inline]
    pub(crate) fn pop(&mut self, job: NonNull<Job>) -> Popped {
        debug_assert!(self.top > 0 && ptr::eq(self.jobs[self.top as usize - 1], job.as_ptr()));
        self.top -= 1;
        if self.top >= self.bottom {
            Popped::Private
        } else {
            self.bottom = self.top;
            Popped::Published
        }
    }

    /// Takes out every published job, leaving the stack empty: what a
    /// failing strand must settle before its stack goes. Returns a copy,
    /// so settling (which may run other jobs, which join) does not hold a
    /// reference into the stack.
    pub(crate) fn take_published(&mut self) -> ([*const Job; DEPTH], usize) {
        let published = (self.jobs, self.bottom as usize);
        self.top = 0;
        self.bottom = 0;
        published
    }

    /// Lists `job` as being run by this context.
    pub(crate) fn push_stolen(&mut self, job: &Job) {
        job.next_stolen.set(self.stolen);
        self.stolen = job;
    }

    /// `job` ended: unlists it (it is the newest).
    pub(crate) fn pop_stolen(&mut self, job: &Job) {
        debug_assert!(ptr::eq(self.stolen, job));
        self.stolen = job.next_stolen.get();
    }

    /// Takes the list of jobs being run, newest first.
    pub(crate) fn take_stolen(&mut self) -> *const Job {
        core::mem::replace(&mut self.stolen, ptr::null())
    }
}

/// The join slots an idle core reads in one search round: a window that
/// moves on by its width every round, so a pool of up to this many cores
/// is read whole each round, and a larger one within `cores / JOIN_WINDOW`
/// rounds (every slot of a 512-core pool within the 32 rounds before a
/// core gets sleepy). Reading every slot each round made a core's way to
/// sleep grow by 14 instructions a round for each core of the pool.
pub(super) const JOIN_WINDOW: usize = super::lifo_watch::WINDOW;

impl Shared {
    /// Takes a published job from one of [`JOIN_WINDOW`] slots from
    /// `*window` on (wrapped to the pool's slots), other than `me`'s, and
    /// moves `*window` on past them: the look of an idle core, or of a
    /// join owner helping while its thief runs, with the window it keeps
    /// between looks.
    pub(crate) fn take_published_job_in_window(&self, me: usize, window: &mut u32) -> Option<NonNull<Job>> {
        let cores = self.slots;
        // In range but for a helper's first look (a division is dear in
        // an idle round).
        let first = match *window as usize {
            first if first < cores => first,
            first => first % cores,
        };
        let width = JOIN_WINDOW.min(cores);
        let next = first + width;
        *window = if next >= cores { next - cores } else { next } as u32;
        let mut core = first;
        for _ in 0..width {
            if core != me
                && let Some(job) = self.cores[core].join_slot.take()
            {
                return Some(job);
            }
            core += 1;
            if core == cores {
                core = 0;
            }
        }
        None
    }

    /// Whether any core's slot holds a job.
    pub(crate) fn any_job_published(&self) -> bool {
        self.cores.iter().any(|core| !core.join_slot.is_empty())
    }
}

/// A thief's view of a job taken from a slot, as the task it runs.
pub(crate) fn as_task(job: NonNull<Job>) -> NonNull<Task> {
    job.cast()
}

/// How a settled job stands.
pub(crate) enum Settled {
    /// Never taken (or handed back): `b` is still in it, to run here.
    Unrun,
    /// A thief ran it; the result is stored.
    Done,
}

/// Takes a published job back, or waits until its thief ends it.
#[cold]
pub(crate) fn settle_published(shared: PoolRef<'_>, frame: NonNull<Job>) -> Settled {
    // SAFETY: ours until settled.
    let published_in = unsafe { frame.as_ref() }.published_in.get() as usize;
    if shared.join_slot(published_in).take_back(frame) {
        trace_here!(crate::trace::event::TraceEvent::JoinTakenBack);
        return Settled::Unrun;
    }
    // SAFETY: as above.
    match wait_for(shared, unsafe { frame.as_ref() }) {
        RETURNED => Settled::Unrun,
        _ => Settled::Done,
    }
}

/// Spins before an owner starts waiting on its doorbell.
const SPINS: u32 = 64;
/// How long an owner waits on its doorbell before looking again.
const NAP: Duration = Duration::from_micros(50);

/// Waits until a taken job ends, running other slots' jobs meanwhile.
/// Returns the end (`DONE` or `RETURNED`).
fn wait_for(shared: PoolRef<'_>, frame: &Job) -> u32 {
    /// Counts the owner among `join_helpers` while it waits.
    struct Helping<'a>(&'a AtomicUsize);
    impl Drop for Helping<'_> {
        fn drop(&mut self) {
            self.0.fetch_sub(1, Relaxed);
        }
    }
    shared.join_helpers().fetch_add(1, Relaxed);
    let _helping = Helping(shared.join_helpers());
    let mut idle = 0;
    // The slots it looks at, a window at a time, from the core after its
    // own: its spins before it naps cover a thousand cores' slots.
    let mut window = platform::current_core().map_or(0, |core| core as u32 + 1);
    loop {
        let state = frame.state();
        if state == DONE || state == RETURNED {
            return state;
        }
        // A strand that blocked in a helped job may have moved.
        let core = platform::current_core().unwrap_or(0);
        if let Some(job) = shared.take_published_job(core, &mut window) {
            // SAFETY: taken from its slot, so its end is ours.
            unsafe { Job::call(job, Action::Run) };
            idle = 0;
        } else if idle < SPINS {
            idle += 1;
            core::hint::spin_loop();
        } else if let Some(end) = frame.wait_on(core) {
            return end;
        } else {
            platform::wait_for_event(Depth::Light, Some(Instant::now() + NAP));
        }
    }
}

/// Settles the jobs of a context whose stack is about to be abandoned (a
/// strand failing on bare metal, which is not unwound): jobs it was
/// running for others end with `failure`, and jobs it published are taken
/// back or waited out, in `pool` if it runs in one. Returns how many
/// failures the jobs it waited out ended with (a `b` that failed too), for
/// `failure` to count.
///
/// # Safety
///
/// `stack` is the calling context's own join stack, and the jobs on it
/// live on the stack being abandoned, which is still there.
pub(crate) unsafe fn abandon_jobs(
    stack: *mut JoinStack,
    pool: Option<PoolRef<'_>>,
    failure: &Failure,
) -> usize {
    // SAFETY: the caller's own stack; each use is one statement, so no
    // reference is held while settling runs other jobs, which join.
    let stack = || unsafe { &mut *stack };
    let mut stolen = stack().take_stolen();
    // SAFETY: listed jobs are live until ended.
    while let Some(job) = unsafe { stolen.as_ref() } {
        stolen = job.next_stolen.get();
        // SAFETY: we took it and never ended it.
        unsafe { (job.fail)(NonNull::from(job), failure) };
    }
    let (published, count) = stack().take_published();
    let mut others = 0;
    if let Some(pool) = pool {
        for job in published[..count].iter().filter_map(|job| NonNull::new(job.cast_mut())) {
            if let Settled::Done = settle_published(pool, job) {
                // SAFETY: ended `DONE`, and ours: it is on our stack.
                others += unsafe { (job.as_ref().failures)(job) };
            }
        }
    }
    others
}

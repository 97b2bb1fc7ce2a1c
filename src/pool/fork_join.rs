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
use super::shared::Shared;
use crate::task::Task;
use core::ptr::{self, NonNull};

/// A fork-join job: the join protocol's frame, whose thief passes on a
/// strand's failure.
pub(crate) type Frame = crate::protocol::join_frame::Frame<Failure>;
/// A core's slot for a published job.
pub(crate) type Slot = crate::protocol::join_frame::Slot<Failure>;

/// Nesting depth a context can offer jobs at; deeper joins run `b` inline.
pub(crate) const DEPTH: usize = 64;

pub(crate) struct JoinStack {
    jobs: [*const Frame; DEPTH],
    top: u32,
    bottom: u32,
    /// Jobs this context took from slots and is running, newest first,
    /// linked through `Frame::next_stolen`.
    stolen: *const Frame,
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
    pub(crate) fn push(&mut self, job: NonNull<Frame>) -> bool {
        let Some(entry) = self.jobs.get_mut(self.top as usize) else { return false };
        *entry = job.as_ptr();
        self.top += 1;
        true
    }

    /// The oldest job not yet published.
    pub(crate) fn oldest_private(&self) -> Option<NonNull<Frame>> {
        if self.bottom < self.top { NonNull::new(self.jobs[self.bottom as usize].cast_mut()) } else { None }
    }

    /// The job `oldest_private` gave went into a slot.
    pub(crate) fn published_oldest(&mut self) {
        debug_assert!(self.bottom < self.top);
        self.bottom += 1;
    }

    /// Pops the newest job, which is `job`.
    #[inline]
    pub(crate) fn pop(&mut self, job: NonNull<Frame>) -> Popped {
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
    pub(crate) fn take_published(&mut self) -> ([*const Frame; DEPTH], usize) {
        let published = (self.jobs, self.bottom as usize);
        self.top = 0;
        self.bottom = 0;
        published
    }

    /// Lists `job` as being run by this context.
    pub(crate) fn push_stolen(&mut self, job: &Frame) {
        job.next_stolen.set(self.stolen);
        self.stolen = job;
    }

    /// `job` ended: unlists it (it is the newest).
    pub(crate) fn pop_stolen(&mut self, job: &Frame) {
        debug_assert!(ptr::eq(self.stolen, job));
        self.stolen = job.next_stolen.get();
    }

    /// Takes the list of jobs being run, newest first.
    pub(crate) fn take_stolen(&mut self) -> *const Frame {
        core::mem::replace(&mut self.stolen, ptr::null())
    }
}

impl Shared {
    /// Takes a published job from some core's slot, starting after `me`'s.
    pub(crate) fn take_published_job(&self, me: usize) -> Option<NonNull<Frame>> {
        let cores = self.slots;
        (1..=cores).find_map(|offset| self.cores[(me + offset) % cores].join_slot.take())
    }

    /// Whether any core's slot holds a job.
    pub(crate) fn any_job_published(&self) -> bool {
        self.cores.iter().any(|core| !core.join_slot.is_empty())
    }
}

/// A thief's view of a job taken from a slot, as the task it runs.
pub(crate) fn as_task(job: NonNull<Frame>) -> NonNull<Task> {
    job.cast()
}

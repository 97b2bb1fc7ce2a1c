//! The jobs of one context (a core's own loop, or the strand resident on a
//! fibre), newest on top, as `join` calls nest. Only that context touches
//! it, so it is plain memory: pushing and popping a job costs no atomic.
//!
//! Entries below `bottom` were published (the oldest first, one at a
//! time); entries from `bottom` to `top` are private. Joins nest, so the
//! job popped is always the newest, and it was published exactly when it
//! lies below `bottom`.

use super::Frame;
use core::ptr::{self, NonNull};

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

//! A core's own lists (its pinned queue and its private queue), opened as
//! a section of `crate::protocol::own_side` before the core touches them.
//!
//! The core's loop holds its section open between tasks and lets it go
//! around what runs user code (a task, the poller) and around its sleep.
//! Code inside a task or strand that queues on the core opens its own.
//! So while a core runs user code, and only then, its lists may be taken
//! by the core that takes it out of the pool when it stops answering
//! (`super::silent`).
//!
//! A core that finds itself taken out when it opens a section came back
//! after it was given up: its lists, its place in the pool and the strand
//! it ran are not its own any more. It parks for good, touching nothing
//! of the pool (`park_taken_out`).

use super::shared::Shared;
use crate::platform::{self, Depth};
use crate::protocol::own_side::OwnSide;

/// An open section of a core's own lists; closes it when dropped, if it
/// opened it.
#[must_use = "the section closes when this is dropped"]
pub(crate) struct OwnLists<'a> {
    word: &'a OwnSide,
    opened: bool,
}

impl Shared {
    /// Opens core `me`'s own-lists section, or finds one open around the
    /// caller. Never returns on a core taken out of the pool.
    ///
    /// `me` is the calling core, which runs this pool.
    #[inline(always)]
    pub(crate) fn own_lists(&self, me: usize) -> OwnLists<'_> {
        // SAFETY: `me` is the calling core, of this pool (contract).
        let word = &unsafe { self.own_core(me) }.turn.own_side;
        if word.is_open() {
            return OwnLists { word, opened: false };
        }
        if !word.open() {
            park_taken_out(me);
        }
        OwnLists { word, opened: true }
    }

    /// Runs `f` (user code: a task, the poller) on core `me` with the
    /// section its loop holds open closed, and opens it again after. Never
    /// returns on a core taken out of the pool meanwhile.
    #[inline(always)]
    pub(crate) fn own_lists_closed_during<R>(&self, me: usize, f: impl FnOnce() -> R) -> R {
        // SAFETY: `me` is the calling core, of this pool (contract).
        let word = &unsafe { self.own_core(me) }.turn.own_side;
        word.leave();
        let result = f();
        if !word.is_open() && !word.open() {
            park_taken_out(me);
        }
        result
    }
}

impl Drop for OwnLists<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        if self.opened {
            self.word.leave();
        }
    }
}

/// Parks core `me`, taken out of its pool, for good (module docs).
#[cold]
pub(crate) fn park_taken_out(me: usize) -> ! {
    crate::diag::warn(format_args!(
        "core {me} answers again, but it was taken out of its pool for not answering; it stays parked"
    ));
    loop {
        platform::wait_for_event(Depth::Deep, None);
    }
}

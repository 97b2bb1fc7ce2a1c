//! Strand priorities: three levels, which matter in pools with a time
//! slice (`crate::preempt`; `docs/preemption.md` says what each level
//! gets and how long a lower one can wait).

use super::WaitError;
use super::scheduler;
use crate::atomics::unmodelled::Ordering::Relaxed;

/// A strand's priority level (default [`Priority::Normal`]).
///
/// In a pool with a [time slice](crate::Config::time_slice):
/// - a woken strand of a higher level than the strand running on its core
///   preempts that strand at once (at its next point outside roving's
///   code);
/// - preempted strands take their turns by level, four turns in seven for
///   [`High`](Priority::High), two for [`Normal`](Priority::Normal) and one
///   for [`Low`](Priority::Low) while every level has turns waiting, so no
///   level starves: a waiting level gets a turn within 7 turns of the pool.
///
/// A cooperative pool ignores priorities: nothing there is preempted.
/// Strands that share a fibre run in the order they became runnable,
/// whatever their levels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum Priority {
    /// Background work: never preempts another strand when it wakes.
    Low = 0,
    /// The default.
    #[default]
    Normal = 1,
    /// Latency-bound work, such as a strand an interrupt handler wakes.
    High = 2,
}

// The pool's turns of preempted strands keep one queue per level.
const _: () = assert!(Priority::LEVELS == crate::pool::preempted::LEVELS);

impl Priority {
    /// How many levels there are.
    pub const LEVELS: usize = 3;

    /// The level stored as `raw` (as [`Priority`] `as u8`).
    pub(crate) fn from_raw(raw: u8) -> Self {
        match raw {
            0 => Self::Low,
            1 => Self::Normal,
            _ => Self::High,
        }
    }
}

/// Sets the running strand's priority; returns the one it had. A strand
/// spawned starts at [`Priority::Normal`], whatever its parent's.
///
/// # Errors
///
/// [`WaitError::NotAStrand`] outside strands.
pub fn set_priority(priority: Priority) -> Result<Priority, WaitError> {
    let me = scheduler::current().ok_or(WaitError::NotAStrand)?;
    // SAFETY: the running strand's header is live; only it writes its level.
    let before = unsafe { me.as_ref() }.priority.swap(priority as u8, Relaxed);
    Ok(Priority::from_raw(before))
}

/// The running strand's priority; `None` outside strands.
pub fn priority() -> Option<Priority> {
    // SAFETY: the running strand's header is live.
    scheduler::current().map(|me| Priority::from_raw(unsafe { me.as_ref() }.priority.load(Relaxed)))
}

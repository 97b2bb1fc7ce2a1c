//! Strand priorities: three levels, which matter in pools with a time
//! slice (`crate::preempt`; `docs/preemption.md` says what each level
//! gets and how long a lower one can wait).

use super::scheduler;
use super::{Priority, WaitError};
use crate::atomics::unmodelled::Ordering::Relaxed;

// The pool's turns of preempted strands keep one queue per level.
const _: () = assert!(Priority::LEVELS == crate::pool::preempted::LEVELS);

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
